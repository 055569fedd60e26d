package rest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// freezableProxy forwards TCP connections until freeze is called; from then
// on it forwards nothing and closes nothing, which is what the client sees
// when the server's host vanishes without a FIN or RST.
type freezableProxy struct {
	ln       net.Listener
	target   string
	frozen   chan struct{}
	freezeMu sync.Once
	done     chan struct{}
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func newFreezableProxy(t *testing.T, target string) *freezableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezableProxy{ln: ln, target: target, frozen: make(chan struct{}), done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *freezableProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// pipe copies src to dst until either fails or the proxy freezes, after
// which it holds on to what it read until the proxy closes.
func (p *freezableProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-p.frozen:
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

func (p *freezableProxy) freeze() { p.freezeMu.Do(func() { close(p.frozen) }) }

func (p *freezableProxy) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A watch over HTTP/2 whose connection goes silent fails within about
// HTTP2ReadIdleTimeout + HTTP2PingTimeout, instead of hanging until the
// kernel gives up (minutes) or forever.
func TestHalfOpenHTTP2ConnectionIsDetected(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a watch with nothing to say
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	proxy := newFreezableProxy(t, srv.Listener.Addr().String())

	const readIdle, pingTimeout = MinHTTP2PingInterval, MinHTTP2PingInterval
	c := newClient(t, &Config{
		Host:                 "https://" + proxy.ln.Addr().String(),
		TLS:                  TLSConfig{CAData: serverCAPEM(srv)},
		HTTP2ReadIdleTimeout: readIdle,
		HTTP2PingTimeout:     pingTimeout,
	})
	req, _ := http.NewRequest(http.MethodGet, c.URL("/api/v1/pods", nil).String()+"?watch=1", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("response over %s, want HTTP/2", resp.Proto)
	}

	proxy.freeze()
	frozenAt := time.Now()
	readErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		readErr <- err
	}()
	select {
	case err := <-readErr:
		elapsed := time.Since(frozenAt)
		if err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("the watch ended cleanly (%v); want an error", err)
		}
		if !IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = false, want true: the caller should reconnect", err)
		}
		t.Logf("dead connection noticed after %v: %v", elapsed, err)
		if limit := readIdle + pingTimeout + 5*time.Second; elapsed > limit {
			t.Errorf("noticed after %v, want within %v", elapsed, limit)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the dead connection went unnoticed for 15s")
	}
}
