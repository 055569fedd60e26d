package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/reflector"
)

// etcd under live informers: etcd stopped and started again on the same
// data (kube-apiserver keeps running), and etcd restored from a cold copy
// of its data dir taken earlier (resource versions go back in time), with
// and without restarting kube-apiserver afterwards. listwatch informers
// (LIST+WATCH and streaming lists) run side by side with a client-go
// SharedIndexInformer on the same config maps; each is timed until its
// cache and its handler's view equal a fresh LIST, its requests counted
// from the audit log, and what its handlers were told of each object
// recorded.

// clientGoUA tells the client-go informer's requests apart in the audit
// log (the writers' dynamic client has client-go's default user agent).
const clientGoUA = "client-go-informer"

// side is one informer under test, of either library: what its handler
// was told, in order, the view it built, its cache and its errors.
type side struct {
	label  string
	cache  func() []metav1.Object
	lastRV func() string
	synced func() bool
	errs   *errorLog
	logs   *syncBuffer // listwatch's log; nil for client-go (klog, on stderr)

	mu     sync.Mutex
	events []handled
	view   map[string]string // key → rv#uid
}

// handled is one notification a handler got.
type handled struct {
	at             time.Time
	typ            string // Add, Update, Delete
	key, old, rv   string
	uid            string
	unknown, initl bool
}

func (h handled) String() string {
	s := fmt.Sprintf("%s %s %s", h.at.Format("15:04:05.000"), h.typ, h.key)
	switch h.typ {
	case "Update":
		s += fmt.Sprintf(" %s->%s", h.old, h.rv)
	default:
		s += "@" + h.rv
	}
	s += " uid=" + h.uid[:min(8, len(h.uid))]
	if h.unknown {
		s += " (final state unknown)"
	}
	if h.initl {
		s += " (initial list)"
	}
	return s
}

func newSide(label string) *side {
	return &side{label: label, errs: &errorLog{}, view: map[string]string{}}
}

func (s *side) record(typ string, old, obj metav1.Object, unknown, initial bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := handled{at: time.Now(), typ: typ, key: keyOf(obj), rv: obj.GetResourceVersion(), uid: string(obj.GetUID()), unknown: unknown, initl: initial}
	if old != nil {
		h.old = old.GetResourceVersion()
	}
	s.events = append(s.events, h)
	if typ == "Delete" {
		delete(s.view, h.key)
	} else {
		s.view[h.key] = h.rv + "#" + h.uid
	}
}

func (s *side) viewLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{}
	for k, v := range s.view {
		out = append(out, k+"@"+v)
	}
	slices.Sort(out)
	return out
}

func (s *side) cacheLines() []string { return objLines(s.cache()) }

// eventsOf returns what the handler was told of key since t.
func (s *side) eventsOf(key string, t time.Time) []handled {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []handled
	for _, h := range s.events {
		if h.key == key && !h.at.Before(t) {
			out = append(out, h)
		}
	}
	return out
}

// backwards returns the Adds and Updates whose resourceVersion is not above
// every one their key had shown, with the time of each.
func (s *side) backwards() []handled {
	s.mu.Lock()
	defer s.mu.Unlock()
	high := map[string]uint64{}
	var out []handled
	for _, h := range s.events {
		if h.typ == "Delete" {
			continue
		}
		rv := rvNumber(h.rv)
		if rv <= high[h.key] {
			out = append(out, h)
		}
		high[h.key] = max(high[h.key], rv)
	}
	return out
}

func objLines[T metav1.Object](objs []T) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, keyOf(o)+"@"+o.GetResourceVersion()+"#"+string(o.GetUID()))
	}
	slices.Sort(out)
	return out
}

// syncBuffer is a bytes.Buffer safe for concurrent use: a slog handler's
// output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// lwHandler adapts a side to processor.Handler[*corev1.ConfigMap].
type lwHandler struct{ s *side }

