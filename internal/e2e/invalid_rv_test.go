package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/reflector"
)

// TestResourceVersionThatIsNotANumber: a broken proxy between the informer
// and the apiserver hands on one watch event with a resourceVersion that is
// not a number, and ends the stream after it. The real apiserver refuses a
// watch from that resourceVersion (500), and a list at least as new as it
// (400): the informer reports the refusal once, lists the server's latest
// state and follows the server again.
func TestResourceVersionThatIsNotANumber(t *testing.T) {
	t.Parallel()
	cfg := &reflector.Config{Host: shared.URL(), BearerToken: shared.AdminToken(), TLS: reflector.TLSConfig{CAData: shared.CAPEM()}}
	client, err := reflector.NewClient(cfg)
	require.NoError(t, err)
	for name, mode := range map[string]reflector.Mode{"auto": reflector.Auto, "list-watch": reflector.ListWatch} {
		t.Run(name, func(t *testing.T) {
			ns := "invalid-rv-" + name
			a := adminAPI(t, shared)
			a.createNamespace(ns)
			a.createPod(ns, "alpha", nil)
			lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: ns})
			require.NoError(t, err)
			broken := &breakingProxy{ListerWatcher: lw}
			errs := &errorLog{}
			inf := informer.New[*corev1.Pod](broken, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](mode)))
			require.NoError(t, inf.SetWatchErrorHandler(errs.add))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() { defer close(done); inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			require.NoError(t, informer.WaitForSync(ctx, inf))

			a.createPod(ns, "bravo", nil) // its event is the one broken
			require.Eventually(t, func() bool { return broken.broke.Load() }, 30*time.Second, 10*time.Millisecond, "the event broken")
			refused := func() []loggedError {
				var out []loggedError
				for _, e := range errs.since(time.Time{}) {
					if strings.Contains(e.err.Error(), `500 Internal Server Error: resourceVersion: Invalid value: "abc"`) {
						out = append(out, e)
					}
				}
				return out
			}
			require.Eventually(t, func() bool { return len(refused()) > 0 }, 30*time.Second, 10*time.Millisecond,
				"the watch from the broken resourceVersion refused; reported: %v", errs)
			a.createPod(ns, "charlie", nil)
			a.labelPod(ns, "bravo", map[string]any{"touched": "yes"})

			want := serverPods(t, a, ns)
			require.Eventually(t, func() bool { return slices.Equal(want, cachedPods(inf)) }, 30*time.Second, 10*time.Millisecond,
				"the cache equals the server: want %v", want)
			assert.Len(t, errs.since(time.Time{}), 1, "the refused watch reported once, and nothing else: %v", errs)
			assert.NotEqual(t, "abc", inf.LastSyncResourceVersion())
		})
	}
}

// breakingProxy passes a server's lists and watches through, as a broken
// proxy would: the first watch event after the informer synced (in a
// streaming list's stream, after its initial events) gets the
// resourceVersion "abc", and that stream ends after it.
type breakingProxy struct {
	reflector.ListerWatcher[*corev1.Pod]
	broke atomic.Bool
}

func (p *breakingProxy) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := p.ListerWatcher.Watch(ctx, opts)
	if err != nil || p.broke.Load() {
		return w, err
	}
	return &breakingWatcher{Watcher: w, p: p, armed: !opts.SendInitialEvents}, nil
}

type breakingWatcher struct {
	reflector.Watcher[*corev1.Pod]
	p     *breakingProxy
	armed bool // past the initial events, if any
	done  bool
}

func (w *breakingWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if w.done {
		return reflector.Event[*corev1.Pod]{}, fmt.Errorf("the proxy ended the stream: %w", io.EOF)
	}
	ev, err := w.Watcher.Next()
	switch {
	case err != nil:
	case ev.Type == reflector.Bookmark:
		w.armed = w.armed || ev.Object.GetAnnotations()[reflector.InitialEventsEndAnnotation] == "true"
	case w.armed:
		ev.Object.ResourceVersion = "abc"
		w.done = true
		w.p.broke.Store(true)
	}
	return ev, err
}

