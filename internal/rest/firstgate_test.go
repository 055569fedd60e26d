package rest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
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
		g := newFirstGate(nil, nil)
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
		g := newFirstGate(nil, nil)
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
	openWatches(t, c, n)
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
	serveLatencyProxy(t, ln, target, d)
	return ln.Addr().String()
}

// serveLatencyProxy is newLatencyProxy on a listener of the caller's. cut
// resets every connection open, on both sides, as a server that crashed or
// a load balancer that dropped them would.
func serveLatencyProxy(t *testing.T, ln net.Listener, target string, d time.Duration) (cut func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	cut = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not a FIN
			}
			c.Close()
		}
		conns = nil
	}
	t.Cleanup(func() {
		ln.Close()
		cut()
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
	return cut
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

// Watches cut all at once (their connection reset) come back on one
// connection: with no connection usable, the next request goes alone
// again, and the others wait for its connection. The gate opened once for
// good, and 200 watches cut at once, each back after its own backoff
// (400–800 ms here, as a Reflector's first one), made 43–58 dials to come
// back on one connection through a slow handshake in a review's test,
// 43–127 in this one.
func TestWatchesCutAtOnceComeBackOnOneConnection(t *testing.T) {
	srv, conns := newWatchServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cut := serveLatencyProxy(t, ln, srv.Listener.Addr().String(), 10*time.Millisecond)
	c := newClient(t, &Config{Host: "https://" + ln.Addr().String(), TLS: TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}})
	const n = 200
	var up, back sync.WaitGroup
	up.Add(n)
	for i := range n {
		back.Go(func() {
			body := watchUntilAnswered(t, c, i, reflectorBackoff(i))
			up.Done()
			_, _ = io.Copy(io.Discard, body) // until the cut
			_ = body.Close()
			body = watchUntilAnswered(t, c, i, reflectorBackoff(i))
			t.Cleanup(func() { _ = body.Close() })
		})
	}
	up.Wait()
	if got := conns.Load(); got != 1 {
		t.Fatalf("%d watches at once made %d connections, want 1", n, got)
	}

	cut()
	back.Wait()
	if got := conns.Load() - 1; got != 1 {
		t.Errorf("%d watches cut at once came back on %d new connections, want 1", n, got)
	}
}

// Watches that start while the apiserver is not up yet (connection
// refused: no connection was ever up) come back on one connection once it
// is. A new round began only once a connection had come up and gone, and
// the first request of each round, refused, let all the others go at once:
// 87–142 connections in a review's test.
func TestWatchesComeBackOnOneConnectionOnceTheServerIsUp(t *testing.T) {
	srv, conns := newWatchServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on, for now
	c := newClient(t, &Config{Host: "https://" + addr, TLS: TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}})
	if err := getErr(c, "/watch"); err == nil {
		t.Fatal("a request to a port nobody listens on succeeded")
	}
	const n = 200
	var started, back sync.WaitGroup
	started.Add(n)
	for i := range n {
		back.Go(func() {
			started.Done()
			// Closer together than Reflectors would: the refused
			// first requests let the others go at once.
			body := watchUntilAnswered(t, c, i, 50*time.Millisecond+time.Duration(i)*time.Millisecond/2)
			t.Cleanup(func() { _ = body.Close() })
		})
	}
	started.Wait()
	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	serveLatencyProxy(t, ln, srv.Listener.Addr().String(), 10*time.Millisecond) // the apiserver is up
	back.Wait()
	if got := conns.Load(); got != 1 {
		t.Errorf("%d watches came back on %d connections once the apiserver was up, want 1", n, got)
	}
}

// newWatchServer starts a counting HTTP/2 server whose every answer is a
// watch that stays open until the test ends, or its connection is cut.
func newWatchServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	release := make(chan struct{})
	srv, conns := newCountingHTTP2Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the server closes: cleanups run last first
	return srv, conns
}

