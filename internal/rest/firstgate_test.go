package rest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Many requests at once on a fresh Client, as a Factory starting many
// informers sends them, share one HTTP/2 connection: the first goes alone,
// and the others wait for its answer. net/http dialed one connection for
// each while none was up.
func TestFirstRequestGoesAlone(t *testing.T) {
	srv, conns := newCountingHTTP2Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- getErr(c, "/api/v1/pods") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d requests at once made %d connections, want 1", n, got)
	}
}

// The others go once the first request has its connection, not when its
// answer comes: a first LIST that is slow to answer (read from etcd) held
// every other informer of a Factory for firstRequestWait. Found by a review
// helper. They share the connection all the same.
func TestFirstGateOpensOnceTheConnectionIsUp(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv, conns := newCountingHTTP2Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
	})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // before the server closes (a cleanup)
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	c.first.wait = time.Hour // not the way out
	slow := make(chan error, 1)
	go func() { slow <- getErr(c, "/slow") }()
	<-entered
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a guard
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL("/fast", nil).String(), nil)
			resp, err := c.Do(req)
			if err == nil {
				err = resp.Body.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a request behind a first one whose answer is held: %v", err)
		}
	}
	releaseOnce()
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}

// newCountingHTTP2Server starts a TLS server speaking HTTP/2, closed when
// the test ends, and counts the connections it accepts.
func newCountingHTTP2Server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, conns
}

// The others wait for the first request until it is done, or at most
// firstRequestWait (its headers may come late), and no longer than their
// own context; once it is done, nobody waits.
func TestFirstGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFirstGate(nil)
		r, first, err := g.enter(t.Context())
		if !first || err != nil {
			t.Fatalf("the first request: first %v, err %v", first, err)
		}
		entered := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			_, first, err := g.enter(t.Context())
			if first || err != nil {
				t.Errorf("a second request: first %v, err %v", first, err)
			}
			entered <- time.Since(start)
		}()
		ctx, cancel := context.WithCancel(t.Context())
		cancelled := make(chan error, 1)
		go func() { _, _, err := g.enter(ctx); cancelled <- err }()
		synctest.Wait()
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Errorf("a request whose context ends while it waits: %v", err)
		}
		if waited := <-entered; waited != firstRequestWait {
			t.Errorf("a second request went after %v, want %v", waited, firstRequestWait)
		}
		// The first is late: the gate is open for good, not only for
		// the request that waited.
		start = time.Now()
		if _, first, err := g.enter(t.Context()); first || err != nil || time.Since(start) != 0 {
			t.Errorf("after a wait ran out: first %v, err %v, waited %v", first, err, time.Since(start))
		}
		r.done() // the first request's answer, late: nothing changes
		if _, first, err := g.enter(t.Context()); first || err != nil || time.Since(start) != 0 {
			t.Errorf("after the first is done: first %v, err %v, waited %v", first, err, time.Since(start))
		}
	})
}

// Once the first request has its connection, as many requests as Go's
// HTTP/2 client puts on it before the server's SETTINGS are known go at
// once (the first included, preSettingsStreams); the others wait for the
// first answer on it. All went at once, and net/http dialed a connection
// for each request past 100: 101 dials for 200 informers, with 5 ms of
// latency, in a review's test.
func TestFirstGateLetsGoWhatTheConnectionTakesBeforeItsSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFirstGate(nil)
		r, first, _ := g.enter(t.Context())
		if !first {
			t.Fatal("the first request is not first")
		}
		const others = 150
		var went atomic.Int32
		for range others {
			go func() {
				if _, _, err := g.enter(t.Context()); err != nil {
					t.Error(err)
				}
				went.Add(1)
			}()
		}
		synctest.Wait()
		if got := went.Load(); got != 0 {
			t.Fatalf("%d went before the first had its connection", got)
		}
		r.connected()
		synctest.Wait()
		if got := went.Load(); got != preSettingsStreams-1 {
			t.Fatalf("%d went once the first had its connection, want %d", got, preSettingsStreams-1)
		}
		r.done() // the first answer on it
		synctest.Wait()
		if got := went.Load(); got != others {
			t.Fatalf("%d of %d went once the first answer came", got, others)
		}
	})
}

// Many long requests at once (a Factory's watches), more than Go's HTTP/2
// client puts on a connection before the server's SETTINGS, share one
// connection when the network has latency.
func TestManyWatchesShareOneConnectionDespiteLatency(t *testing.T) {
	release := make(chan struct{})
	srv, conns := newCountingHTTP2Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // a watch, open until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release) // before the server closes (a cleanup)
	proxy := newLatencyProxy(t, srv.Listener.Addr().String(), 5*time.Millisecond)
	c := newClient(t, &Config{Host: "https://" + proxy, TLS: TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.URL("/watch", nil).String(), nil)
			resp, err := c.Do(req)
			if err == nil {
				t.Cleanup(func() { _ = resp.Body.Close() }) // open until then, as a watch
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("%d watches at once made %d connections, want 1", n, got)
	}
}

// newLatencyProxy forwards TCP connections to target, each chunk delayed
// by d, as a network with latency does; it stops when the test ends.
func newLatencyProxy(t *testing.T, target string, d time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			pipe := func(dst, src net.Conn) {
				defer dst.Close()
				defer src.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						time.Sleep(d)
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Go(func() { pipe(out, in) })
			wg.Go(func() { pipe(in, out) })
		}
	})
	return ln.Addr().String()
}