// serverPods returns the pods of ns as "name@resourceVersion", sorted, from
// a consistent LIST.
func serverPods(t *testing.T, a *api, ns string) []string {
	t.Helper()
	list := a.must("GET", "/api/v1/namespaces/"+ns+"/pods", nil, http.StatusOK)
	var out []string
	items, _ := list["items"].([]any)
	for _, it := range items {
		obj, _ := it.(map[string]any)
		meta, _ := obj["metadata"].(map[string]any)
		out = append(out, fmt.Sprintf("%s@%s", meta["name"], meta["resourceVersion"]))
	}
	slices.Sort(out)
	return out
}

// cachedPods returns inf's cache as "name@resourceVersion", sorted.
func cachedPods(inf *informer.SharedIndexInformer[*corev1.Pod]) []string {
	var out []string
	for _, p := range inf.Lister().List(labels.Everything()) {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

// TestClientGoResourceVersionThatIsNotANumber puts the same broken proxy in
// front of a client-go informer, for the comparison in the README: client-go
// asks from "abc" again after every backoff, and its cache does not follow
// the server any more.
func TestClientGoResourceVersionThatIsNotANumber(t *testing.T) {
	t.Parallel()
	const ns = "invalid-rv-client-go"
	a := adminAPI(t, shared)
	a.createNamespace(ns)
	a.createPod(ns, "alpha", nil)
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host:            shared.URL(),
		BearerToken:     shared.AdminToken(),
		TLSClientConfig: rest.TLSClientConfig{CAData: shared.CAPEM()},
		UserAgent:       clientGoUA,
	})
	require.NoError(t, err)
	var broke atomic.Bool
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := cs.CoreV1().Pods(ns).Watch(ctx, opts)
			if err != nil || broke.Load() {
				return w, err
			}
			return breakClientGoWatch(w, opts.SendInitialEvents != nil && *opts.SendInitialEvents, &broke), nil
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	errs := &errorLog{}
	require.NoError(t, inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { errs.add(err) }))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

	a.createPod(ns, "bravo", nil)
	require.Eventually(t, broke.Load, 30*time.Second, 10*time.Millisecond, "the event broken")
	a.createPod(ns, "charlie", nil)
	time.Sleep(20 * time.Second) // client-go's backoff: 0.8 s doubling to 30 s
	_, cached, err := inf.GetIndexer().GetByKey(ns + "/charlie")
	require.NoError(t, err)
	assert.False(t, cached, "client-go's cache followed the server after all")
	assert.Equal(t, "abc", inf.LastSyncResourceVersion())
	reported := errs.since(time.Time{})
	require.GreaterOrEqual(t, len(reported), 2, "refused again and again")
	t.Logf("client-go, 20 s after the broken event: charlie cached: %v, %d errors reported, the last: %v", cached, len(reported), reported[len(reported)-1].err)
}

// breakClientGoWatch is breakingProxy for client-go: it passes in's events
// on until the first one after the initial events (if streaming), which it
// hands on with the resourceVersion "abc" before it ends the stream.
func breakClientGoWatch(in watch.Interface, streaming bool, broke *atomic.Bool) watch.Interface {
	w := &brokenWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		defer in.Stop()
		armed := !streaming
		for ev := range in.ResultChan() {
			last := false
			switch p, _ := ev.Object.(*corev1.Pod); {
			case p == nil:
			case ev.Type == watch.Bookmark:
				armed = armed || p.Annotations[metav1.InitialEventsAnnotationKey] == "true"
			case armed:
				p.ResourceVersion, last = "abc", true
				broke.Store(true)
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
			if last {
				return
			}
		}
	}()
	return w
}

type brokenWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *brokenWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *brokenWatch) ResultChan() <-chan watch.Event { return w.out }