func (h lwHandler) OnAdd(obj *corev1.ConfigMap, initial bool) {
	h.s.record("Add", nil, obj, false, initial)
}
func (h lwHandler) OnUpdate(old, obj *corev1.ConfigMap) { h.s.record("Update", old, obj, false, false) }
func (h lwHandler) OnDelete(obj *corev1.ConfigMap, unknown bool) {
	h.s.record("Delete", nil, obj, unknown, false)
}

// listwatchSide starts a listwatch informer of the config maps in ns, in a
// factory of its own with mode, until the test ends.
func listwatchSide(t *testing.T, srv *realServer, ns string, mode reflector.Mode, label string, opts ...informer.FactoryOption) *side {
	t.Helper()
	s := newSide("listwatch " + label)
	s.logs = &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts = append([]informer.FactoryOption{informer.WithListMode(mode), informer.WithFactoryLogger(logger)}, opts...)
	f := newFactory(t, srv.config(srv.addr(), false), opts...)
	inf, err := informer.For[*corev1.ConfigMap](f, reflector.Target{Namespace: ns})
	require.NoError(t, err)
	require.NoError(t, inf.SetWatchErrorHandler(s.errs.add))
	reg := inf.AddEventHandler(lwHandler{s})
	s.synced = reg.HasSynced
	s.lastRV = inf.LastSyncResourceVersion
	s.cache = func() []metav1.Object {
		var out []metav1.Object
		for _, o := range inf.Indexer().List() {
			out = append(out, o)
		}
		return out
	}
	runFactory(t, f)
	return s
}

// clientGoSide starts a client-go SharedIndexInformer of the config maps
// in ns, with client-go's defaults, until the test ends.
func clientGoSide(t *testing.T, srv *realServer, ns string) *side {
	t.Helper()
	s := newSide("client-go")
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host:            srv.c.URL(),
		BearerToken:     srv.c.AdminToken(),
		TLSClientConfig: rest.TLSClientConfig{CAData: srv.c.CAPEM()},
		UserAgent:       clientGoUA,
	})
	require.NoError(t, err)
	fac := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := fac.Core().V1().ConfigMaps().Informer()
	require.NoError(t, inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { s.errs.add(err) }))
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { s.record("Add", nil, obj.(metav1.Object), false, initial) },
		UpdateFunc: func(old, obj any) {
			s.record("Update", old.(metav1.Object), obj.(metav1.Object), false, false)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				s.record("Delete", nil, d.Obj.(metav1.Object), true, false)
				return
			}
			s.record("Delete", nil, obj.(metav1.Object), false, false)
		},
	})
	require.NoError(t, err)
	s.synced = reg.HasSynced
	s.lastRV = inf.LastSyncResourceVersion
	s.cache = func() []metav1.Object {
		var out []metav1.Object
		for _, o := range inf.GetStore().List() {
			out = append(out, o.(metav1.Object))
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	fac.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		fac.Shutdown()
	})
	return s
}

// relistEvery is the relist interval of the informer that relists on a
// timer (informer.WithRelistInterval).
const relistEvery = 30 * time.Second