// watchUntilAnswered opens a watch, as the i-th of many Reflectors would:
// after each failure it waits its backoff and tries again, for 20 s at
// most.
func watchUntilAnswered(t *testing.T, c *Client, i int, backoff time.Duration) io.ReadCloser {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.URL("/watch", nil).String(), nil)
		resp, err := c.Do(req)
		if err == nil {
			return resp.Body
		}
		if time.Now().After(deadline) {
			t.Errorf("watch %d never answered: %v", i, err)
			return http.NoBody
		}
		time.Sleep(backoff) // a Reflector's backoff
	}
}

// reflectorBackoff is the i-th of 200 Reflectors' first backoff after a
// failure, spread as the jitter spreads them: 400 to 800 ms.
func reflectorBackoff(i int) time.Duration {
	return 400*time.Millisecond + time.Duration(i)*2*time.Millisecond
}

// Once open, the gate lets everyone through while a connection is up; once
// none is, the next request starts a new round and goes alone, and the
// others wait for its connection again.
func TestFirstGateStartsAgainWhenNoConnectionIsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var idle atomic.Bool
		g := newFirstGate(idle.Load, nil)
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

// A first request that fails before it has its connection (its context
// ended, or the server is not up yet) hands over: one of the requests
// waiting behind it goes alone in its place, and the others keep waiting,
// for firstRequestWait in all. They all went at once, and with no
// connection up each dialed its own: 150 behind a first that gave up made
// 201 connections, in a review's test.
func TestFirstGateHandsOverWhenTheFirstFailsBeforeItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFirstGate(nil, nil)
		r, first, _ := g.enter(t.Context())
		if !first {
			t.Fatal("the first request is not first")
		}
		start := time.Now()
		const others = 5
		firsts, went := make(chan *gateRound, others), make(chan time.Duration, others)
		for range others {
			go func() {
				r, first, err := g.enter(t.Context())
				switch {
				case err != nil:
					t.Error(err)
				case first:
					firsts <- r
				default:
					went <- time.Since(start)
				}
			}()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		g.abandon(r)
		r.done() // Do's deferred done: nothing more
		synctest.Wait()
		if len(firsts) != 1 || len(went) != 0 {
			t.Fatalf("once the first failed: %d went first, %d went behind it; want 1 and 0", len(firsts), len(went))
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(went) != others-1 {
			t.Fatalf("%d of %d went by firstRequestWait", len(went), others-1)
		}
		for range others - 1 {
			if d := <-went; d != firstRequestWait {
				t.Errorf("a request went after %v in two rounds, want %v in all", d, firstRequestWait)
			}
		}
		if r2 := <-firsts; r2 == r {
			t.Error("the new first went in the abandoned round")
		}
	})
}

