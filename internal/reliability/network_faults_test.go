package reliability

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// Rows 17 to 22 of the fault matrix: the network and the servers behind it.

// newTLSServer starts a simulator with TLS (and HTTP/2 unless opts say
// otherwise).
func newTLSServer(t *testing.T, opts ...apisim.Option) *apisim.Server {
	t.Helper()
	s := apisim.New(append([]apisim.Option{
		apisim.WithResources(apisim.Pods()),
		apisim.WithBookmarkInterval(bookmarkEvery),
	}, opts...)...)
	if err := s.StartTLS(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func hostPort(url string) string { return url[strings.Index(url, "//")+2:] }

// Row 17: a watch stream that goes silent after its headers (and, the
// second time, after one event) is closed by the client's watchdog after
// the idle timeout and reopened from the last resourceVersion. client-go
// has no such watchdog: it stays stale until the server's timeout.
func TestRow17SilentStreamReopenedByWatchdog(t *testing.T) {
	t.Parallel()
	const idle = reflector.MinWatchIdleTimeout // ten bookmark intervals
	for _, mode := range []listMode{listThenWatch, autoMode} {
		name := map[listMode]string{listThenWatch: "list-watch", autoMode: "streaming"}[mode]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 3)
			s.Inject(onWatch, apisim.SilentAfterHeaders(), 1)
			s.Inject(onWatch, apisim.SilentAfterHeaders().After(1), 1)
			start := time.Now()
			w := startWatcher(t, s, "pods", setup{mode: mode, http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(idle)}})
			firstSync := time.Since(start)
			wr.touch("default", "p0") // the second watch's one event
			wr.touch("default", "p1") // held back by the silence
			wr.create("default", "p3")
			took := converge(t, s, convergeBound, w)
			// A streaming list that stalls before its end falls back to
			// LIST, and is reported as such. On a loaded machine a
			// request's answer can itself take longer than the idle
			// timeout ("no answer for 500ms"): such stalls are the
			// machine's, and are not counted.
			stalls := w.errs.matching(func(err error) bool {
				if strings.Contains(err.Error(), "no answer for") {
					return false
				}
				return errors.Is(err, reflector.ErrStalled) || strings.Contains(err.Error(), "went quiet")
			})
			if len(stalls) != 2 {
				t.Errorf("stalls reported: %d, want 2; errors: %v", len(stalls), w.errs)
			}
			if got := lists(s); got > 1 {
				t.Errorf("LIST requests = %d, want at most 1", got)
			}
			// About two idle timeouts, far from the minutes of a watch's
			// own timeout; the slack is for a loaded machine.
			if total := firstSync + took; total > 2*idle+5*time.Second {
				t.Errorf("two stalls cost %s, want about two idle timeouts (%s)", total, 2*idle)
			}
			for _, e := range stalls {
				t.Logf("%s after start: %v", e.at.Sub(start).Round(time.Millisecond), e.err)
			}
		})
	}
}

// Row 17b: a watch request that gets no answer at all (the server, or a
// pooled connection that went half-open, swallows it) is given up after the
// idle timeout too, and sent again.
func TestRow17WatchRequestWithoutAnswer(t *testing.T) {
	t.Parallel()
	const idle = reflector.MinWatchIdleTimeout
	s := newServer(t)
	log := logRequests(s)
	wr := newWriter(t, s)
	wr.createN("default", 3)
	gate := apisim.NewGate()
	t.Cleanup(gate.Release)
	s.Inject(onWatch, apisim.Hold(gate), 1)
	w := startWatcher(t, s, "pods", setup{http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(idle)}})
	wr.touch("default", "p1")
	took := converge(t, s, convergeBound, w)
	var at []time.Time
	for _, r := range log.all() {
		if r.verb == apisim.VerbWatch {
			at = append(at, r.at)
		}
	}
	// The unanswered one, then its retry; on a loaded machine the retry's
	// answer can itself take longer than the idle timeout, and a third
	// follows.
	if len(at) < 2 {
		t.Fatalf("WATCH requests = %d, want 2: the unanswered one, then its retry", len(at))
	}
	// Timed at the server, the gap has no lower bound (a first request
	// that reached it late shortens it; that the watchdog does not fire
	// early is reflector's unit tests' to check), but an upper one: the
	// idle timeout, the first backoff and slack for a loaded machine, far
	// from the watch's own timeout of minutes.
	gap := at[1].Sub(at[0])
	if gap > idle+3*time.Second {
		t.Errorf("the unanswered watch was given up after %s, want the idle timeout %s", gap, idle)
	}
	stalls := w.errs.matching(func(err error) bool { return errors.Is(err, reflector.ErrStalled) })
	if len(stalls) == 0 || !strings.Contains(stalls[0].err.Error(), "no answer for "+idle.String()) {
		t.Errorf("want the unanswered watch reported as stalled (no answer for %s); got %v", idle, w.errs)
	}
	t.Logf("unanswered watch given up after %s; converged in %s", gap.Round(time.Millisecond), took.Round(time.Millisecond))
}