// startSides starts the informers under test: listwatch with LIST+WATCH
// and with streaming lists, client-go, and, if relisting, listwatch with
// LIST+WATCH relisting every relistEvery; and waits until they synced.
func startSides(t *testing.T, srv *realServer, ns string, relisting bool) []*side {
	t.Helper()
	sides := []*side{
		listwatchSide(t, srv, ns, reflector.ListWatch, "list-watch"),
		listwatchSide(t, srv, ns, reflector.WatchList, "watch-list"),
		clientGoSide(t, srv, ns),
	}
	if relisting {
		sides = append(sides, listwatchSide(t, srv, ns, reflector.ListWatch, "list-watch+relist-30s", informer.WithRelistInterval(relistEvery)))
	}
	deadline := time.Now().Add(time.Minute)
	for _, s := range sides {
		for !s.synced() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not sync within a minute; errors:%v", s.label, s.errs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return sides
}

// serverLines returns the config maps of ns from a fresh LIST, as lines.
func serverLines(t *testing.T, srv *realServer, ns string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := srv.resource(configMaps, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var objs []metav1.Object
	for i := range l.Items {
		objs = append(objs, &l.Items[i])
	}
	return objLines(objs), nil
}

// etcdLines returns the config maps of ns as etcd holds them: "ns/name@rev".
func etcdLines(t *testing.T, srv *realServer, ns string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := "/registry/configmaps/" + ns + "/"
	kvs, err := srv.c.EtcdKeys(ctx, prefix)
	require.NoError(t, err)
	out := []string{}
	for _, kv := range kvs {
		out = append(out, fmt.Sprintf("%s/%s@%d", ns, strings.TrimPrefix(kv.Key, prefix), kv.ModRevision))
	}
	return out
}

// withoutUIDs drops the "#uid" of lines.
func withoutUIDs(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i], _, _ = strings.Cut(l, "#")
	}
	return out
}

// outcome is how long a side took to converge, or that it did not.
type outcome struct {
	took      time.Duration
	converged bool
	last      string // the last difference seen
}

// convergeSides polls until the cache and the handler's view of every side
// equal a fresh LIST (taken again at every poll), or within passes, or
// (with required) once the required sides converged and patience passed.
// It fails nothing: it returns each side's outcome, and the last LIST.
func convergeSides(t *testing.T, srv *realServer, ns string, within time.Duration, sides []*side, required ...*side) (map[*side]outcome, []string) {
	return convergeSidesPatient(t, srv, ns, within, within, sides, required...)
}

