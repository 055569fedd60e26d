package reliability

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// Timings every test uses unless it says otherwise: short enough that the
// package runs in well under two minutes with -race, long enough for a
// loaded two-core machine.
const (
	bookmarkEvery = 100 * time.Millisecond // the simulator's bookmark interval
	idleTimeout   = 5 * time.Second        // the watchdog, well above bookmarkEvery
	backoffMin    = 10 * time.Millisecond
	backoffMax    = 200 * time.Millisecond
	convergeBound = 10 * time.Second // (C): the cache equals the server within this
)

// newServer starts a simulator serving pods, with frequent bookmarks.
func newServer(t *testing.T, opts ...apisim.Option) *apisim.Server {
	t.Helper()
	s := apisim.New(append([]apisim.Option{
		apisim.WithResources(apisim.Pods()),
		apisim.WithBookmarkInterval(bookmarkEvery),
	}, opts...)...)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func podsOf(s *apisim.Server) apisim.Objects[*corev1.Pod] {
	return apisim.Of[*corev1.Pod](s, apisim.Pods())
}

// smallPod is a pod small enough that thousands of writes stay cheap.
func smallPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metaFor(namespace, name, map[string]string{"app": "web"}),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/web:1"}}},
	}
}

func metaFor(namespace, name string, lbls map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: lbls}
}

// writer changes pods on a simulator and fails the test on an error.
type writer struct {
	t    testing.TB
	pods apisim.Objects[*corev1.Pod]
	gen  int
}

func newWriter(t testing.TB, s *apisim.Server) *writer {
	return &writer{t: t, pods: podsOf(s)}
}

func (w *writer) create(namespace, name string) *corev1.Pod {
	w.t.Helper()
	p, err := w.pods.Create(smallPod(namespace, name))
	if err != nil {
		w.t.Fatalf("create %s/%s: %v", namespace, name, err)
	}
	return p
}

// createAsReplayed creates a pod stamped as created at a fixed time, as a
// script replayed on two servers makes it on both: two apiservers over one
// etcd serve one creationTimestamp for it, however far apart their
// replays ran.
func (w *writer) createAsReplayed(namespace, name string) *corev1.Pod {
	w.t.Helper()
	pod := smallPod(namespace, name)
	pod.CreationTimestamp = metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := w.pods.Create(pod)
	if err != nil {
		w.t.Fatalf("create %s/%s: %v", namespace, name, err)
	}
	return p
}

// createN creates pods p0..p{n-1} in namespace.
func (w *writer) createN(namespace string, n int) {
	w.t.Helper()
	for i := range n {
		w.create(namespace, fmt.Sprint("p", i))
	}
}

// touch changes a pod's labels, which makes a new resourceVersion.
func (w *writer) touch(namespace, name string) *corev1.Pod {
	w.t.Helper()
	return w.relabel(namespace, name, nil)
}