// Row 18: a half-open connection: the proxy stops forwarding in both
// directions and closes nothing. Over HTTP/2 the client's PING health check
// notices within HTTP2ReadIdleTimeout + HTTP2PingTimeout (the watchdog is
// off here to measure the PING alone); over HTTP/1.1 the watchdog does,
// within its idle timeout. Either way the watch is reopened on a fresh
// connection and resumed without a relist.
func TestRow18HalfOpenConnection(t *testing.T) {
	t.Parallel()
	const readIdle, pingTimeout, idle = reflector.MinHTTP2PingInterval, reflector.MinHTTP2PingInterval, reflector.MinWatchIdleTimeout
	for _, c := range []struct {
		name  string
		http2 bool
		bound time.Duration
	}{
		{"HTTP/2 PING", true, readIdle + pingTimeout},
		{"HTTP/1.1 watchdog", false, idle},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newTLSServer(t, apisim.WithHTTP2(c.http2))
			p := newProxy(t, hostPort(s.URL()))
			wr := newWriter(t, s)
			wr.createN("default", 3)
			watchdog := idle
			if c.http2 {
				watchdog = 0
			}
			w := startWatcher(t, s, "pods", setup{
				host: "https://" + p.addr(),
				config: func(cfg *reflector.Config) {
					cfg.TLS.CAData = s.CAPEM()
					cfg.HTTP2ReadIdleTimeout, cfg.HTTP2PingTimeout = readIdle, pingTimeout
					cfg.DisableHTTP2 = !c.http2
				},
				http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(watchdog)},
			})
			wr.touch("default", "p0") // the watch is established once this arrives
			converge(t, s, convergeBound, w)
			before := watches(s)
			p.freeze()
			frozen := time.Now()
			wr.touch("default", "p1")
			wr.create("default", "p3")
			detected := eventually(t, convergeBound, "a new watch", func() bool { return watches(s) > before })
			converge(t, s, convergeBound, w)
			if got := lists(s); got != 1 {
				t.Errorf("LIST requests = %d, want 1", got)
			}
			if detected > c.bound+time.Second {
				t.Errorf("half-open connection noticed after %s, want within %s (+1s)", detected, c.bound)
			}
			t.Logf("half-open connection noticed and the watch reopened %s after the freeze (bound %s); caught up %s after",
				detected.Round(time.Millisecond), c.bound, time.Since(frozen).Round(time.Millisecond))
			for _, e := range w.errs.all() {
				t.Logf("reported %s after the freeze: %v", e.at.Sub(frozen).Round(time.Millisecond), e.err)
			}
		})
	}
}

// Row 19: a LIST whose body trickles in one byte at a time hits the list
// deadline and is asked again.
func TestRow19SlowlorisList(t *testing.T) {
	t.Parallel()
	const deadline = 500 * time.Millisecond
	s := newServer(t)
	newWriter(t, s).createN("default", 3)
	s.Inject(onList, apisim.TrickleList(10*time.Millisecond), 1)
	start := time.Now()
	w := startWatcher(t, s, "pods", setup{http: []reflector.HTTPOption{reflector.WithListTimeout(deadline)}})
	converge(t, s, convergeBound, w)
	if got := lists(s); got != 2 {
		t.Errorf("LIST requests = %d, want 2: the slow one, then its retry", got)
	}
	timedOut := w.errs.matching(func(err error) bool { return strings.Contains(err.Error(), "did not complete within") })
	if len(timedOut) != 1 {
		t.Fatalf("want one list deadline reported, got %v", w.errs)
	}
	if at := timedOut[0].at.Sub(start); at > deadline+time.Second {
		t.Errorf("slow list abandoned after %s, want about %s", at, deadline)
	}
	t.Logf("slow list abandoned after %s: %v", timedOut[0].at.Sub(start).Round(time.Millisecond), timedOut[0].err)
}

