package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy listens on 127.0.0.1 and forwards each connection to a target
// address. Create it with New; the zero value is not usable. Its methods
// are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu        sync.Mutex
	links     map[*link]struct{}
	resumed   chan struct{} // non-nil while stalled; closed by Resume
	blackHole bool
	closed    bool
	accepted  int
}

// link is one client connection and, unless black-holed, its connection to
// the target.
type link struct {
	done chan struct{} // closed when the link ends

	mu       sync.Mutex
	client   *net.TCPConn
	upstream *net.TCPConn // nil while dialing and when black-holed
	ended    bool
}

// attach records the connection to the target; it reports false, closing
// upstream, when the link has already ended.
func (l *link) attach(upstream *net.TCPConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		closeConn(upstream, true)
		return false
	}
	l.upstream = upstream
	return true
}

// end closes both connections, with a reset (RST) if reset is true, and
// wakes the goroutines waiting on done. Only the first call acts.
func (l *link) end(reset bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended = true
	close(l.done)
	closeConn(l.client, reset)
	if l.upstream != nil {
		closeConn(l.upstream, reset)
	}
}

// closeConn closes c, with a reset if reset is true.
func closeConn(c *net.TCPConn, reset bool) {
	if reset {
		_ = c.SetLinger(0)
	}
	_ = c.Close()
}

// New starts a proxy on a free port of 127.0.0.1 forwarding to target
// (host:port). Stop it with Close.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listening: %w", err)
	}
	p := &Proxy{target: target, ln: ln, links: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's address, 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted returns how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Open returns how many connections are open now.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// CutAll resets every open connection, on the client's side and on the
// target's. New connections are served as before.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.end(true)
	}
}

// Stall stops forwarding bytes, in both directions, on every connection,
// open or new, while keeping them open, until Resume.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
	}
}

// BlackHole makes the proxy accept new connections and never forward them,
// until Resume.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackHole = true
}

// Resume ends Stall and BlackHole: stalled connections flow again and new
// connections are forwarded. Connections accepted while black-holed stay
// black-holed.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
	}
	p.blackHole = false
}

// Close stops listening, resets every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l := &link{client: conn.(*net.TCPConn), done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.end(true)
			return
		}
		p.accepted++
		p.links[l] = struct{}{}
		blackHole := p.blackHole
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l, blackHole)
	}
}

// serve forwards one connection until either side ends it or it is cut.
func (p *Proxy) serve(l *link, blackHole bool) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	if blackHole {
		<-l.done
		return
	}
	conn, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		l.end(true) // the client sees its connection reset
		return
	}
	if !l.attach(conn.(*net.TCPConn)) {
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(l, l.upstream, l.client) }()
	go func() { defer both.Done(); p.pipe(l, l.client, l.upstream) }()
	both.Wait()
	l.end(false)
}

// pipe copies src to dst, waiting while the proxy is stalled. When src
// ends cleanly it half-closes dst, so the other direction can finish.
func (p *Proxy) pipe(l *link, dst, src *net.TCPConn) {
	buf := make([]byte, 32<<10)
	for {
		if !p.waitFlowing(l) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitFlowing(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				l.end(true)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			_ = dst.CloseWrite()
			return
		}
		if err != nil {
			l.end(true)
			return
		}
	}
}

// waitFlowing blocks while the proxy is stalled; it returns false if the
// link is cut meanwhile.
func (p *Proxy) waitFlowing(l *link) bool {
	for {
		p.mu.Lock()
		resumed := p.resumed
		p.mu.Unlock()
		if resumed == nil {
			select {
			case <-l.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-resumed:
		case <-l.done:
			return false
		}
	}
}