func convergeSidesPatient(t *testing.T, srv *realServer, ns string, within, patience time.Duration, sides []*side, required ...*side) (map[*side]outcome, []string) {
	t.Helper()
	start := time.Now()
	out := map[*side]outcome{}
	var want []string
	for {
		got, err := serverLines(t, srv, ns)
		if err == nil {
			want = got
			for _, s := range sides {
				if out[s].converged {
					continue
				}
				o := outcome{}
				if c := s.cacheLines(); !slices.Equal(want, c) {
					o.last = "cache: " + diff(want, c)
				} else if v := s.viewLines(); !slices.Equal(want, v) {
					o.last = "handler: " + diff(want, v)
				} else {
					o = outcome{took: time.Since(start), converged: true}
				}
				out[s] = o
			}
		}
		done, enough := true, len(required) > 0 && time.Since(start) > patience
		for _, s := range sides {
			done = done && out[s].converged
		}
		for _, s := range required {
			enough = enough && out[s].converged
		}
		if done || enough || time.Since(start) > within {
			return out, want
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reportConvergence logs each side's outcome and fails the test for a
// listwatch informer that did not converge.
func reportConvergence(t *testing.T, phase string, within time.Duration, res map[*side]outcome, sides []*side) {
	t.Helper()
	for _, s := range sides {
		o := res[s]
		if o.converged {
			t.Logf("%s: %s converged %s after the last write (lastSyncRV %s)", phase, s.label, o.took.Round(time.Millisecond), s.lastRV())
			continue
		}
		msg := fmt.Sprintf("%s: %s did NOT converge within %s (lastSyncRV %s): %s", phase, s.label, within, s.lastRV(), o.last)
		if strings.HasPrefix(s.label, "listwatch") {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

// requestSummary counts the LIST and WATCH requests of each library since
// t0 from the audit log, and lists the first ones.
func requestSummary(t *testing.T, srv *realServer, ns string, t0 time.Time) string {
	t.Helper()
	evs, err := srv.c.AuditEvents()
	require.NoError(t, err)
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	type counts struct {
		list, watch int
		lines       []string
	}
	by := map[string]*counts{}
	for _, ev := range evs {
		if ev.Received.Before(t0) || !strings.HasPrefix(ev.RequestURI, path) {
			continue
		}
		who := ""
		switch {
		case strings.HasPrefix(ev.UserAgent, "listwatch/"):
			who = "listwatch"
		case ev.UserAgent == clientGoUA:
			who = "client-go"
		default:
			continue
		}
		c := by[who]
		if c == nil {
			c = &counts{}
			by[who] = c
		}
		if ev.Verb == "list" {
			c.list++
		} else {
			c.watch++
		}
		if len(c.lines) < 40 {
			c.lines = append(c.lines, fmt.Sprintf("+%6.2fs %-5s %s", ev.Received.Sub(t0).Seconds(), ev.Verb, strings.TrimPrefix(ev.RequestURI, path)))
		}
	}
	var b strings.Builder
	for _, who := range []string{"listwatch", "client-go"} {
		c := by[who]
		if c == nil {
			fmt.Fprintf(&b, "\n%s: no request", who)
			continue
		}
		fmt.Fprintf(&b, "\n%s: %d list, %d watch requests (both listwatch informers together):\n\t%s", who, c.list, c.watch, strings.Join(c.lines, "\n\t"))
	}
	return b.String()
}

// waitReady polls kube-apiserver's /readyz (which checks etcd) until 200.
func waitAPIReady(t *testing.T, srv *realServer, within time.Duration) time.Duration {
	t.Helper()
	client := srv.c.HTTPClient(srv.c.AdminToken())
	defer client.CloseIdleConnections()
	start := time.Now()
	for {
		resp, err := client.Get(srv.c.URL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		if time.Since(start) > within {
			t.Fatalf("kube-apiserver not ready within %s (last: %v)", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func logErrorsAndLogs(t *testing.T, sides []*side, since time.Time) {
	t.Helper()
	for _, s := range sides {
		t.Logf("%s reported to its watch error handler since the fault:%v", s.label, errsString(s.errs.since(since)))
		if s.logs != nil {
			if l := strings.TrimSpace(s.logs.String()); l != "" {
				t.Logf("%s logged:\n%s", s.label, l)
			}
		}
	}
}

func errsString(errs []loggedError) string {
	var b strings.Builder
	for i, e := range errs {
		if i == 30 {
			fmt.Fprintf(&b, "\n\t... and %d more", len(errs)-30)
			break
		}
		fmt.Fprintf(&b, "\n\t%s %v", e.at.Format("15:04:05.000"), e.err)
	}
	if len(errs) == 0 {
		return " none"
	}
	return b.String()
}

// TestEtcdRestart: etcd stops for 15 s while kube-apiserver and the
// informers keep running; a write is attempted meanwhile; etcd starts
// again on the same data; objects change after. Every informer converges,
// no handler sees an object's resourceVersion go back.
func TestEtcdRestart(t *testing.T) {
	t.Parallel()
	const ns = "etcd-restart"
	srv := startReal(t, true)
	srv.createNamespace(t, ns)
	w := newWriter(t, srv)
	w.createN(configMaps, ns, 5)
	sides := startSides(t, srv, ns, false)
	w.touch(configMaps, ns, "o0")
	res, _ := convergeSides(t, srv, ns, 30*time.Second, sides)
	reportConvergence(t, "before", 30*time.Second, res, sides)

	stopped := time.Now()
	require.NoError(t, srv.c.StopEtcd())
	t.Logf("etcd stopped in %s", time.Since(stopped).Round(time.Millisecond))
	// A write while etcd is down.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err := srv.resource(configMaps, ns).Create(ctx, configMaps.object(ns, "during", map[string]string{"app": "e2e"}), metav1.CreateOptions{})
	cancel()
	t.Logf("a create while etcd is down: %v", err)
	for time.Since(stopped) < 15*time.Second {
		time.Sleep(100 * time.Millisecond) // the outage itself
	}
	start := time.Now()
	require.NoError(t, srv.c.StartEtcd(context.Background()))
	t.Logf("etcd down %s, healthy again %s after start; apiserver ready %s later",
		start.Sub(stopped).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), waitAPIReady(t, srv, time.Minute).Round(time.Millisecond))

	w.touch(configMaps, ns, "o1")
	w.remove(configMaps, ns, "o2")
	w.create(configMaps, ns, "o5", "a")
	res, _ = convergeSides(t, srv, ns, 2*time.Minute, sides)
	reportConvergence(t, "after etcd restart", 2*time.Minute, res, sides)
	t.Logf("requests since etcd stopped:%s", requestSummary(t, srv, ns, stopped))
	logErrorsAndLogs(t, sides, stopped)
	for _, s := range sides {
		for _, h := range s.backwards() {
			t.Errorf("%s: resourceVersion went back: %s", s.label, h)
		}
		for _, key := range []string{"o1", "o2", "o5"} {
			t.Logf("%s: %s since etcd stopped: %v", s.label, key, s.eventsOf(ns+"/"+key, stopped))
		}
	}
}

// TestEtcdRestore: the disaster-recovery procedure. Config maps o0..o5
// exist when etcd's data dir is copied (etcd stopped for it); the
// informers start; then o1 is updated twice, o2 deleted, o6 created, o3
// updated; etcd is stopped, its data dir replaced by the copy, started
// again (with kube-apiserver stopped before and started after, as
// documented, or left running); then o4 is updated and o7 created. o1 must
// revert, o2 reappear, o6 vanish, and every cache must equal a fresh LIST.
func TestEtcdRestore(t *testing.T) {
	t.Parallel()
	for _, restartAPI := range []bool{true, false} {
		name := "apiserver-restarted"
		if !restartAPI {
			name = "apiserver-kept"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			etcdRestore(t, restartAPI)
		})
	}
}

func etcdRestore(t *testing.T, restartAPI bool) {
	const ns = "etcd-restore"
	srv := startReal(t, true)
	srv.createNamespace(t, ns)
	w := newWriter(t, srv)
	w.createN(configMaps, ns, 6)

	backup := filepath.Join(t.TempDir(), "etcd-backup")
	require.NoError(t, srv.c.StopEtcd())
	require.NoError(t, srv.c.BackupEtcd(backup))
	require.NoError(t, srv.c.StartEtcd(context.Background()))
	waitAPIReady(t, srv, time.Minute)
	backupLines := etcdLines(t, srv, ns)
	t.Logf("backup taken: %v", backupLines)

	sides := startSides(t, srv, ns, true)
	w.touch(configMaps, ns, "o1")
	w.touch(configMaps, ns, "o1")
	w.remove(configMaps, ns, "o2")
	w.create(configMaps, ns, "o6", "a")
	w.touch(configMaps, ns, "o3")
	res, _ := convergeSides(t, srv, ns, 30*time.Second, sides)
	reportConvergence(t, "before the restore", 30*time.Second, res, sides)
	before := map[*side]string{}
	for _, s := range sides {
		before[s] = s.lastRV()
	}
	t.Logf("before the restore, etcd holds %v", etcdLines(t, srv, ns))

	restored := time.Now()
	if restartAPI {
		require.NoError(t, srv.c.StopAPIServer())
	}
	require.NoError(t, srv.c.StopEtcd())
	require.NoError(t, srv.c.RestoreEtcd(backup))
	require.NoError(t, srv.c.StartEtcd(context.Background()))
	if restartAPI {
		require.NoError(t, srv.c.StartAPIServer(context.Background()))
	}
	ready := waitAPIReady(t, srv, time.Minute)
	rev, err := srv.c.EtcdRevision(context.Background())
	require.NoError(t, err)
	t.Logf("restored in %s (apiserver restarted: %v), etcd at revision %d; caches were at %v",
		time.Since(restored).Round(time.Millisecond), restartAPI, rev, before)
	require.Equal(t, backupLines, etcdLines(t, srv, ns), "etcd serves the backup")

	// Writes after the restore, through the apiserver; not fatal: without
	// a restart, its watch cache is stale.
	ctx := context.Background()
	if o4, err := srv.resource(configMaps, ns).Get(ctx, "o4", metav1.GetOptions{}); err != nil {
		t.Logf("after the restore, GET o4: %v", err)
	} else {
		o4.SetLabels(map[string]string{"app": "e2e", "after": "restore"})
		_, err := srv.resource(configMaps, ns).Update(ctx, o4, metav1.UpdateOptions{})
		t.Logf("after the restore, update of o4 (read at %s): err=%v", o4.GetResourceVersion(), err)
	}
	_, err = srv.resource(configMaps, ns).Create(ctx, configMaps.object(ns, "o7", map[string]string{"app": "e2e"}), metav1.CreateOptions{})
	t.Logf("after the restore, create of o7: err=%v", err)
	wrote := time.Now()
	etcdNow := etcdLines(t, srv, ns)
	listNow, err := serverLines(t, srv, ns)
	require.NoError(t, err)
	t.Logf("after the restore and its writes, etcd holds %v; a LIST answers %v", etcdNow, withoutUIDs(listNow))
	if !slices.Equal(etcdNow, withoutUIDs(listNow)) {
		t.Logf("kube-apiserver's LIST differs from etcd: its watch cache is stale")
	}

	// With the apiserver restarted, every listwatch informer must
	// converge: its watch ended with a GOAWAY as the apiserver shut down,
	// or its next attempt found it out of reach, so the Reflector probes
	// it with a list of one object, finds it behind and takes its state,
	// where a watch resumed past the restored writes would never deliver
	// them. client-go's informer has no such check; it is given 10 s more
	// and logged. With the apiserver kept, its watch cache is stale and no
	// client sees the restore: only the relisting informer must match
	// what the LIST answers.
	const within = 150 * time.Second
	var required []*side
	for _, s := range sides {
		if s.label != "client-go" && (restartAPI || strings.Contains(s.label, "relist")) {
			required = append(required, s)
		}
	}
	res, want := convergeSidesPatient(t, srv, ns, within, 10*time.Second, sides, required...)
	reportConvergence(t, "after the restore", within, res, required)
	for _, s := range sides {
		if !slices.Contains(required, s) {
			o := res[s]
			t.Logf("after the restore: %s converged=%v in %s (lastSyncRV %s) %s", s.label, o.converged, o.took.Round(time.Millisecond), s.lastRV(), o.last)
		}
	}
	if !restartAPI {
		for _, s := range sides {
			t.Logf("%s's cache vs etcd: equal=%v; cache %v", s.label, slices.Equal(withoutUIDs(s.cacheLines()), etcdLines(t, srv, ns)), withoutUIDs(s.cacheLines()))
		}
	}
	t.Logf("the LIST they were compared with: %v (etcd: %v); %s after the restore's writes", want, etcdLines(t, srv, ns), time.Since(wrote).Round(time.Millisecond))
	t.Logf("requests since the restore began (apiserver ready %s after it):%s", ready.Round(time.Millisecond), requestSummary(t, srv, ns, restored))
	logErrorsAndLogs(t, sides, restored)
	for _, s := range sides {
		for _, h := range s.backwards() {
			if h.at.Before(restored) {
				t.Errorf("%s: resourceVersion went back before the restore: %s", s.label, h)
			} else {
				t.Logf("%s: resourceVersion back across the restore: %s", s.label, h)
			}
		}
		for _, c := range []struct{ key, what string }{
			{"o1", "reverted"}, {"o2", "reappeared"}, {"o6", "vanished"}, {"o4", "updated after"}, {"o7", "created after"},
		} {
			t.Logf("%s: %s (%s) since the restore: %v", s.label, c.key, c.what, s.eventsOf(ns+"/"+c.key, restored))
		}
	}
	assert.NotEmpty(t, want)
}