// Row 20: TLS failures give an error that says what to check, are retried
// with backoff (counted as TCP connections at the proxy, since they never
// reach the server), and the informer recovers once the server presents a
// certificate the client trusts. A CA rotation the client was given in
// advance (both CAs in its bundle) goes unnoticed.
func TestRow20TLS(t *testing.T) {
	t.Parallel()
	const period = 2 * time.Second
	t.Run("unknown CA", func(t *testing.T) {
		t.Parallel()
		s := newTLSServer(t)
		newWriter(t, s).createN("default", 3)
		trusted := s.CA()
		other, err := apisim.NewCA("other")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ServeWithCA(other); err != nil {
			t.Fatal(err)
		}
		p := newProxy(t, hostPort(s.URL()))
		w := startWatcher(t, s, "pods", setup{host: "https://" + p.addr(), noWait: true,
			config: func(cfg *reflector.Config) { cfg.TLS.CAData = trusted.PEM() }})
		time.Sleep(period) // the fault's duration: the thing measured
		attempts := p.connections()
		checkTLSError(t, w, "did not verify")
		if err := s.ServeWithCA(trusted); err != nil {
			t.Fatal(err)
		}
		w.waitSynced()
		converge(t, s, convergeBound, w)
		if attempts > 30 {
			t.Errorf("%d connection attempts in %s, want at most 30", attempts, period)
		}
		t.Logf("%d connection attempts in %s; recovered once the server's certificate was trusted", attempts, period)
	})
	t.Run("wrong server name", func(t *testing.T) {
		t.Parallel()
		s := newTLSServer(t)
		p := newProxy(t, hostPort(s.URL()))
		w := startWatcher(t, s, "pods", setup{host: "https://" + p.addr(), noWait: true,
			config: func(cfg *reflector.Config) {
				cfg.TLS.CAData = s.CAPEM()
				cfg.TLS.ServerName = "apiserver.example.com"
			}})
		time.Sleep(period) // the fault's duration: the thing measured
		attempts := p.connections()
		checkTLSError(t, w, "apiserver.example.com")
		if attempts > 30 {
			t.Errorf("%d connection attempts in %s, want at most 30", attempts, period)
		}
		if w.inf.HasSynced() {
			t.Error("synced with a server whose name does not match")
		}
		t.Logf("%d connection attempts in %s (recovery needs a corrected Config, hence a new client)", attempts, period)
	})
	t.Run("CA rotated", func(t *testing.T) {
		t.Parallel()
		s := newTLSServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 3)
		next, err := apisim.NewCA("next")
		if err != nil {
			t.Fatal(err)
		}
		p := newProxy(t, hostPort(s.URL()))
		w := startWatcher(t, s, "pods", setup{host: "https://" + p.addr(),
			config: func(cfg *reflector.Config) { cfg.TLS.CAData = append(s.CAPEM(), next.PEM()...) }})
		if err := s.ServeWithCA(next); err != nil {
			t.Fatal(err)
		}
		p.cut() // connections made with the old certificate go
		wr.touch("default", "p1")
		converge(t, s, convergeBound, w)
		// The list, and one list of one object if the cut came before
		// a watch had its answer (the Reflector's probe that a server
		// out of reach has not come back behind the cache).
		if got := lists(s); got < 1 || got > 2 {
			t.Errorf("LIST requests = %d, want 1, or 2 with a probe", got)
		}
		for _, e := range w.errs.all() {
			if strings.Contains(e.err.Error(), "TLS") {
				t.Errorf("TLS error after a rotation the client trusted: %v", e.err)
			}
		}
	})
}

// checkTLSError checks that w reported a TLS failure that says what to
// check and mentions want.
func checkTLSError(t *testing.T, w *watcher, want string) {
	t.Helper()
	err := w.inf.LastError()
	if err == nil {
		t.Fatal("no error reported")
	}
	msg := err.Error()
	if !strings.Contains(msg, "TLS certificate did not verify") || !strings.Contains(msg, "CA") || !strings.Contains(msg, want) {
		t.Errorf("error %q does not say what to check", msg)
	}
}

