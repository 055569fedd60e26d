package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/e2e/cluster"
	"github.com/listwatch/listwatch/internal/e2e/tcpproxy"
	"github.com/listwatch/listwatch/reflector"
)

// The scenarios of issue #6: listwatch informers against a real
// kube-apiserver and, written once, against the simulator. Each ends with
// the oracle: every cache and every handler's view equals a fresh LIST,
// each object's resourceVersions grew in every handler, every delete was
// delivered. Rows of the reliability matrix (internal/reliability) are
// named where a scenario covers one.

// scenario is one scenario, run against each server.
type scenario struct {
	name string
	// dedicated scenarios restart the apiserver or compact etcd, so on
	// the real server they get a cluster of their own.
	dedicated bool
	run       func(t *testing.T, srv server, ns string)
}

var scenarios = []scenario{
	{name: "matrix", run: scenarioMatrix},
	{name: "clean-watch-end", run: scenarioCleanWatchEnd},
	{name: "cut", run: scenarioCut},
	{name: "compaction-410", dedicated: true, run: scenarioCompaction},
	{name: "stall-http2", run: scenarioStall(false)},
	{name: "stall-http1", run: scenarioStall(true)},
	{name: "restart", dedicated: true, run: scenarioRestart},
	{name: "forbidden", run: scenarioForbidden},
	{name: "large-values", run: scenarioLargeValues},
}

// TestScenariosReal runs every scenario against kube-apiserver: on one
// cluster that they share, each in namespaces of its own, or, for those
// that restart it, on a cluster of their own. (Not on the cluster of the
// conformance tests: their recordings must not depend on our load.)
func TestScenariosReal(t *testing.T) {
	t.Parallel()
	common := startReal(t, false)
	t.Run("audit-log", func(t *testing.T) { checkAuditLog(t, common.c) })
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			srv := common
			if sc.dedicated {
				srv = startReal(t, true)
			}
			sc.run(t, srv, "sc-"+sc.name)
		})
	}
}

// checkAuditLog checks that c's audit log records the LIST and WATCH
// requests (and only those) with their user and user agent, since the
// scenarios count a client's requests with it.
func checkAuditLog(t *testing.T, c *cluster.Cluster) {
	const ns = "audit-log"
	admin := adminAPI(t, c)
	admin.createNamespace(ns)
	admin.createPod(ns, "p", nil)
	path := "/api/v1/namespaces/" + ns + "/pods"
	admin.must("GET", path+"?limit=7", nil, http.StatusOK)
	w := admin.watch(path+"?watch=true&timeoutSeconds=1", "")
	require.Equal(t, http.StatusOK, w.status)

	evs, err := c.AuditEvents()
	require.NoError(t, err)
	var got []cluster.AuditEvent
	for _, ev := range evs {
		if strings.HasPrefix(ev.RequestURI, path) {
			got = append(got, ev)
		}
	}
	require.Len(t, got, 2, "the LIST and the WATCH, not the create: %+v", got)
	assert.Equal(t, "list", got[0].Verb)
	assert.Equal(t, path+"?limit=7", got[0].RequestURI)
	assert.Equal(t, "watch", got[1].Verb)
	assert.Equal(t, path+"?watch=true&timeoutSeconds=1", got[1].RequestURI)
	for _, ev := range got {
		assert.Equal(t, cluster.AdminUser, ev.Username)
		assert.Equal(t, "Go-http-client/2.0", ev.UserAgent)
		assert.WithinDuration(t, time.Now(), ev.Received, time.Minute)
	}
}

// TestScenariosSim runs every scenario against the simulator, one
// simulator each.
func TestScenariosSim(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, newSimServer(t), "sc-"+sc.name)
		})
	}
}

// startFactory starts f until the test ends and waits for its caches.
func startFactory(t *testing.T, f *informer.Factory) {
	t.Helper()
	runFactory(t, f)
	wait, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, f.WaitForCacheSync(wait))
}