// Over HTTPS to a server that speaks only HTTP/1.1 there is nothing to
// share: every request needs a connection of its own, and none waits for
// another's. The gate started a round whenever the connections were gone
// (keep-alive off, say), and held every request past the first 100 until
// the first answer: a review's test. The server answers none until all
// have come, and the gate's wait is an hour: a request the gate held
// would never come. (A deadline of 1.5 s at the server failed on a loaded
// machine: 120 TLS handshakes under -race took that long with no gate.)
func TestFirstGateHoldsNothingOverHTTP1(t *testing.T) {
	const n = 120
	var arrived atomic.Int32
	all, late := make(chan struct{}), make(chan struct{}, n)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/burst" {
			return
		}
		if arrived.Add(1) == n {
			close(all)
		}
		select { // every request is in before any is answered
		case <-all:
		case <-time.After(30 * time.Second): // a guard, not a wait: a request held never comes
			late <- struct{}{}
		}
	}))
	srv.Config.SetKeepAlivesEnabled(false)
	srv.StartTLS() // HTTP/1.1 only
	defer srv.Close()
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	// A request held until an answer would wait for ever.
	c.first.wait = time.Hour
	if err := getErr(c, "/warm"); err != nil { // its connection closes after it
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := getErr(c, "/burst"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(late) > 0 {
		t.Errorf("%d of %d requests at once waited 30 s at the server for others the gate held (%d came in the end)", len(late), n, arrived.Load())
	}
}

// Through an https:// proxy, a connection is TLS to the server inside TLS
// to the proxy: it counts as usable all the same. It did not, and every
// burst of requests on a connected Client was held as if nothing were up:
// a review's test.
func TestConnectionThroughAnHTTPSProxyCountsAsUsable(t *testing.T) {
	srv, _ := newCountingHTTP2Server(t, func(http.ResponseWriter, *http.Request) {})
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		down, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		_, _ = down.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		go func() { _, _ = io.Copy(up, buf.Reader); up.Close() }()
		go func() { _, _ = io.Copy(down, up); down.Close() }()
	}))
	defer proxy.Close()
	defer srv.CloseClientConnections() // the tunnels, before the proxy closes
	c := newClient(t, &Config{Host: srv.URL, ProxyURL: proxy.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	if err := getErr(c, "/"); err != nil {
		t.Fatal(err)
	}
	if c.tracker.idle() {
		t.Errorf("connected through an https proxy, no connection counts as usable (%d)", c.tracker.usable.Load())
	}
}

// A connection whose read fails with ETIMEDOUT (TCP_USER_TIMEOUT, or
// keepalive probes unanswered: the peer is gone) no longer counts as
// usable; only a deadline's timeout would leave it so. It counted, as a
// timeout, until the HTTP/2 client closed it.
func TestConnectionThatTimedOutIsNotUsable(t *testing.T) {
	tracker := &connTracker{}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	dial := tracker.wrap(func(context.Context, string, string) (net.Conn, error) { return timedOutConn{a}, nil })
	conn, err := dial(t.Context(), "tcp", "x:1")
	if err != nil {
		t.Fatal(err)
	}
	if usable, _ := noteConn(httptrace.GotConnInfo{Conn: conn}); !usable || tracker.idle() {
		t.Fatal("a connection given to a request does not count as usable")
	}
	_, err = conn.Read(make([]byte, 1))
	if !tracker.idle() {
		t.Errorf("after a read failed with %v, the connection still counts as usable", err)
	}
}

// timedOutConn's reads fail as a connection whose peer is gone does.
type timedOutConn struct{ net.Conn }

func (timedOutConn) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
}

// A first request that fails after its connection came up, which then
// failed too, hands over as well: the requests still waiting (past the
// connection's first streams) would each dial their own.
func TestFirstGateHandsOverWhenTheFirstsConnectionFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var idle atomic.Bool
		g := newFirstGate(idle.Load, nil)
		r, _, _ := g.enter(t.Context())
		const others = preSettingsStreams + 10
		var went, firsts atomic.Int32
		for range others {
			go func() {
				_, first, err := g.enter(t.Context())
				if err != nil {
					t.Error(err)
				}
				if first {
					firsts.Add(1)
				}
				went.Add(1)
			}()
		}
		synctest.Wait()
		r.connected()
		synctest.Wait()
		if got := went.Load(); got != preSettingsStreams-1 {
			t.Fatalf("%d went once the first had its connection, want %d", got, preSettingsStreams-1)
		}
		g.abandon(r) // its connection is still usable: nothing
		synctest.Wait()
		if got := went.Load(); got != preSettingsStreams-1 {
			t.Fatalf("%d went after a failure on a usable connection, want %d", got, preSettingsStreams-1)
		}
		idle.Store(true) // the connection failed
		g.abandon(r)
		r.done() // Do's deferred done: nothing more
		synctest.Wait()
		if got, f := went.Load(), firsts.Load(); got != preSettingsStreams || f != 1 {
			t.Fatalf("once the connection failed: %d went, %d of them first; want %d and 1", got, f, preSettingsStreams)
		}
		g.round.Load().done() // the new first's answer
		synctest.Wait()
		if got := went.Load(); got != others {
			t.Fatalf("%d of %d went once the new first was answered", got, others)
		}
	})
}

// More watches than a connection's stream limit (kube-apiserver's is 100)
// open one connection more, not one for each watch past the limit: the
// first round's gate opens at the first answer, and every request waiting
// then found the connection full and dialed (68–101 connections for 200
// watches in a review's test). One request at a time looks for a
// connection, so one dials and the rest find it.
func TestWatchesPastTheStreamLimitOpenOneMoreConnection(t *testing.T) {
	release := make(chan struct{})
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // a watch, open until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 100} // kube-apiserver's default
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	defer close(release) // before the server closes (a cleanup)
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	const n = 250
	openWatches(t, c, n)
	if got := conns.Load(); got > 3 {
		t.Errorf("%d watches, 100 streams a connection: %d connections, want 3", n, got)
	}
}