// A first request whose transport panics opens the gate all the same, and
// a Client over plain http (or with HTTP/2 off) has no gate: there is no
// connection to share.
func TestFirstGateOpensOnAPanicAndOnlyForHTTP2(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	panicked := false
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}},
		WithWrapTransport(func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if !panicked {
					panicked = true
					panic("boom")
				}
				return next.RoundTrip(r)
			})
		}))
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = getErr(c, "/first")
	}()
	if got := c.first.round.Load().state.Load(); got != gateOpen {
		t.Errorf("after a panic in the first request, the gate is %d, want open", got)
	}
	if err := getErr(c, "/second"); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*Config{{Host: "http://127.0.0.1:1"}, {Host: srv.URL, DisableHTTP2: true}} {
		if c := newClient(t, cfg); c.first != nil {
			t.Errorf("%s (DisableHTTP2 %v): a gate", cfg.Host, cfg.DisableHTTP2)
		}
	}
}

// Watches cut all at once come back on one connection: with no connection
// up, the next request goes alone again, and the others wait for its
// connection. The gate opened once for good, and 200 watches cut at once,
// each back after its own backoff (10–110 ms here), made 43–56 dials to
// come back on one connection through a 100 ms handshake, in a review's
// test.
func TestWatchesCutAtOnceComeBackOnOneConnection(t *testing.T) {
	release := make(chan struct{})
	srv, conns := newCountingHTTP2Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // a watch, open until the test ends or it is cut
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release) // before the server closes (a cleanup)
	proxy := newLatencyProxy(t, srv.Listener.Addr().String(), 10*time.Millisecond)
	c := newClient(t, &Config{Host: "https://" + proxy, TLS: TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}})

	const n = 200
	watch := func() (io.ReadCloser, error) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.URL("/watch", nil).String(), nil)
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	var up, back sync.WaitGroup
	up.Add(n)
	back.Add(n)
	for i := range n {
		go func() {
			body, err := watch()
			if err != nil {
				t.Error(err)
				up.Done()
				back.Done()
				return
			}
			up.Done()
			_, _ = io.Copy(io.Discard, body) // until the cut
			_ = body.Close()
			backoff := 10*time.Millisecond + time.Duration(i)*time.Millisecond/2
			for {
				time.Sleep(backoff) // a Reflector's jittered backoff
				if body, err = watch(); err == nil {
					t.Cleanup(func() { _ = body.Close() })
					break
				}
			}
			back.Done()
		}()
	}
	up.Wait()
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d watches at once made %d connections, want 1", n, got)
	}
	srv.CloseClientConnections()
	back.Wait()
	if got := conns.Load() - 1; got != 1 {
		t.Errorf("%d watches cut at once came back on %d new connections, want 1", n, got)
	}
}

// Once open, the gate lets everyone through while a connection is up; once
// none is, the next request starts a new round and goes alone, and the
// others wait for its connection again.
func TestFirstGateStartsAgainWhenNoConnectionIsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var idle atomic.Bool
		g := newFirstGate(idle.Load)
		r, first, _ := g.enter(t.Context())
		if !first {
			t.Fatal("the first request is not first")
		}
		r.done()
		if _, first, _ := g.enter(t.Context()); first {
			t.Fatal("a request while a connection is up went as a first")
		}
		idle.Store(true) // every connection cut
		r2, first, _ := g.enter(t.Context())
		if !first || r2 == r {
			t.Fatalf("with no connection up: first %v, a new round %v", first, r2 != r)
		}
		var went atomic.Int32
		for range 3 {
			go func() {
				if _, first, err := g.enter(t.Context()); first || err != nil {
					t.Errorf("behind the new first: first %v, err %v", first, err)
				}
				went.Add(1)
			}()
		}
		synctest.Wait()
		if got := went.Load(); got != 0 {
			t.Fatalf("%d went before the new first had its connection", got)
		}
		r.done() // the old round's late news changes nothing
		synctest.Wait()
		if got := went.Load(); got != 0 {
			t.Fatalf("%d went on the old round's answer", got)
		}
		idle.Store(false)
		r2.connected()
		synctest.Wait()
		if got := went.Load(); got != 3 {
			t.Fatalf("%d of 3 went once the new first had its connection", got)
		}
	})
}