// runFactory starts f until the test ends, without waiting for its caches.
func runFactory(t *testing.T, f *informer.Factory) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.Start(ctx)
}

// newFactory returns a factory whose informers check that nothing changes a
// cached object: not the handlers of these tests, nor listwatch itself (a
// decoder that wrote into a part it had shared, with WithSharing). A change
// fails the test. The factories are shut down in the test's cleanup, so the
// last check reports to a test still running.
func newFactory(t *testing.T, cfg *reflector.Config, opts ...informer.FactoryOption) *informer.Factory {
	t.Helper()
	detector := informer.WithFactoryMutationDetector(time.Second, func(err error) { t.Error(err) })
	f, err := informer.NewFactory(cfg, append([]informer.FactoryOption{detector}, opts...)...)
	require.NoError(t, err)
	return f
}

// proxyFor starts a tcpproxy in front of srv, closed when the test ends.
func proxyFor(t *testing.T, srv server) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(srv.addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fills counts, among reqs, the requests that filled a cache (LIST or
// streaming list) and the plain watches.
func fills(reqs []apiRequest) (fill, watch int) {
	for _, r := range reqs {
		if r.fill() {
			fill++
		} else if r.verb == "watch" {
			watch++
		}
	}
	return fill, watch
}

// scenarioMatrix: pods, config maps, deployments and a custom resource's
// objects, watched in one namespace and in all, with and without a label
// selector, as JSON and protobuf (custom resources: JSON only), with
// streaming lists and with LIST then WATCH, and streaming lists again with
// events decoded on two goroutines and parts shared (WithSharing): 84
// informers at once; LIST+WATCH lists in pages of 7. The objects exist
// before the informers start (the initial list) and then change hundreds
// of times while they watch: creates, updates, moves out of and into the
// selector, deletes, an object deleted and created again.
func scenarioMatrix(t *testing.T, srv server, ns string) {
	nsA, nsB := ns+"-a", ns+"-b"
	srv.createNamespace(t, nsA)
	srv.createNamespace(t, nsB)
	srv.install(t, widgets)
	w := newWriter(t, srv)
	for _, k := range allKinds {
		w.createN(k, nsA, 10)
		w.createN(k, nsB, 10)
	}

	var ws []*watched
	parallel := []reflector.HTTPOption{reflector.WithDecodeWorkers(2)}
	for _, c := range []struct {
		label string
		ct    reflector.ContentType
		mode  reflector.Mode
		opts  []reflector.HTTPOption
	}{
		{"json/list-watch", reflector.JSON, reflector.ListWatch, nil},
		{"json/watch-list", reflector.JSON, reflector.WatchList, nil},
		{"protobuf/list-watch", reflector.Protobuf, reflector.ListWatch, nil},
		{"protobuf/watch-list", reflector.Protobuf, reflector.WatchList, nil},
		{"json/watch-list/parallel+sharing", reflector.JSON, reflector.WatchList, parallel},
		{"protobuf/watch-list/parallel+sharing", reflector.Protobuf, reflector.WatchList, parallel},
	} {
		fopts := []informer.FactoryOption{informer.WithListMode(c.mode),
			informer.WithHTTPOptions(append(c.opts, reflector.WithContentType(c.ct))...)}
		if c.mode == reflector.ListWatch {
			// Pages of 7: every list of 8 objects or more follows
			// continue tokens (no scenario lists the default 500).
			fopts = append(fopts, informer.WithPageSize(7))
		}
		if c.opts != nil {
			fopts = append(fopts, informer.WithSharing())
		}
		f := newFactory(t, srv.config(srv.addr(), false), fopts...)
		for _, k := range allKinds {
			if c.ct == reflector.Protobuf && !k.protobuf {
				continue
			}
			for _, target := range []reflector.Target{
				{Namespace: nsA}, {Namespace: nsA, LabelSelector: "tier=a"}, {}, {LabelSelector: "tier=a"},
			} {
				ws = append(ws, k.inFactory(t, f, target, c.label))
			}
		}
		startFactory(t, f)
	}
	nss := []string{nsA, nsB}
	converge(t, srv, time.Minute, nss, ws...)

	rnd := rand.New(rand.NewPCG(6, 6))
	start, before := time.Now(), w.n
	for round := range 3 {
		// Each kind and namespace's writes in order, interleaved.
		var lanes [][]func()
		for _, k := range allKinds {
			for _, n := range nss {
				lanes = append(lanes, w.churn(rnd, k, n, round))
			}
		}
		for more := true; more; {
			more = false
			for i := range lanes {
				if len(lanes[i]) > 0 {
					lanes[i][0]()
					lanes[i] = lanes[i][1:]
					more = true
				}
			}
		}
	}
	wrote := time.Since(start)
	took := converge(t, srv, time.Minute, nss, ws...)
	t.Logf("%d informers; %d writes while watching in %s; caught up %s after the last", len(ws), w.n-before, wrote.Round(time.Millisecond), took.Round(time.Millisecond))
	adds, updates, deletes := ws[0].rec.counts()
	t.Logf("%s: %d adds, %d updates, %d deletes", ws[0].label, adds, updates, deletes)
}

// scenarioCleanWatchEnd (reliability row 1): watches that the server ends
// cleanly (timeoutSeconds=1, the shortest) are reopened from the last
// resourceVersion, without a LIST, and nothing is missed in between.
func scenarioCleanWatchEnd(t *testing.T, srv server, ns string) {
	srv.createNamespace(t, ns)
	w := newWriter(t, srv)
	w.createN(pods, ns, 5)
	c, err := reflector.NewClient(srv.config(srv.addr(), false))
	require.NoError(t, err)
	start := time.Now()
	short := func(m reflector.Mode) reflectorTuning {
		return reflectorTuning{mode: m, minWatchTimeout: time.Second}
	}
	// The selectors tell the two informers' requests apart.
	lw := pods.alone(t, c, reflector.Target{Namespace: ns}, "list-watch", nil, short(reflector.ListWatch))
	wl := pods.alone(t, c, reflector.Target{Namespace: ns, LabelSelector: "app=e2e"}, "watch-list", nil, short(reflector.WatchList))
	runStandalone(t, lw, wl)
	for i := range 16 {
		w.touch(pods, ns, fmt.Sprint("o", i%5))
		time.Sleep(500 * time.Millisecond)
	}
	converge(t, srv, 30*time.Second, []string{ns}, lw, wl)

	reqs := srv.requests(t)
	for _, x := range []*watched{lw, wl} {
		rs := requestsFor(reqs, pods, ns, x.target.LabelSelector, start)
		fill, watches := fills(rs)
		assert.Equal(t, 1, fill, "%s: cache fills; requests:\n%v", x.label, rs)
		assert.GreaterOrEqual(t, watches, 4, "%s: the watches were not reopened after their timeout", x.label)
		last := uint64(0)
		for _, r := range rs[1:] {
			rv := rvNumber(r.query.Get("resourceVersion"))
			if r.verb != "watch" || r.fill() {
				continue
			}
			assert.Equal(t, "1", r.query.Get("timeoutSeconds"), "%s: %v", x.label, r)
			if rv == 0 || rv < last {
				t.Errorf("%s: a watch resumed from resourceVersion %q after %d: %v", x.label, r.query.Get("resourceVersion"), last, r)
			}
			last = max(last, rv)
		}
		t.Logf("%s: 1 fill, %d watches reopened from the last resourceVersion in %s; errors reported:%v", x.label, watches, time.Since(start).Round(time.Second), x.errs)
	}
}

// scenarioCut (reliability row 3): the connection is cut (RST on both
// sides) four times while objects change; each time the watch resumes
// from the last resourceVersion, without a LIST.
func scenarioCut(t *testing.T, srv server, ns string) {
	srv.createNamespace(t, ns)
	w := newWriter(t, srv)
	w.createN(pods, ns, 10)
	p := proxyFor(t, srv)
	start := time.Now()
	fl := newFactory(t, srv.config(p.Addr(), false), informer.WithListMode(reflector.ListWatch))
	lw := pods.inFactory(t, fl, reflector.Target{Namespace: ns}, "list-watch")
	fw := newFactory(t, srv.config(p.Addr(), false), informer.WithListMode(reflector.WatchList))
	wl := pods.inFactory(t, fw, reflector.Target{Namespace: ns, LabelSelector: "app=e2e"}, "watch-list")
	startFactory(t, fl)
	startFactory(t, fw)

	rnd := rand.New(rand.NewPCG(3, 3))
	for round := range 4 {
		for _, op := range w.churn(rnd, pods, ns, round) {
			op()
		}
		p.CutAll()
		for _, op := range w.churn(rnd, pods, ns, 10+round) {
			op()
		}
		time.Sleep(time.Second)
	}
	took := converge(t, srv, time.Minute, []string{ns}, lw, wl)

	reqs := srv.requests(t)
	for _, x := range []*watched{lw, wl} {
		rs := requestsFor(reqs, pods, ns, x.target.LabelSelector, start)
		fill, watches := fills(rs)
		assert.Equal(t, 1, fill, "%s: cache fills (a cut must not cause a relist); requests:\n%v", x.label, rs)
		t.Logf("%s: 1 fill, %d watches; errors reported:%v", x.label, watches, x.errs)
	}
	t.Logf("%d writes, 4 cuts, %d connections accepted; caught up %s after the last write", w.n, p.Accepted(), took.Round(time.Millisecond))
}

// scenarioCompaction (reliability row 10): while the informers are cut
// off, objects change and one is deleted, etcd is compacted and the
// apiserver restarted (its watch cache forgets); when they reconnect their
// resourceVersion is too old (410), they list again, and the delete they
// never saw is delivered (final state unknown), as is a name deleted and
// created again (delete, then add).
func scenarioCompaction(t *testing.T, srv server, ns string) {
	srv.createNamespace(t, ns)
	w := newWriter(t, srv)
	w.createN(pods, ns, 6)
	p := proxyFor(t, srv)
	fl := newFactory(t, srv.config(p.Addr(), false), informer.WithListMode(reflector.ListWatch))
	lw := pods.inFactory(t, fl, reflector.Target{Namespace: ns}, "list-watch")
	fw := newFactory(t, srv.config(p.Addr(), false), informer.WithListMode(reflector.WatchList))
	wl := pods.inFactory(t, fw, reflector.Target{Namespace: ns, LabelSelector: "app=e2e"}, "watch-list")
	startFactory(t, fl)
	startFactory(t, fw)
	w.touch(pods, ns, "o0")
	converge(t, srv, 30*time.Second, []string{ns}, lw, wl)

	p.BlackHole() // reconnections hang
	p.CutAll()
	cut := time.Now()
	w.touch(pods, ns, "o1")
	w.remove(pods, ns, "o2")
	w.remove(pods, ns, "o3")
	w.create(pods, ns, "o3", "a") // a new uid
	w.create(pods, ns, "o6", "b")
	srv.compact(t)
	srv.restart(t)
	w.touch(pods, ns, "o4")
	p.Resume()
	took := converge(t, srv, 90*time.Second, []string{ns}, lw, wl)

	reqs := srv.requests(t)
	for _, x := range []*watched{lw, wl} {
		expired := 0
		for _, e := range x.errs.since(cut) {
			if isExpired(e.err) {
				expired++
			}
		}
		assert.Equal(t, 1, expired, "%s: want one 410 after the cut; errors:%v", x.label, x.errs)
		rs := requestsFor(reqs, pods, ns, x.target.LabelSelector, cut)
		fill, _ := fills(rs)
		assert.Equal(t, 1, fill, "%s: cache fills after the cut; requests:\n%v", x.label, rs)
		assert.Equal(t, []bool{true}, x.rec.deletesOf(ns+"/o2"), "%s: the delete missed while cut off, delivered with its final state unknown", x.label)
		assert.Equal(t, []bool{true}, x.rec.deletesOf(ns+"/o3"), "%s: the object deleted and created again while cut off: one delete, then an add", x.label)
		t.Logf("%s: %d fill after the cut; errors reported:%v", x.label, fill, x.errs)
	}
	t.Logf("caught up %s after reconnecting (%s after the cut)", took.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond))
}

// scenarioStall (reliability rows 17 and 18): the proxy stops forwarding
// in both directions and closes nothing: the stream goes silent, as over a
// half-open TCP connection. An informer with the DEFAULTS (HTTP/2 with a
// PING after 5 s without a frame and 5 s to answer it; or HTTP/1.1 with
// the 90 s watchdog) must notice; the time it takes is measured. Then the
// proxy resumes and the informer catches up without relisting.
// client-go v0.37.2 takes 45 s (TestClientGoStallDetection).
func scenarioStall(http1 bool) func(t *testing.T, srv server, ns string) {
	return func(t *testing.T, srv server, ns string) {
		srv.createNamespace(t, ns)
		w := newWriter(t, srv)
		w.createN(pods, ns, 5)
		p := proxyFor(t, srv)
		cfg := srv.config(p.Addr(), false)
		cfg.DisableHTTP2 = http1
		start := time.Now()
		f := newFactory(t, cfg)
		x := pods.inFactory(t, f, reflector.Target{Namespace: ns}, "defaults")
		startFactory(t, f)
		w.touch(pods, ns, "o0")
		converge(t, srv, 30*time.Second, []string{ns}, x)

		p.Stall()
		stalled := time.Now()
		w.touch(pods, ns, "o1")
		w.remove(pods, ns, "o2")
		w.create(pods, ns, "o5", "a")
		bound, proto := 15*time.Second, "HTTP/2"
		if http1 {
			bound, proto = 100*time.Second, "HTTP/1.1"
		}
		var noticed loggedError
		for {
			if errs := x.errs.since(stalled); len(errs) > 0 {
				noticed = errs[0]
				break
			}
			if time.Since(stalled) > 2*bound {
				t.Fatalf("the stall was not noticed within %s", 2*bound)
			}
			time.Sleep(20 * time.Millisecond)
		}
		detected := noticed.at.Sub(stalled)
		recordTiming(t, fmt.Sprintf("listwatch informer with defaults (%s): stall noticed after", proto), detected)
		t.Logf("first error: %v", noticed.err)
		assert.Less(t, detected, bound, "a stalled %s connection noticed too late", proto)
		p.Resume()
		took := converge(t, srv, time.Minute, []string{ns}, x)
		t.Logf("caught up %s after Resume", took.Round(time.Millisecond))
		fill, watches := fills(requestsFor(srv.requests(t), pods, ns, "", start))
		assert.Equal(t, 1, fill, "a stall must not cause a relist")
		t.Logf("1 fill, %d watches; errors reported:%v", watches, x.errs)
	}
}

// scenarioRestart (reliability row 21): ten informers, half with
// streaming lists, some of all namespaces; the apiserver restarts (every
// watch ends, the watch cache starts again from storage); objects change
// after. Each informer catches up with at most one cache fill, from its
// last resourceVersion, and no LastSyncResourceVersion goes back.
func scenarioRestart(t *testing.T, srv server, ns string) {
	const namespaced = 8
	var nss []string
	w := newWriter(t, srv)
	for i := range namespaced {
		n := fmt.Sprint(ns, "-", i)
		nss = append(nss, n)
		srv.createNamespace(t, n)
		w.createN(pods, n, 3)
	}
	fl := newFactory(t, srv.config(srv.addr(), false), informer.WithListMode(reflector.ListWatch))
	fw := newFactory(t, srv.config(srv.addr(), false), informer.WithListMode(reflector.WatchList))
	var ws []*watched
	for i, n := range nss {
		f, label := fl, "list-watch"
		if i%2 == 1 {
			f, label = fw, "watch-list"
		}
		ws = append(ws, pods.inFactory(t, f, reflector.Target{Namespace: n}, label))
	}
	ws = append(ws,
		pods.inFactory(t, fl, reflector.Target{LabelSelector: "tier=a"}, "list-watch"),
		pods.inFactory(t, fw, reflector.Target{LabelSelector: "tier=b"}, "watch-list"))
	startFactory(t, fl)
	startFactory(t, fw)
	w.touch(pods, nss[0], "o0")
	converge(t, srv, 30*time.Second, nss, ws...)
	synced := map[*watched]uint64{}
	for _, x := range ws {
		synced[x] = rvNumber(x.lastRV())
	}
	stop := monitorRVs(t, ws)

	restarted := time.Now()
	srv.restart(t)
	for _, n := range nss {
		w.touch(pods, n, "o1")
	}
	w.remove(pods, nss[0], "o2")
	w.create(pods, nss[1], "o3", "a")
	took := converge(t, srv, 90*time.Second, nss, ws...)
	stop()

	reqs := srv.requests(t)
	var summary []string
	for _, x := range ws {
		rs := requestsFor(reqs, pods, x.target.Namespace, x.target.LabelSelector, restarted)
		fill, watches := fills(rs)
		assert.LessOrEqual(t, fill, 1, "%s: cache fills after the restart; requests:\n%v", x.label, rs)
		for _, r := range rs {
			if r.probe() {
				continue // the newest state, to see whether the server came back behind the cache
			}
			if rv := rvNumber(r.query.Get("resourceVersion")); rv < synced[x] {
				t.Errorf("%s: after the restart, %v asks for a resourceVersion older than the cache's (%d)", x.label, r, synced[x])
			}
		}
		back := "no request"
		if len(rs) > 0 {
			back = fmt.Sprintf("first request %s after the restart began", rs[0].at.Sub(restarted).Round(time.Millisecond))
		}
		summary = append(summary, fmt.Sprintf("%s: %d fill, %d watches; %s", x.label, fill, watches, back))
	}
	t.Logf("after the restart, caught up in %s:\n\t%s", took.Round(time.Millisecond), strings.Join(summary, "\n\t"))
}

// monitorRVs samples the informers' LastSyncResourceVersion every 10 ms
// until the returned stop is called, and fails the test if one goes back.
func monitorRVs(t *testing.T, ws []*watched) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	last := make([]uint64, len(ws))
	var back []string
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			for i, x := range ws {
				rv := rvNumber(x.lastRV())
				if rv < last[i] && len(back) < 10 {
					back = append(back, fmt.Sprintf("%s: LastSyncResourceVersion went back from %d to %d", x.label, last[i], rv))
				}
				last[i] = max(last[i], rv)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		for _, b := range back {
			t.Error(b)
		}
	}
}

// scenarioForbidden: a user bound to no role. WaitForCacheSync fails with
// an error that names each resource and the 403.
func scenarioForbidden(t *testing.T, srv server, ns string) {
	srv.createNamespace(t, ns)
	f := newFactory(t, srv.config(srv.addr(), true))
	pods.inFactory(t, f, reflector.Target{Namespace: ns}, "nobody")
	configMaps.inFactory(t, f, reflector.Target{}, "nobody")
	runFactory(t, f)
	// Long enough for the first 403 to come back under CI's load (the
	// error then names it); the informers never sync, so all of it passes.
	wait, cancelWait := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancelWait()
	err := f.WaitForCacheSync(wait)
	require.Error(t, err)
	msg := err.Error()
	t.Logf("WaitForCacheSync: %v", err)
	// One line per informer, naming it and the 403.
	assert.Regexp(t, fmt.Sprintf(`(^|\n)[^\n]*pods in %q: [^\n]*403 Forbidden`, ns), msg)
	assert.Regexp(t, `(^|\n)configmaps: [^\n]*403 Forbidden`, msg)
}