// Row 21: an apiserver restart with many informers, half of them on
// streaming lists. Every watch ends; while the server is down, objects
// change; the restarted server's watch cache starts after those changes, so
// every informer's resumption gets 410 and must fill its cache again. Each
// does so exactly once, from its last resourceVersion (NotOlderThan), never
// from scratch, and no cache goes back in time.
func TestRow21RestartWithManyInformers(t *testing.T) {
	t.Parallel()
	const informers = 10
	s := newServer(t)
	log := logRequests(s)
	wr := newWriter(t, s)
	for i := range informers {
		wr.createN(fmt.Sprint("ns", i), 3)
	}
	var ws []*watcher
	synced := map[string]uint64{}
	for i := range informers {
		su := setup{target: reflector.Target{Namespace: fmt.Sprint("ns", i)}}
		if i%3 == 0 {
			su.target = reflector.Target{} // some watch every namespace
		}
		if i%2 == 0 {
			su.mode = autoMode
		}
		w := startWatcher(t, s, fmt.Sprint("informer", i), su)
		w.monitorRV()
		ws = append(ws, w)
	}
	wr.touch("ns0", "p2") // every informer's resourceVersion moves past the last list (bookmarks)
	converge(t, s, convergeBound, ws...)
	for _, w := range ws {
		synced[w.name] = w.rv()
	}
	requestsBefore := len(log.all())

	eventually(t, convergeBound, "every watch", func() bool { return s.Watchers(apisim.Pods()) == informers })
	gate := apisim.NewGate()
	hold := s.Inject(onWatch, apisim.Hold(gate), 0)
	s.Restart() // every watch ends; their resumptions are held
	for range informers {
		waitEntered(t, gate)
	}
	for i := range informers { // writes while the server is down
		wr.touch(fmt.Sprint("ns", i), "p0")
	}
	s.Restart() // the new watch cache starts here
	hold.Remove()
	gate.Release()
	for i := range informers { // and writes after
		wr.touch(fmt.Sprint("ns", i), "p1")
	}
	took := converge(t, s, convergeBound, ws...)

	refills := fills(log.all()[requestsBefore:])
	if len(refills) != informers {
		t.Errorf("%d cache fills after the restart, want exactly one per informer (%d)", len(refills), informers)
	}
	oldest := slices.Min(slices.Collect(maps.Values(synced)))
	for _, r := range refills {
		if rv := parseRV(r.query.Get("resourceVersion")); rv < oldest || r.query.Get("resourceVersionMatch") != "NotOlderThan" {
			t.Errorf("refill %v is not NotOlderThan the informer's last resourceVersion (at least %d)", r.query, oldest)
		}
	}
	t.Logf("%d informers: %d cache fills after the restart (LIST or streaming), all NotOlderThan the informer's last resourceVersion; converged in %s",
		informers, len(refills), took.Round(time.Millisecond))
}