// relabel sets a pod's labels (nil: bumps the "gen" label).
func (w *writer) relabel(namespace, name string, set map[string]string) *corev1.Pod {
	w.t.Helper()
	p, err := w.pods.Get(namespace, name)
	if err != nil {
		w.t.Fatalf("get %s/%s: %v", namespace, name, err)
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if set == nil {
		w.gen++
		p.Labels["gen"] = fmt.Sprint(w.gen)
	}
	for k, v := range set {
		p.Labels[k] = v
	}
	p, err = w.pods.Update(p)
	if err != nil {
		w.t.Fatalf("update %s/%s: %v", namespace, name, err)
	}
	return p
}

func (w *writer) remove(namespace, name string) {
	w.t.Helper()
	if _, err := w.pods.Delete(namespace, name); err != nil {
		w.t.Fatalf("delete %s/%s: %v", namespace, name, err)
	}
}

// listMode chooses how a watcher's informer fills its cache; the zero
// value is LIST then WATCH, which makes LIST counts easy to read.
type listMode int

const (
	listThenWatch listMode = iota
	autoMode               // streaming lists, falling back to LIST
	watchListMode          // streaming lists only
)

// setup says how to start a watcher; the zero value is a LIST+WATCH
// informer of all pods on the server given to startWatcher, with one
// recording handler.
type setup struct {
	host     string // default: the server's URL
	config   func(*reflector.Config)
	target   reflector.Target
	mode     listMode
	http     []reflector.HTTPOption
	refl     []reflector.Option[*corev1.Pod]
	handlers int // recording handlers; default 1
	noWait   bool
}

// watcher is one informer under test, with its recording handlers and a
// log of the errors it reported.
type watcher struct {
	t      *testing.T
	name   string
	target reflector.Target
	inf    *informer.SharedIndexInformer[*corev1.Pod]
	recs   []*recorder
	errs   *errorLog
	rvs    *rvMonitor
}

// startWatcher starts an informer against s as su says and waits for it
// to sync (unless su.noWait). It stops when the test ends.
func startWatcher(t *testing.T, s *apisim.Server, name string, su setup) *watcher {
	t.Helper()
	cfg := &reflector.Config{Host: su.host}
	if cfg.Host == "" {
		cfg.Host = s.URL()
	}
	if su.config != nil {
		su.config(cfg)
	}
	client, err := reflector.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpOpts := append([]reflector.HTTPOption{reflector.WithWatchIdleTimeout(idleTimeout)}, su.http...)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, su.target, httpOpts...)
	if err != nil {
		t.Fatal(err)
	}
	mode := reflector.ListWatch
	switch su.mode {
	case autoMode:
		mode = reflector.Auto
	case watchListMode:
		mode = reflector.WatchList
	}
	w := &watcher{t: t, name: name, target: su.target, errs: &errorLog{}}
	reflOpts := append([]reflector.Option[*corev1.Pod]{
		reflector.WithMode[*corev1.Pod](mode),
		reflector.WithBackoff[*corev1.Pod](backoffMin, backoffMax),
	}, su.refl...)
	// Nothing may change a cached object, listwatch included (with
	// WithSharing, a decoder writing into a part it shared would): the
	// detector's last check runs as the informer stops, in the cleanup.
	w.inf = informer.New[*corev1.Pod](lw,
		informer.WithName[*corev1.Pod](name),
		informer.WithReflectorOptions(reflOpts...),
		informer.WithHandlerErrorHandler[*corev1.Pod](w.errs.add),
		informer.WithMutationDetector[*corev1.Pod](time.Second, func(err error) { t.Error(err) }))
	if err := w.inf.SetWatchErrorHandler(w.errs.add); err != nil {
		t.Fatal(err)
	}
	for i := range max(su.handlers, 1) {
		rec := newRecorder(fmt.Sprintf("%s/handler%d", name, i))
		w.recs = append(w.recs, rec)
		w.inf.AddEventHandler(rec)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.inf.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !su.noWait {
		w.waitSynced()
	}
	return w
}

// waitSynced waits for the informer's first sync, for three times
// convergeBound: a sync on a starved machine (the race detector, other
// tests in parallel) once took over 10 s with no error reported. If it
// does not come, every goroutine's stack is logged, to tell a hang from a
// slow machine.
func (w *watcher) waitSynced() {
	w.t.Helper()
	select {
	case <-w.inf.Synced():
	case <-time.After(3 * convergeBound):
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		w.t.Logf("goroutines:\n%s", stacks.String())
		w.t.Fatalf("%s did not sync within %s; last error: %v", w.name, 3*convergeBound, w.inf.LastError())
	}
}

func (w *watcher) rv() uint64 { return parseRV(w.inf.LastSyncResourceVersion()) }

// cache returns the informer's cache as sorted "key@rv#uid" lines.
func (w *watcher) cache() []string { return stateOf(w.inf.Indexer().List()) }

// want returns the server's state as w's target selects it.
func (w *watcher) want(s *apisim.Server) []string {
	w.t.Helper()
	all, _, err := podsOf(s).List(w.target.Namespace)
	if err != nil {
		w.t.Fatal(err)
	}
	sel := labels.Everything()
	if w.target.LabelSelector != "" {
		if sel, err = labels.Parse(w.target.LabelSelector); err != nil {
			w.t.Fatal(err)
		}
	}
	var keep []*corev1.Pod
	for _, p := range all {
		if sel.Matches(labels.Set(p.Labels)) {
			keep = append(keep, p)
		}
	}
	return stateOf(keep)
}

// mismatch returns "" when w's cache and every handler's view equal the
// server's state, else what differs.
func (w *watcher) mismatch(s *apisim.Server) string {
	want := w.want(s)
	if got := w.cache(); !slices.Equal(want, got) {
		return w.name + " cache: " + diff(want, got)
	}
	for _, r := range w.recs {
		if got := r.state(); !slices.Equal(want, got) {
			return r.name + " view: " + diff(want, got)
		}
	}
	return ""
}

// converge waits until (C) holds for every watcher against s, fails the
// test after within, and then checks (O) and (D). It returns how long (C)
// took.
func converge(t *testing.T, s *apisim.Server, within time.Duration, ws ...*watcher) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for {
		last = ""
		for _, w := range ws {
			if last = w.mismatch(s); last != "" {
				break
			}
		}
		if last == "" {
			break
		}
		if time.Since(start) > within {
			t.Fatalf("(C) not reached within %s: %s", within, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	for _, w := range ws {
		w.checkOrder()
	}
	return took
}

// checkOrder fails the test on any (O) or (D) violation seen so far.
func (w *watcher) checkOrder() {
	w.t.Helper()
	for _, r := range w.recs {
		for _, p := range r.problems() {
			w.t.Error(p)
		}
	}
	if w.rvs != nil {
		for _, p := range w.rvs.problems() {
			w.t.Error(p)
		}
	}
}

// waitEntered waits for a held request to reach gate, failing the test
// rather than hanging if none comes.
func waitEntered(t *testing.T, gate *apisim.Gate) {
	t.Helper()
	select {
	case <-gate.Entered():
	case <-time.After(convergeBound):
		t.Fatal("no request reached the gate")
	}
}

// eventually polls cond every few milliseconds until it holds, and fails
// the test after within. It returns how long it took.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// errorLog records the errors an informer reported, and when. It is safe
// for concurrent use.
type errorLog struct {
	mu   sync.Mutex
	errs []loggedError
}

type loggedError struct {
	err error
	at  time.Time
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, loggedError{err: err, at: time.Now()})
}

// matching returns the errors for which match holds.
func (l *errorLog) matching(match func(error) bool) []loggedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedError
	for _, e := range l.errs {
		if match(e.err) {
			out = append(out, e)
		}
	}
	return out
}

func (l *errorLog) all() []loggedError { return l.matching(func(error) bool { return true }) }

// String lists the errors, one a line, for failure messages.
func (l *errorLog) String() string {
	var b strings.Builder
	for _, e := range l.all() {
		fmt.Fprintf(&b, "\n\t%s", e.err)
	}
	return b.String()
}

// rvMonitor samples an informer's LastSyncResourceVersion until the test
// ends and records any step back.
type rvMonitor struct {
	mu         sync.Mutex
	violations []string
	samples    int
}

// monitorRV starts sampling w's LastSyncResourceVersion every millisecond.
func (w *watcher) monitorRV() {
	m := &rvMonitor{}
	w.rvs = m
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			rv := w.rv()
			m.mu.Lock()
			m.samples++
			if rv < last && len(m.violations) < 10 {
				m.violations = append(m.violations, fmt.Sprintf("%s: LastSyncResourceVersion went back from %d to %d", w.name, last, rv))
			}
			m.mu.Unlock()
			last = max(last, rv)
		}
	}()
	w.t.Cleanup(func() {
		close(stop)
		<-done
	})
}

func (m *rvMonitor) problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.violations)
}

// requestLog records the LIST and WATCH requests a simulator receives, in
// order, through injections that match nothing. Make it before any other
// injection: injections are tried in order.
type requestLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
}

type loggedRequest struct {
	verb  apisim.Verb
	query url.Values
	at    time.Time
}

func logRequests(s *apisim.Server) *requestLog {
	l := &requestLog{}
	for _, v := range []apisim.Verb{apisim.VerbList, apisim.VerbWatch} {
		s.Inject(apisim.Match{Verb: v, Request: func(r *http.Request) bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.reqs = append(l.reqs, loggedRequest{verb: v, query: r.URL.Query(), at: time.Now()})
			return false
		}}, apisim.Fault{}, 0)
	}
	return l
}

func (l *requestLog) all() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// lists and watches count requests on s.
func lists(s *apisim.Server) int   { return s.Requests(apisim.VerbList, apisim.Pods()) }
func watches(s *apisim.Server) int { return s.Requests(apisim.VerbWatch, apisim.Pods()) }
