package reliability

import (
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy in front of a server. It forwards each connection
// to its target of the moment, and can cut every connection (both sides
// closed, as when a server goes away), freeze them (nothing forwarded any
// more, nothing closed: what a client sees of a half-open connection, when
// the far side vanished without a FIN or RST), or send new connections to
// another target. It is safe for concurrent use.
type proxy struct {
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	target   string
	links    map[*link]struct{}
	frozen   []*link // closed only when the proxy closes
	accepted int
	closed   bool
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	frozen         chan struct{}
	freezeOnce     sync.Once
}

// newProxy starts a proxy to target; it stops when the test ends.
func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, done: make(chan struct{}), target: target, links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.accepted++
		p.mu.Unlock()
		server, err := net.Dial("tcp", target)
		if err != nil {
			client.Close()
			continue
		}
		l := &link{client: client, server: server, frozen: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, server, client)
		go p.pipe(l, client, server)
	}
}

// pipe copies src to dst until either side fails. Once the link is frozen
// it forwards nothing more and waits for the proxy to close.
func (p *proxy) pipe(l *link, dst, src net.Conn) {
	defer p.wg.Done()
	defer p.drop(l)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-l.frozen:
				<-p.done
				return
			default:
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drop closes both sides of l, unless it is frozen: a frozen link stays
// open until the proxy closes.
func (p *proxy) drop(l *link) {
	select {
	case <-l.frozen:
		return
	default:
	}
	l.client.Close()
	l.server.Close()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// cut closes every open connection, both sides.
func (p *proxy) cut() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
		delete(p.links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.client.Close()
		l.server.Close()
	}
}

// freeze stops forwarding on every open connection without closing any;
// new connections are forwarded as usual.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.links {
		l.freezeOnce.Do(func() { close(l.frozen) })
		delete(p.links, l)
		p.frozen = append(p.frozen, l)
	}
}

// retarget sends new connections to target; open ones are left alone.
func (p *proxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// connections returns how many connections the proxy accepted.
func (p *proxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.done)
	p.ln.Close()
	p.cut()
	p.mu.Lock()
	for _, l := range p.frozen {
		l.client.Close()
		l.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