// Row 22: two apiservers over "one etcd", one lagging: B has applied only
// the first part of A's writes (same resourceVersions, same uids). The
// informer, synced on A, is switched to B through a proxy. Whether B waits
// for the future resourceVersion (watch cache) or refuses it (too large),
// and even when B's watch says 410 so that the informer must list from B,
// the cache never goes back in time: LastSyncResourceVersion never
// decreases and no handler sees a resourceVersion go back. Once B catches
// up, the cache equals B.
func TestRow22LaggingServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []apisim.Option
		gone bool
		// heard is how many requests B must have received before the
		// checks: the informer has had B's answers to all but the last
		// and acted on them. Waiting, B holds the first watch open;
		// refusing, it refuses the watch, then the LIST that follows
		// (NotOlderThan 100); forcing a relist, it ends the watch with
		// a 410, then refuses the LIST.
		heard int
	}{
		{"lagging server waits", nil, false, 1},
		{"lagging server refuses future resourceVersions", []apisim.Option{apisim.WithFutureWatchError()}, false, 3},
		{"lagging server forces a relist", nil, true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]apisim.Option{apisim.WithDerivedUIDs(), apisim.WithTooLargeWait(300 * time.Millisecond)}, c.opts...)
			a, b := newServer(t, opts...), newServer(t, opts...)
			ops := script(rand.New(rand.NewPCG(22, 0)), 120)
			wa, wb := newWriter(t, a), newWriter(t, b)
			for _, op := range ops[:100] {
				op(wa)
			}
			for _, op := range ops[:60] {
				op(wb)
			}
			p := newProxy(t, hostPort(a.URL()))
			w := startWatcher(t, a, "pods", setup{host: "http://" + p.addr()})
			w.monitorRV()
			converge(t, a, convergeBound, w)
			onA := w.rv()

			if c.gone {
				b.Inject(onWatch, apisim.ErrorEvent(410, "Expired"), 1)
			}
			if n := lists(b) + watches(b); n != 0 {
				t.Fatalf("B got %d requests before the switch, want 0", n)
			}
			p.retarget(hostPort(b.URL()))
			p.cut()
			eventually(t, convergeBound, fmt.Sprintf("%d LIST or WATCH requests to the lagging B", c.heard), func() bool {
				return lists(b)+watches(b) >= c.heard
			})
			if got := w.rv(); got < onA {
				t.Errorf("resourceVersion went from %d back to %d on the lagging server", onA, got)
			}
			if got := w.inf.Indexer().Len(); got == 0 {
				t.Error("the cache was emptied")
			}
			for _, op := range ops[60:] {
				op(wb) // B catches up, and goes beyond what A had
			}
			took := converge(t, b, convergeBound, w)
			_, _, deletes, unknown := w.recs[0].counts()
			t.Logf("synced at %d on A, switched to B at 60; caught up with B at %s in %s; B: %d LISTs, %d WATCHes; %d deletes (%d inferred)",
				onA, b.ResourceVersion(), took.Round(time.Millisecond), lists(b), watches(b), deletes, unknown)
			for _, e := range w.errs.all() {
				t.Logf("reported: %v", e.err)
			}
		})
	}
}

// script returns n random writes (creates, updates, deletes, recreations)
// to pods in namespace "default", the same for the same source of
// randomness, so that two servers fed the same script hold the same
// objects.
func script(rnd *rand.Rand, n int) []func(*writer) {
	var ops []func(*writer)
	exists := map[string]bool{}
	for len(ops) < n {
		name := fmt.Sprint("p", rnd.IntN(15))
		switch {
		case !exists[name]:
			exists[name] = true
			ops = append(ops, func(w *writer) { w.createAsReplayed("default", name) })
		case rnd.IntN(4) == 0:
			exists[name] = false
			ops = append(ops, func(w *writer) { w.remove("default", name) })
		default:
			ops = append(ops, func(w *writer) { w.touch("default", name) })
		}
	}
	return ops
}

// Row 26: periodic bookmarks move a quiet informer's
// resourceVersion, so that after the server's history has moved past the
// last event it saw, a dropped watch resumes without a 410 and a relist.
func TestRow26BookmarksKeepQuietInformerResumable(t *testing.T) {
	t.Parallel()
	for _, mode := range []listMode{listThenWatch, autoMode} {
		t.Run(map[listMode]string{listThenWatch: "list-watch", autoMode: "streaming"}[mode], func(t *testing.T) {
			t.Parallel()
			s := newServer(t, apisim.WithHistorySize(20))
			p := newProxy(t, hostPort(s.URL()))
			wr := newWriter(t, s)
			wr.create("quiet", "p0")
			w := startWatcher(t, s, "quiet", setup{mode: mode, host: "http://" + p.addr(),
				target: reflector.Target{Namespace: "quiet"}})
			fillsBefore := lists(s)
			// The watch must be open before the history moves on, or it
			// starts with a 410 whatever bookmarks do.
			eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
			wr.createN("busy", 50) // the history moves past everything "quiet" saw
			target := parseRV(s.ResourceVersion())
			eventually(t, 10*bookmarkEvery, "a bookmark to carry the resourceVersion forward", func() bool { return w.rv() >= target })
			p.cut()
			wr.touch("quiet", "p0")
			converge(t, s, convergeBound, w)
			if got := lists(s) - fillsBefore; got != 0 {
				t.Errorf("%d LISTs after the cut, want 0: the bookmark's resourceVersion is still in the history", got)
			}
		})
	}
}