// A server that takes connections and never answers the TLS handshake (a
// hung apiserver, a load balancer with nothing behind) is dialed once per
// firstRequestWait, not once per waiting request: once the gate had waited
// its longest, every request waiting dialed a connection of its own (200
// connections held for 200 informers in a review's test).
func TestAHungHandshakeIsDialedOnePerWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var held sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); ln.Close(); held.Wait() })
	held.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held.Go(func() { <-stop; conn.Close() })
		}
	})
	c := newClient(t, &Config{Host: "https://" + ln.Addr().String(), TLS: TLSConfig{Insecure: true}})
	const wait = 250 * time.Millisecond
	c.first.wait = wait
	ctx, cancel := context.WithTimeout(t.Context(), 8*wait)
	defer cancel()
	const n = 40
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL("/watch", nil).String(), nil)
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
				t.Error("a server that never answers answered")
			}
		})
	}
	wg.Wait()
	// The first at once, then one each wait: about 8; a few more for the
	// machine's delays.
	if got := accepted.Load(); got > 12 {
		t.Errorf("%d requests to a server that never answers, for %v: %d connections, want about %d", n, 8*wait, got, 8)
	}
}

// A transport of the caller's that answers requests by itself, after one
// went through to the server, does not say which connection it used: once
// one such answer came, no request waits for another to have its
// connection, so requests that answer each other (here, all at once) do
// not wait for the gate's longest wait each.
func TestRequestsAnsweredWithoutAConnectionDoNotWaitForEachOther(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	const n = 20
	var arrived sync.WaitGroup
	arrived.Add(n)
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}},
		WithWrapTransport(func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				switch r.URL.Path {
				case "/server":
					return next.RoundTrip(r)
				case "/together": // answered once all have arrived
					arrived.Done()
					arrived.Wait()
				}
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
			})
		}))
	if err != nil {
		t.Fatal(err)
	}
	c.first.wait = time.Hour // a request that waited for another's would wait for ever
	for _, path := range []string{"/server", "/server", "/replayed"} {
		if err := getErr(c, path); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := getErr(c, "/together"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// Requests that began to wait for a connection before the Client learnt
// the server speaks only HTTP/1.1 (its first handshake outlasted the
// gate's wait) do not go on waiting for each other's handshakes once it
// has: each needs a connection of its own. They took turns, two seconds
// each at most, found by a review helper.
func TestRequestsWaitingWhenHTTP1IsLearntGoAtOnce(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // a watch
		case <-release:
		case <-r.Context().Done():
		}
	}))
	const handshake = 500 * time.Millisecond
	srv.Listener = slowHelloListener{Listener: srv.Listener, d: handshake}
	srv.StartTLS() // HTTP/1.1 only
	t.Cleanup(srv.Close)
	defer close(release)
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	c.first.wait = handshake / 3
	const n = 40
	start := time.Now()
	openWatches(t, c, n)
	// The first handshake, then the others' at once: about two; in turns,
	// about n/3 of them (13). Six leaves room for a loaded machine.
	if took := time.Since(start); took > 6*handshake {
		t.Errorf("%d watches over HTTP/1.1 with %v handshakes took %v, want about %v", n, handshake, took, 2*handshake)
	}
}

// slowHelloListener delays each connection's first write (the server's
// TLS ServerHello) by d: a TLS handshake that takes d.
type slowHelloListener struct {
	net.Listener
	d time.Duration
}

func (l slowHelloListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowHelloConn{Conn: c, d: l.d}, nil
}

type slowHelloConn struct {
	net.Conn
	d    time.Duration
	once sync.Once
}

func (c *slowHelloConn) Write(p []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.d) })
	return c.Conn.Write(p)
}

// openWatches sends n GETs of /watch through c at once and keeps each
// answer's body open until the test ends, as watches; it fails the test
// if any failed.
func openWatches(t *testing.T, c *Client, n int) {
	t.Helper()
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
}
