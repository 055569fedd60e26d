package listwatchtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// newWidget returns a custom resource ns/name of kind Widget.
func newWidget(name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("example.com/v1")
	obj.SetKind("Widget")
	obj.SetNamespace("ns")
	obj.SetName(name)
	return obj
}

func TestWritesAreChecked(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()

	a, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	assert.Equal(t, "1", a.ResourceVersion)
	assert.NotEmpty(t, a.UID)
	_, err = src.Create(pod("ns", "a"))
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	_, err = src.Create(pod("other", "a"))
	assert.NoError(t, err, "the same name in another namespace is another object")
	_, ok := src.Get("", "ns/a")
	assert.False(t, ok, "no object is named ns/a")
	assert.True(t, apierrors.IsNotFound(src.Delete("", "ns/a")))
	_, err = src.Update(pod("", "ns/a"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	_, err = src.Create(pod("ns", ""))
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	// Names that are not one path segment: "a/b" in namespace "" would
	// be "b" in namespace "a".
	for _, bad := range []*corev1.Pod{pod("", "a/b"), pod("x/y", "b"), pod("ns", ".."), pod("ns", "a%b")} {
		_, err = src.Create(bad)
		assert.True(t, apierrors.IsInvalid(err), "%s/%s: %v", bad.Namespace, bad.Name, err)
	}
	generated, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}})
	require.NoError(t, err)
	assert.Equal(t, "web-1", generated.Name)
	var nilPod *corev1.Pod
	_, err = src.Create(nilPod)
	assert.ErrorContains(t, err, "nil")
	_, err = src.Update(nilPod)
	assert.ErrorContains(t, err, "nil")

	_, err = src.Update(pod("ns", "missing"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `pods "missing" not found`, "named as the apiserver names them")
	_, err = src.Create(a)
	assert.True(t, apierrors.IsInternalError(err), "a resourceVersion on a create: %v", err)
	a.Labels = map[string]string{"v": "2"}
	a2, err := src.Update(a)
	require.NoError(t, err, "the stored resourceVersion")
	assert.Equal(t, a.UID, a2.UID, "an update keeps the UID")
	_, err = src.Update(a)
	assert.True(t, apierrors.IsConflict(err), "an old resourceVersion: %v", err)
	a3, err := src.Update(pod("ns", "a"))
	require.NoError(t, err, "no resourceVersion: whatever is stored")
	assert.Equal(t, a.UID, a3.UID)

	assert.True(t, apierrors.IsNotFound(src.Delete("ns", "missing")))
	require.NoError(t, src.Delete("ns", "a"))
	_, ok = src.Get("ns", "a")
	assert.False(t, ok)
	again, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	assert.NotEqual(t, a.UID, again.UID, "created again: a new UID")

	var keys []string
	for _, p := range src.Objects() {
		keys = append(keys, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
	}
	assert.Equal(t, []string{"ns/a@7", "ns/web-1@3", "other/a@2"}, keys)
	assert.Equal(t, "7", src.ResourceVersion())
}

// A write's resourceVersion is the number kube-apiserver's storage parses
// (APIObjectVersioner), not a string: a create at "0" or one that is not a
// number is taken, an update at "0" is unconditional, one at "007" is at
// 7, and one that is not a number is a 500. The Source compared strings.
func TestSourceComparesWriteResourceVersionsAsNumbers(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		_, err := src.Create(pod("ns", name))
		require.NoError(t, err)
	}
	for _, rv := range []string{"0", "00", "abc"} {
		p := pod("ns", "new-"+rv)
		p.ResourceVersion = rv
		_, err := src.Create(p)
		assert.NoError(t, err, "a create at resourceVersion %q", rv)
	}
	cur, _ := src.Get("ns", "a")
	upd := cur.DeepCopy()
	upd.ResourceVersion, upd.Labels = "0", map[string]string{"v": "1"}
	cur, err := src.Update(upd)
	require.NoError(t, err, "an update at resourceVersion \"0\": unconditional")
	require.Equal(t, "1", cur.Labels["v"])
	upd = cur.DeepCopy()
	upd.ResourceVersion, upd.Labels = "00"+cur.ResourceVersion, map[string]string{"v": "2"}
	_, err = src.Update(upd)
	require.NoError(t, err, "an update at %q of an object at %s", upd.ResourceVersion, cur.ResourceVersion)
	upd.ResourceVersion = "abc"
	_, err = src.Update(upd)
	var st apierrors.APIStatus
	if assert.ErrorAs(t, err, &st, "an update at resourceVersion \"abc\"") {
		assert.EqualValues(t, 500, st.Status().Code, "%v", err)
	}
}

func TestSourceKeepsCopies(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	mine := pod("ns", "a")
	got, err := src.Create(mine)
	require.NoError(t, err)
	mine.Labels = map[string]string{"changed": "after Create"}
	got.Labels = map[string]string{"changed": "the returned copy"}
	fetched, ok := src.Get("ns", "a")
	require.True(t, ok)
	fetched.Labels = map[string]string{"changed": "what Get returned"}
	src.Objects()[0].Labels = map[string]string{"changed": "what Objects returned"}

	var listed []*corev1.Pod
	_, err = src.List(t.Context(), reflector.ListOptions{}, func(p *corev1.Pod) error { listed = append(listed, p); return nil })
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Empty(t, listed[0].Labels, "what the Source serves is its own copy")
	assert.Empty(t, mine.ResourceVersion, "Create does not write to its argument")

	// What a lister or watcher does to what it gets changes nothing either.
	listed[0].Labels = map[string]string{"changed": "by a lister"}
	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	defer w.Close()
	ev, err := w.Next()
	require.NoError(t, err)
	ev.Object.Labels = map[string]string{"changed": "by a watcher"}
	stored, _ := src.Get("ns", "a")
	assert.Empty(t, stored.Labels)
}

// An informer whose transform changes the objects it is given changes them
// for itself only.
func TestATransformChangesNothingInTheSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		web := pod("ns", "web")
		web.Labels = map[string]string{"app": "web"}
		_, err := src.Create(web)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()

		view, err := src.For(reflector.Target{Namespace: "ns"})
		require.NoError(t, err)
		stripping := informer.New(view) // a view hands out copies too
		require.NoError(t, stripping.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) { p.Labels = nil; return p, nil }))
		plain := informer.New[*corev1.Pod](src)
		for _, inf := range []*informer.SharedIndexInformer[*corev1.Pod]{stripping, plain} {
			wg.Go(func() { assert.NoError(t, inf.Run(ctx)) })
		}
		require.NoError(t, informer.WaitForSync(ctx, stripping, plain))
		_, err = src.Update(web) // a MODIFIED event, through the watch
		require.NoError(t, err)
		synctest.Wait()

		stripped, _ := stripping.Lister().Get("ns", "web")
		kept, _ := plain.Lister().Get("ns", "web")
		stored, _ := src.Get("ns", "web")
		assert.Nil(t, stripped.Labels)
		assert.Equal(t, "web", kept.Labels["app"])
		assert.Equal(t, "web", stored.Labels["app"])
	})
}

// A reflector that is caught up is not made to list again by Compact, also
// on a view that the writes outside it do not move forward: CloseWatches
// sends the bookmark kube-apiserver sends before it ends a watch.
func TestCompactLeavesACaughtUpViewAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		_, err := src.Create(pod("a", "x"))
		require.NoError(t, err)
		view, err := src.For(reflector.Target{Namespace: "a"})
		require.NoError(t, err)
		inf := informer.New(view)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))
		_, err = src.Create(pod("b", "y")) // outside the view
		require.NoError(t, err)
		synctest.Wait()
		lists, watches := src.Requests()

		src.Compact()
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		l, w := src.Requests()
		assert.Equal(t, lists, l, "no list again")
		assert.Equal(t, watches+1, w, "one watch again, from the bookmark's resourceVersion")
		assert.Equal(t, src.ResourceVersion(), inf.LastSyncResourceVersion())
		cancel()
		require.NoError(t, <-done)
	})
}

// Compact makes a reflector that is behind list again.
// A paged list's pages come from one state, as a server's do, so writes
// made between pages reach a handler once and in order, through the watch
// from the list's resourceVersion.
func TestWritesBetweenPagesArriveInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.RefuseStreaming()
		for _, name := range []string{"a", "b"} {
			_, err := src.Create(pod("ns", name))
			require.NoError(t, err)
		}
		lw := &writeAfterFirstPage{Source: src, write: func() {
			for range 2 {
				b, _ := src.Get("ns", "b")
				b.Labels = map[string]string{"v": b.ResourceVersion}
				_, err := src.Update(b)
				require.NoError(t, err)
			}
		}}
		var events []string
		inf := informer.New[*corev1.Pod](lw, informer.WithReflectorOptions(reflector.WithPageSize[*corev1.Pod](1)))
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(p *corev1.Pod, _ bool) { events = append(events, "add "+p.Name+"@"+p.ResourceVersion) },
			UpdateFunc: func(old, p *corev1.Pod) {
				events = append(events, "update "+p.Name+"@"+old.ResourceVersion+"->"+p.ResourceVersion)
			},
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))
		synctest.Wait()
		assert.Equal(t, []string{"add a@1", "add b@2", "update b@2->3", "update b@3->4"}, events)
		cancel()
		require.NoError(t, <-done)
	})
}

// writeAfterFirstPage is a Source that makes writes once it has served
// the first page of a list.
type writeAfterFirstPage struct {
	*listwatchtest.Source[*corev1.Pod]
	write func()
	once  sync.Once
}

func (w *writeAfterFirstPage) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	meta, err := w.Source.List(ctx, opts, add)
	if opts.Continue == "" && meta.Continue != "" {
		w.once.Do(w.write)
	}
	return meta, err
}

func TestCompactMakesAReflectorBehindListAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.RefuseStreaming()
		_, err := src.Create(pod("ns", "a"))
		require.NoError(t, err)
		inf := informer.New[*corev1.Pod](src)
		require.NoError(t, inf.SetWatchErrorHandler(func(error) {}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))

		src.FailWatch(apierrors.NewTooManyRequests("slow down", 1))
		src.CloseWatches() // the reflector backs off, behind from here on
		synctest.Wait()
		require.NoError(t, src.Delete("ns", "a"))
		_, err = src.Create(pod("ns", "b"))
		require.NoError(t, err)
		src.Compact()
		time.Sleep(time.Minute)
		synctest.Wait()

		lists, _ := src.Requests()
		assert.Equal(t, int64(2), lists, "the first list, and one after the 410")
		var keys []string
		for _, p := range inf.Indexer().List() {
			keys = append(keys, p.Name)
		}
		assert.Equal(t, []string{"b"}, keys)
		cancel()
		require.NoError(t, <-done)
	})
}

func TestConcurrentCreatesOfOneName(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	var created atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := src.Create(pod("ns", "a")); err == nil {
				created.Add(1)
			} else {
				assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), created.Load())
}

// An informer over a Source converges to it through writes and every
// fault the Source can make.
func TestInformerConvergesThroughFaults(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming=%t", streaming), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listwatchtest.NewSource[*corev1.Pod]()
				if !streaming {
					src.RefuseStreaming()
				}
				inf := informer.New[*corev1.Pod](src)
				require.NoError(t, inf.SetWatchErrorHandler(func(error) {}))
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- inf.Run(ctx) }()
				require.NoError(t, informer.WaitForSync(ctx, inf))

				rng := rand.New(rand.NewPCG(1, 2))
				for i := range 300 {
					name := fmt.Sprintf("p%d", rng.IntN(20))
					switch rng.IntN(8) {
					case 0:
						_ = src.Delete("ns", name)
					case 1:
						src.CloseWatches()
					case 2:
						src.Compact()
						src.CloseWatches()
					case 3:
						src.FailWatch(apierrors.NewGone("too old"), apierrors.NewTooManyRequests("slow down", 1))
						if !streaming { // a streaming list is a watch: it never lists
							src.FailList(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil))
						}
						src.CloseWatches()
					default:
						p := pod("ns", name)
						p.Labels = map[string]string{"i": fmt.Sprint(i)}
						if _, err := src.Create(p); apierrors.IsAlreadyExists(err) {
							_, err = src.Update(p)
							require.NoError(t, err)
						}
					}
					if rng.IntN(10) == 0 {
						time.Sleep(time.Minute) // past any backoff
						synctest.Wait()
					}
				}
				// Let the faults still queued be served, and the backoff
				// after the last of them pass: the reflector is watching.
				for range 30 {
					time.Sleep(time.Minute)
					synctest.Wait()
					if lists, watches := src.PendingFailures(); lists+watches == 0 {
						break
					}
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				pendingLists, pendingWatches := src.PendingFailures()
				require.Zero(t, pendingLists+pendingWatches, "faults still queued")
				// Last, writes with no fault and no time passing: only the
				// watch can bring these.
				for i := range 20 {
					name := fmt.Sprintf("p%d", i)
					if i%3 == 0 {
						_ = src.Delete("ns", name)
						continue
					}
					p := pod("ns", name)
					p.Labels = map[string]string{"i": fmt.Sprint(1000 + i)}
					if _, err := src.Create(p); apierrors.IsAlreadyExists(err) {
						_, err = src.Update(p)
						require.NoError(t, err)
					}
				}
				synctest.Wait()

				want := map[string]string{}
				for _, p := range src.Objects() {
					want[p.Namespace+"/"+p.Name] = p.ResourceVersion + " " + p.Labels["i"]
				}
				got := map[string]string{}
				for _, p := range inf.Indexer().List() {
					got[p.Namespace+"/"+p.Name] = p.ResourceVersion + " " + p.Labels["i"]
				}
				assert.Equal(t, want, got)
				lists, watches := src.Requests()
				assert.Positive(t, watches)
				if !streaming {
					assert.Greater(t, lists, int64(1), "a 410 made the reflector list again")
				}
				cancel()
				require.NoError(t, <-done)
			})
		})
	}
}

// Unstructured objects work too, streaming list included.
// WithResource names a type outside k8s.io/api in errors as the apiserver
// would.
func TestWithResourceNamesErrors(t *testing.T) {
	widget := func(name string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("example.com/v1")
		obj.SetKind("Widget")
		obj.SetNamespace("ns")
		obj.SetName(name)
		return obj
	}
	src := listwatchtest.NewSource[*unstructured.Unstructured](nil, // a nil Option is skipped
		listwatchtest.WithResource(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "Widget"))
	_, err := src.Update(widget("w"))
	assert.EqualError(t, err, `widgets.example.com "w" not found`)
	_, err = src.Create(widget(""))
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "example.com", status.Status().Details.Group)
	assert.Equal(t, "Widget", status.Status().Details.Kind)

	_, err = listwatchtest.NewSource[*unstructured.Unstructured]().Update(widget("w"))
	assert.EqualError(t, err, `unstructured "w" not found`, "without WithResource: the Go type's name")
}

func TestUnstructuredSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*unstructured.Unstructured]()
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("example.com/v1")
		obj.SetKind("Widget")
		obj.SetNamespace("ns")
		obj.SetName("w")
		_, err := src.Create(obj)
		require.NoError(t, err)

		inf := informer.New[*unstructured.Unstructured](src)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))
		got, ok := inf.Lister().Get("ns", "w")
		require.True(t, ok)
		assert.Equal(t, "Widget", got.GetKind())
		_, watches := src.Requests()
		assert.Equal(t, int64(1), watches, "one streaming list")
		cancel()
		require.NoError(t, <-done)
	})
}

// A nil error given to FailList or FailWatch fails no call: the calls after
// it are served, or failed by the errors that follow.
func TestNilFailuresAreSkipped(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	_, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	src.FailList(nil, apierrors.NewTooManyRequests("slow down", 1))
	src.FailWatch(nil)
	lists, watches := src.PendingFailures()
	assert.Equal(t, 1, lists)
	assert.Zero(t, watches)

	add := func(*corev1.Pod) error { return nil }
	_, err = src.List(t.Context(), reflector.ListOptions{}, add)
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	meta, err := src.List(t.Context(), reflector.ListOptions{}, add)
	require.NoError(t, err)
	assert.Equal(t, "1", meta.ResourceVersion)

	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	require.NotNil(t, w)
	defer w.Close()
	ev, err := w.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", ev.Object.Name)
}

// An object that cannot be copied, such as an Unstructured built by hand
// with a Go int in it, is refused with an error that says why, not a panic.
func TestUncopyableObjectIsRefused(t *testing.T) {
	src := listwatchtest.NewSource[*unstructured.Unstructured]()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"namespace": "ns", "name": "web"},
		"spec":       map[string]any{"replicas": 3},
	}}
	_, err := src.Create(obj)
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	assert.ErrorContains(t, err, "cannot deep copy int")
	assert.ErrorContains(t, err, "int64")
	assert.Empty(t, src.Objects())

	obj.Object["spec"] = map[string]any{"replicas": int64(3)}
	_, err = src.Create(obj)
	require.NoError(t, err)
	obj.Object["spec"] = map[string]any{"replicas": 4}
	_, err = src.Update(obj)
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	stored, ok := src.Get("ns", "web")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"replicas": int64(3)}, stored.Object["spec"])
}

// metadata.generation is the server's, as kube-apiserver keeps it: 1 on
// create and 1 more on each write that changes more than metadata and
// status, for kinds with a spec; 0 for kinds without one. What the client
// sends is ignored.
func TestGenerationIsTheServers(t *testing.T) {
	deployments := listwatchtest.NewSource[*appsv1.Deployment]()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 7}}
	d, err := deployments.Create(d)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation, "a create")
	d.Labels = map[string]string{"app": "web"}
	d.Status.ObservedGeneration = 1
	d.Generation = 42
	d, err = deployments.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation, "labels and status are no change to the spec")
	replicas := int32(3)
	d.Spec.Replicas = &replicas
	d.Generation = 0
	d, err = deployments.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Generation, "a change to the spec")
	stored, _ := deployments.Get("ns", "web")
	assert.Equal(t, int64(2), stored.Generation)

	widgets := listwatchtest.NewSource[*unstructured.Unstructured]()
	w := newWidget("w")
	w.Object["spec"] = map[string]any{"size": int64(1)}
	w, err = widgets.Create(w)
	require.NoError(t, err)
	assert.Equal(t, int64(1), w.GetGeneration(), "a custom resource")
	w.Object["spec"] = map[string]any{"size": int64(2)}
	w, err = widgets.Update(w)
	require.NoError(t, err)
	assert.Equal(t, int64(2), w.GetGeneration())
	w.Object["status"] = map[string]any{"size": int64(2)}
	w, err = widgets.Update(w)
	require.NoError(t, err)
	assert.Equal(t, int64(2), w.GetGeneration(), "a change to the status")

	// A custom resource's content is all but its apiVersion, kind,
	// metadata and status, whichever side holds a field, compared as
	// kube-apiserver compares it (equality.Semantic: a typed nil list, which
	// only Go code makes, is an empty one).
	bare, err := widgets.Create(newWidget("bare"))
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		change  func(u *unstructured.Unstructured)
		changed bool
	}{
		{"a spec where there was none", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"items": []any{}} }, true},
		{"an empty list made nil", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"items": []any(nil)} }, false},
		{"another apiVersion", func(u *unstructured.Unstructured) { u.SetAPIVersion("example.com/v2") }, false},
		{"the spec removed", func(u *unstructured.Unstructured) { delete(u.Object, "spec") }, true},
	} {
		before := bare.GetGeneration()
		c.change(bare)
		bare, err = widgets.Update(bare)
		require.NoError(t, err, c.name)
		if c.changed {
			before++
		}
		assert.Equal(t, before, bare.GetGeneration(), c.name)
	}

	configMaps := listwatchtest.NewSource[*corev1.ConfigMap]()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 5}}
	cm, err = configMaps.Create(cm)
	require.NoError(t, err)
	assert.Zero(t, cm.Generation, "a ConfigMap has no generation")
	cm.Data = map[string]string{"k": "v"}
	cm.Generation = 5
	cm, err = configMaps.Update(cm)
	require.NoError(t, err)
	assert.Zero(t, cm.Generation)
}

// An Update that changes nothing writes nothing, as kube-apiserver's: the
// resourceVersion stays and watchers get no event, so a controller that
// writes back what it read does not wake itself up.
func TestUpdateThatChangesNothingWritesNothing(t *testing.T) {
	src := listwatchtest.NewSource[*appsv1.Deployment]()
	d, err := src.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: d.ResourceVersion})
	require.NoError(t, err)
	defer w.Close()

	same, err := src.Update(d)
	require.NoError(t, err)
	assert.Equal(t, d, same)
	again := d.DeepCopy()
	again.ResourceVersion, again.UID, again.Generation, again.CreationTimestamp = "", "", 0, metav1.Time{}
	same, err = src.Update(again)
	require.NoError(t, err, "what the server fills in is no change")
	assert.Equal(t, d, same)
	same.Labels = map[string]string{"mine": "yes"}
	stored, _ := src.Get("ns", "web")
	assert.Empty(t, stored.Labels, "what Update returns is a copy")
	assert.Equal(t, d.ResourceVersion, src.ResourceVersion())

	widgets := listwatchtest.NewSource[*unstructured.Unstructured]()
	wd := newWidget("w")
	wd.Object["spec"] = map[string]any{"size": int64(1)}
	wd, err = widgets.Create(wd)
	require.NoError(t, err)
	sameWidget, err := widgets.Update(wd)
	require.NoError(t, err)
	assert.Equal(t, wd, sameWidget, "a custom resource too")

	d.Labels = map[string]string{"app": "web"}
	changed, err := src.Update(d)
	require.NoError(t, err)
	ev, err := w.Next()
	require.NoError(t, err)
	assert.Equal(t, reflector.Modified, ev.Type)
	assert.Equal(t, changed.ResourceVersion, ev.Object.ResourceVersion, "the first event is the change's")
}

// cachedPod is a type of one's own: a Pod with an unexported field.
type cachedPod struct {
	corev1.Pod
	summary string
}

func (p *cachedPod) DeepCopyObject() runtime.Object {
	return &cachedPod{Pod: *p.Pod.DeepCopy(), summary: p.summary}
}

// A type with unexported fields is compared too: an Update of one
// panicked (reflect's Interface on the unexported field, or
// equality.Semantic.DeepEqual). The Pod it embeds is gone into, so that
// its labels and status are no change to the spec; before, any change to
// the embedded Pod moved the generation.
func TestUpdateOfATypeWithUnexportedFields(t *testing.T) {
	src := listwatchtest.NewSource[*cachedPod]()
	p, err := src.Create(&cachedPod{Pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}, summary: "s"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Generation)

	same, err := src.Update(p)
	require.NoError(t, err, "no change")
	assert.Equal(t, p.ResourceVersion, same.ResourceVersion, "nothing written")

	p.Labels = map[string]string{"app": "web"}
	p.Status.Phase = corev1.PodRunning
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.NotEqual(t, same.ResourceVersion, p.ResourceVersion, "written")
	assert.Equal(t, int64(1), p.Generation, "labels and status are no change to the spec")

	p.summary = "t"
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(2), p.Generation, "an unexported field is not metadata or status")
	p.Spec.NodeName = "n"
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(3), p.Generation, "a change to the spec")
}

// ptrPod embeds its Pod through a pointer.
type ptrPod struct {
	*corev1.Pod
	summary string
}

func (p *ptrPod) DeepCopyObject() runtime.Object {
	return &ptrPod{Pod: p.Pod.DeepCopy(), summary: p.summary}
}

// A Pod embedded through a pointer is gone into too: its labels and status
// are no change to the spec.
func TestGenerationOfATypeEmbeddingAPodPointer(t *testing.T) {
	src := listwatchtest.NewSource[*ptrPod]()
	p, err := src.Create(&ptrPod{Pod: pod("ns", "a")})
	require.NoError(t, err)
	p.Labels = map[string]string{"app": "web"}
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Generation, "a label change")
	p.Spec.NodeName = "n"
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(2), p.Generation, "a change to the spec")
}

// An informer follows a Source of a type that embeds its object through a
// pointer, in every mode: the bookmarks a Source sends (at the end of a
// streaming list, and before a watch it ends) are empty objects of the
// type, whose embedded Pod is now made too. Setting their resourceVersion
// dereferenced a nil *Pod, and the panic ended the test binary.
func TestInformerOfATypeEmbeddingAPodPointer(t *testing.T) {
	for name, mode := range map[string]reflector.Mode{"Auto": reflector.Auto, "WatchList": reflector.WatchList, "ListWatch": reflector.ListWatch} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listwatchtest.NewSource[*ptrPod]()
				_, err := src.Create(&ptrPod{Pod: pod("ns", "a")})
				require.NoError(t, err)
				inf := informer.New[*ptrPod](src, informer.WithReflectorOptions(reflector.WithMode[*ptrPod](mode)))
				done := make(chan error, 1)
				go func() { done <- inf.Run(t.Context()) }()
				synctest.Wait()
				require.True(t, inf.HasSynced())
				src.CloseWatches() // a bookmark, then the watch ends
				_, err = src.Create(&ptrPod{Pod: pod("ns", "b")})
				require.NoError(t, err)
				time.Sleep(time.Minute) // fake time: past any backoff
				synctest.Wait()
				_, ok := inf.Lister().Get("ns", "b")
				assert.True(t, ok, "the object created after the watch was ended")
			})
		})
	}
}

// The empty objects a Source makes bookmarks of stop at a type already on
// the way down: types that embed pointers to one another made it allocate
// every path ten levels deep (about a million structs for four such types,
// at every bookmark).
func TestEmptyObjectOfTypesThatEmbedOneAnother(t *testing.T) {
	allocs := testing.AllocsPerRun(1, func() { listwatchtest.NewSource[*Fan]() })
	assert.Less(t, allocs, 2000.0)
	// Without a cycle: a diamond sixteen levels deep has 2^16 paths.
	allocs = testing.AllocsPerRun(1, func() { listwatchtest.NewSource[*Dia]() })
	assert.Less(t, allocs, 2000.0)
	// The embedded Pod is still there to set: an informer syncs.
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*Dia]()
		_, err := src.Create(&Dia{Pod: *pod("ns", "a")})
		require.NoError(t, err)
		inf := informer.New[*Dia](src)
		go inf.Run(t.Context())
		synctest.Wait()
		assert.True(t, inf.HasSynced())
	})
}

// Dia embeds a Pod, and two pointers to types that each embed two
// pointers to the next level's two, sixteen levels deep.
type Dia struct {
	corev1.Pod
	*DiaL1A
	*DiaL1B
}

func (d *Dia) DeepCopyObject() runtime.Object { return &Dia{Pod: *d.Pod.DeepCopy()} }

type (
	DiaL1A struct {
		*DiaL2A
		*DiaL2B
	}
	DiaL1B struct {
		*DiaL2A
		*DiaL2B
	}
	DiaL2A struct {
		*DiaL3A
		*DiaL3B
	}
	DiaL2B struct {
		*DiaL3A
		*DiaL3B
	}
	DiaL3A struct {
		*DiaL4A
		*DiaL4B
	}
	DiaL3B struct {
		*DiaL4A
		*DiaL4B
	}
	DiaL4A struct {
		*DiaL5A
		*DiaL5B
	}
	DiaL4B struct {
		*DiaL5A
		*DiaL5B
	}
	DiaL5A struct {
		*DiaL6A
		*DiaL6B
	}
	DiaL5B struct {
		*DiaL6A
		*DiaL6B
	}
	DiaL6A struct {
		*DiaL7A
		*DiaL7B
	}
	DiaL6B struct {
		*DiaL7A
		*DiaL7B
	}
	DiaL7A struct {
		*DiaL8A
		*DiaL8B
	}
	DiaL7B struct {
		*DiaL8A
		*DiaL8B
	}
	DiaL8A struct {
		*DiaL9A
		*DiaL9B
	}
	DiaL8B struct {
		*DiaL9A
		*DiaL9B
	}
	DiaL9A struct {
		*DiaL10A
		*DiaL10B
	}
	DiaL9B struct {
		*DiaL10A
		*DiaL10B
	}
	DiaL10A struct {
		*DiaL11A
		*DiaL11B
	}
	DiaL10B struct {
		*DiaL11A
		*DiaL11B
	}
	DiaL11A struct {
		*DiaL12A
		*DiaL12B
	}
	DiaL11B struct {
		*DiaL12A
		*DiaL12B
	}
	DiaL12A struct {
		*DiaL13A
		*DiaL13B
	}
	DiaL12B struct {
		*DiaL13A
		*DiaL13B
	}
	DiaL13A struct {
		*DiaL14A
		*DiaL14B
	}
	DiaL13B struct {
		*DiaL14A
		*DiaL14B
	}
	DiaL14A struct {
		*DiaL15A
		*DiaL15B
	}
	DiaL14B struct {
		*DiaL15A
		*DiaL15B
	}
	DiaL15A struct {
		*DiaL16A
		*DiaL16B
	}
	DiaL15B struct {
		*DiaL16A
		*DiaL16B
	}
	DiaL16A struct{ Note string }
	DiaL16B struct{ Other string }
)

// Fan embeds a Pod, and pointers to types that embed pointers to one
// another and to it.
type Fan struct {
	corev1.Pod
	*FanA
	*FanB
	*FanC
	*FanD
}

type (
	FanA struct {
		*FanB
		*FanC
		*FanD
		*Fan
	}
	FanB struct {
		*FanA
		*FanC
		*FanD
		*Fan
	}
	FanC struct {
		*FanA
		*FanB
		*FanD
		*Fan
	}
	FanD struct {
		*FanA
		*FanB
		*FanC
		*Fan
	}
)

func (f *Fan) DeepCopyObject() runtime.Object { return &Fan{Pod: *f.Pod.DeepCopy()} }

// withExtra embeds a Pod, and a part of its own through a pointer.
type withExtra struct {
	corev1.Pod
	*extra
}

type extra struct{ Note string }

func (p *withExtra) DeepCopyObject() runtime.Object {
	c := &withExtra{Pod: *p.Pod.DeepCopy()}
	if p.extra != nil {
		e := *p.extra
		c.extra = &e
	}
	return c
}

// A struct embedded through a pointer that comes or goes is a change to
// the spec.
func TestGenerationOfATypeEmbeddingAPointerThatComesAndGoes(t *testing.T) {
	src := listwatchtest.NewSource[*withExtra]()
	p, err := src.Create(&withExtra{Pod: *pod("ns", "a")})
	require.NoError(t, err)
	p.extra = &extra{Note: "n"}
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(2), p.Generation, "a part that comes")
	p.extra = nil
	p, err = src.Update(p)
	require.NoError(t, err)
	assert.Equal(t, int64(3), p.Generation, "a part that goes")
}

// A Source serves the field selectors kube-apiserver serves for its
// resource, matched against the fields the server computes: an Event's
// involvedObject, a pod's status.podIP (the first of status.podIPs) or
// spec.host (spec.nodeName's old name). Before, it refused all but a few
// of pods, secrets, namespaces and nodes.
func TestFieldSelectorsTheServerServes(t *testing.T) {
	events := listwatchtest.NewSource[*corev1.Event]()
	for _, e := range []*corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"}, Type: "Warning"},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e2"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "db"}, Type: "Normal"},
	} {
		_, err := events.Create(e)
		require.NoError(t, err)
	}
	lw, err := events.For(reflector.Target{FieldSelector: "involvedObject.name=web,type=Warning"})
	require.NoError(t, err)
	assert.Equal(t, []string{"e1"}, names(t, anyLister[*corev1.Event]{lw}))

	pods := listwatchtest.NewSource[*corev1.Pod]()
	a := pod("ns", "a")
	a.Spec.NodeName = "n1"
	a.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}}
	_, err = pods.Create(a)
	require.NoError(t, err)
	_, err = pods.Create(pod("ns", "b"))
	require.NoError(t, err)
	for _, sel := range []string{"status.podIP=10.0.0.1", "spec.host=n1", "spec.hostNetwork=false,metadata.name=a"} {
		lw, err := pods.For(reflector.Target{FieldSelector: sel})
		require.NoError(t, err, sel)
		assert.Equal(t, []string{"a"}, names(t, anyLister[*corev1.Pod]{lw}), sel)
	}
	_, err = listwatchtest.NewSource[*corev1.Service]().For(reflector.Target{FieldSelector: "spec.type=LoadBalancer"})
	assert.NoError(t, err)
	_, err = listwatchtest.NewSource[*corev1.Node]().For(reflector.Target{FieldSelector: "metadata.namespace=ns"})
	assert.True(t, apierrors.IsBadRequest(err), "nodes are not selected by namespace: %v", err)
}

// A Source of unstructured pods selects by the fields of the pods it
// holds, read as corev1.Pods, as the server reads them; one of
// PartialObjectMetadata, which holds no spec, refuses to select by
// spec.nodeName. Before, both took the field to be empty: spec.nodeName=n1
// selected nothing and spec.nodeName!=n1 every pod, without a word.
func TestFieldSelectorsOfUnstructuredAndMetadataSources(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	src := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(pods, "Pod"))
	for _, node := range []string{"n1", "n2"} {
		_, err := src.Create(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"namespace": "ns", "name": "on-" + node},
			"spec":     map[string]any{"nodeName": node, "hostNetwork": node == "n2"},
		}})
		require.NoError(t, err)
	}
	// A pod that does not read as a corev1.Pod: selected by no field
	// selector, as the server cannot compute its fields.
	_, err := src.Create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"namespace": "ns", "name": "unfit"},
		"spec":     map[string]any{"nodeName": int64(5)},
	}})
	require.NoError(t, err)
	for sel, want := range map[string][]string{
		"spec.nodeName=n1":             {"on-n1"},
		"spec.nodeName!=n1":            {"on-n2"},
		"spec.nodeName=":               nil,
		"spec.hostNetwork=true":        {"on-n2"},
		"metadata.name=on-n1":          {"on-n1"},
		"spec.host=n2,metadata.name!=": {"on-n2"},
	} {
		lw, err := src.For(reflector.Target{FieldSelector: sel})
		require.NoError(t, err, sel)
		assert.Equal(t, want, names(t, anyLister[*unstructured.Unstructured]{lw}), sel)
	}

	meta := listwatchtest.NewSource[*metav1.PartialObjectMetadata](listwatchtest.WithResource(pods, "Pod"))
	_, err = meta.For(reflector.Target{FieldSelector: "spec.nodeName!=n1"})
	assert.ErrorContains(t, err, "cannot select pods by spec.nodeName")
	_, err = meta.For(reflector.Target{FieldSelector: "metadata.name=a"})
	assert.NoError(t, err)
	_, err = meta.For(reflector.Target{FieldSelector: "status.podIPs=a"})
	assert.NoError(t, err, "the server takes it, and matches it as empty")
}

// names lists lw's objects' names.
func names(t *testing.T, lw interface {
	List(context.Context, reflector.ListOptions, func(metav1.Object) error) (reflector.ListMeta, error)
}) []string {
	t.Helper()
	var got []string
	_, err := lw.List(t.Context(), reflector.ListOptions{}, func(o metav1.Object) error { got = append(got, o.GetName()); return nil })
	require.NoError(t, err)
	return got
}

// anyLister lists a ListerWatcher's objects as metav1.Objects.
type anyLister[T reflector.Object] struct{ lw reflector.ListerWatcher[T] }

func (l anyLister[T]) List(ctx context.Context, opts reflector.ListOptions, add func(metav1.Object) error) (reflector.ListMeta, error) {
	return l.lw.List(ctx, opts, func(o T) error { return add(o) })
}

// A Deployment's annotations move its generation, as kube-apiserver's
// Deployment strategy has it (they are copied to its ReplicaSets); a
// ReplicaSet's do not. Before, no annotation moved a generation.
func TestDeploymentAnnotationsMoveItsGeneration(t *testing.T) {
	deployments := listwatchtest.NewSource[*appsv1.Deployment]()
	d, err := deployments.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	require.NoError(t, err)
	d.Annotations = map[string]string{}
	d, err = deployments.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation, "no annotations made empty (equality.Semantic)")
	d.Annotations = map[string]string{"note": "v2"}
	d, err = deployments.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Generation)

	widgets := listwatchtest.NewSource[*unstructured.Unstructured]()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("ns")
	u.SetName("web")
	u, err = widgets.Create(u)
	require.NoError(t, err)
	u.SetAnnotations(map[string]string{"note": "v2"})
	u, err = widgets.Update(u)
	require.NoError(t, err)
	assert.Equal(t, int64(2), u.GetGeneration(), "an unstructured Deployment")

	replicaSets := listwatchtest.NewSource[*appsv1.ReplicaSet]()
	rs, err := replicaSets.Create(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}})
	require.NoError(t, err)
	rs.Annotations = map[string]string{"note": "v2"}
	rs, err = replicaSets.Update(rs)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rs.Generation)
}

// The apiVersion and kind of a typed object are the server's: an Update
// that differs only there (an object from a YAML fixture, written back
// without them) writes nothing. Before, it wrote a new resourceVersion.
func TestTypeMetaIsTheServers(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	p := pod("ns", "a")
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	created, err := src.Create(p)
	require.NoError(t, err)
	c := created.DeepCopy()
	c.TypeMeta = metav1.TypeMeta{}
	same, err := src.Update(c)
	require.NoError(t, err)
	assert.Equal(t, created, same, "nothing written")
	c.Labels = map[string]string{"app": "web"}
	c.TypeMeta = metav1.TypeMeta{APIVersion: "v2", Kind: "Other"}
	changed, err := src.Update(c)
	require.NoError(t, err)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, changed.TypeMeta)
}

// The creationTimestamp is the server's: the time of the Create, to the
// second, kept by every Update.
func TestCreationTimestampIsTheServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		time.Sleep(1500 * time.Millisecond)
		created := time.Now().UTC().Truncate(time.Second)
		p := pod("ns", "a")
		p.CreationTimestamp = metav1.NewTime(created.Add(-time.Hour))
		p, err := src.Create(p)
		require.NoError(t, err)
		assert.Equal(t, created, p.CreationTimestamp.Time.UTC(), "now, to the second")

		time.Sleep(time.Minute)
		p.CreationTimestamp = metav1.Now()
		p.Labels = map[string]string{"v": "2"}
		p, err = src.Update(p)
		require.NoError(t, err)
		assert.Equal(t, created, p.CreationTimestamp.Time.UTC(), "an Update keeps it")
		stored, _ := src.Get("ns", "a")
		assert.Equal(t, created, stored.CreationTimestamp.Time.UTC())
	})
}

// An object with finalizers is deleted as kube-apiserver deletes it: marked
// with a deletionTimestamp, and removed when its last finalizer is taken
// away. A controller's finalizer logic can be tested against it.
func TestFinalizersHoldADeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*appsv1.Deployment]()
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Finalizers: []string{"example.com/a", "example.com/b"}}}
		d, err := src.Create(d)
		require.NoError(t, err)
		w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: d.ResourceVersion})
		require.NoError(t, err)
		defer w.Close()
		next := func() reflector.Event[*appsv1.Deployment] {
			t.Helper()
			ev, err := w.Next()
			require.NoError(t, err)
			return ev
		}

		time.Sleep(90 * time.Minute)
		require.NoError(t, src.Delete("ns", "web"))
		marked, ok := src.Get("ns", "web")
		require.True(t, ok, "finalizers hold the deletion")
		require.NotNil(t, marked.DeletionTimestamp)
		assert.Equal(t, time.Now().UTC().Truncate(time.Second), marked.DeletionTimestamp.Time.UTC())
		require.NotNil(t, marked.DeletionGracePeriodSeconds)
		assert.Zero(t, *marked.DeletionGracePeriodSeconds)
		assert.Equal(t, int64(2), marked.Generation, "marking moves the generation on, as kube-apiserver's does")
		ev := next()
		assert.Equal(t, reflector.Modified, ev.Type)
		assert.Equal(t, marked, ev.Object)

		time.Sleep(time.Minute)
		require.NoError(t, src.Delete("ns", "web"), "deleting an object being deleted is no error")
		assert.Equal(t, marked.ResourceVersion, src.ResourceVersion(), "and writes nothing")

		// An Update keeps the marks, and may not add a finalizer.
		edit := marked.DeepCopy()
		edit.DeletionTimestamp, edit.DeletionGracePeriodSeconds = nil, nil
		edit.Finalizers = append(edit.Finalizers, "example.com/c")
		_, err = src.Update(edit)
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.ErrorContains(t, err, "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted")
		edit.Finalizers = []string{"example.com/b"}
		edit.Labels = map[string]string{"a": "done"}
		one, err := src.Update(edit)
		require.NoError(t, err)
		assert.Equal(t, marked.DeletionTimestamp, one.DeletionTimestamp, "an Update keeps the deletionTimestamp")
		assert.Equal(t, marked.DeletionGracePeriodSeconds, one.DeletionGracePeriodSeconds)
		assert.Equal(t, one, next().Object)

		// Without its last finalizer, it goes: DELETED, as it was stored.
		last := one.DeepCopy()
		last.Finalizers = nil
		gone, err := src.Update(last)
		require.NoError(t, err)
		_, ok = src.Get("ns", "web")
		assert.False(t, ok, "the last finalizer removed: the object is gone")
		ev = next()
		assert.Equal(t, reflector.Deleted, ev.Type)
		assert.Equal(t, []string{"example.com/b"}, ev.Object.Finalizers, "the object as it was stored")
		assert.Equal(t, src.ResourceVersion(), ev.Object.ResourceVersion, "at a new resourceVersion")
		assert.NotEqual(t, one.ResourceVersion, ev.Object.ResourceVersion)
		assert.Empty(t, gone.Finalizers, "Update answers with the object of the request")
		assert.Equal(t, one.ResourceVersion, gone.ResourceVersion)

		// Without finalizers, a Delete removes at once. A Create does not
		// mark an object.
		plain, err := src.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain",
			DeletionTimestamp: marked.DeletionTimestamp, DeletionGracePeriodSeconds: marked.DeletionGracePeriodSeconds}})
		require.NoError(t, err)
		assert.Nil(t, plain.DeletionTimestamp)
		assert.Nil(t, plain.DeletionGracePeriodSeconds)
		assert.Equal(t, reflector.Added, next().Type)
		require.NoError(t, src.Delete("ns", "plain"))
		assert.Equal(t, reflector.Deleted, next().Type)
	})
}

// An Update may leave the UID out, but not change it: the object with
// another UID is another object, deleted and created again since it was
// read.
// Only a delete marks an object for deletion: an Update that tries is
// Invalid, as kube-apiserver's validation answers.
func TestUpdateMayNotMarkForDeletion(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	a, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	marked := a.DeepCopy()
	now, zero := metav1.Now(), int64(0)
	marked.DeletionTimestamp, marked.DeletionGracePeriodSeconds = &now, &zero
	_, err = src.Update(marked)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, "metadata.deletionTimestamp")
	assert.ErrorContains(t, err, "metadata.deletionGracePeriodSeconds")
	stored, _ := src.Get("ns", "a")
	assert.Equal(t, a, stored, "nothing written")
}

// A finalizer may be added to an object that is not being deleted, as
// kube-apiserver allows (a controller adds its own before it acts). A
// type without a generation keeps none when a Delete marks it.
func TestFinalizersMayBeAddedBeforeADelete(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.ConfigMap]()
	c, err := src.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}})
	require.NoError(t, err)
	c.Finalizers = []string{"example.com/a"}
	_, err = src.Update(c)
	require.NoError(t, err, "a finalizer added to an object not being deleted")
	require.NoError(t, src.Delete("ns", "c"))
	marked, ok := src.Get("ns", "c")
	require.True(t, ok, "its finalizer holds the deletion")
	assert.NotNil(t, marked.DeletionTimestamp)
	assert.Zero(t, marked.Generation, "a ConfigMap has no generation to move on")
}

func TestUpdateMayNotChangeTheUID(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	a, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	other := a.DeepCopy()
	other.UID = "someone-else"
	other.Labels = map[string]string{"v": "2"}
	_, err = src.Update(other)
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.ErrorContains(t, err, "Precondition failed: UID in precondition: someone-else, UID in object meta: "+string(a.UID))
	stored, _ := src.Get("ns", "a")
	assert.Equal(t, a, stored, "nothing written")

	other.UID = ""
	updated, err := src.Update(other)
	require.NoError(t, err)
	assert.Equal(t, a.UID, updated.UID, "no UID: the stored one")
}

// A name made from a GenerateName that an object already has is made
// again, as kube-apiserver makes it again (RetryGenerateName, GA in 1.32):
// the caller chose no name, so AlreadyExists would be a name it never gave.
func TestGenerateNameSkipsTakenNames(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	for _, name := range []string{"web-1", "web-2"} {
		_, err := src.Create(pod("ns", name))
		require.NoError(t, err)
	}
	got, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}})
	require.NoError(t, err, "a generated name that is taken is made again")
	assert.Equal(t, "web-3", got.Name)
	_, ok := src.Get("ns", "web-1")
	assert.True(t, ok)
	named, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", GenerateName: "web-"}})
	require.NoError(t, err)
	assert.Equal(t, "db", named.Name, "a name given is kept: GenerateName is for an object without one")
}

// A nil context or add function is an error from List and Watch, as from
// informer.Run and deltafifo.Pop, of the Source and of its views alike: a
// Watch given a nil context returned a Watcher whose Next panicked once
// its queue was empty, far from the call that was wrong.
func TestNilContextOrAddIsAnError(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	_, err := src.Create(pod("ns", "a"))
	assert.NoError(t, err)
	view, err := src.For(reflector.Target{Namespace: "ns"})
	assert.NoError(t, err)
	add := func(*corev1.Pod) error { return nil }
	for name, lw := range map[string]reflector.ListerWatcher[*corev1.Pod]{"Source": src, "view": view} {
		assert.NotPanics(t, func() {
			//nolint:staticcheck // a nil context on purpose
			_, err := lw.List(nil, reflector.ListOptions{}, add)
			assert.ErrorContains(t, err, "nil context", "%s: List", name)
			_, err = lw.List(context.Background(), reflector.ListOptions{}, nil)
			assert.ErrorContains(t, err, "nil", "%s: List", name)
			//nolint:staticcheck // a nil context on purpose
			w, err := lw.Watch(nil, reflector.WatchOptions{ResourceVersion: src.ResourceVersion()})
			assert.ErrorContains(t, err, "nil context", "%s: Watch", name)
			if w != nil {
				w.Close()
			}
		})
	}
}

// An object that embeds its metadata through a nil pointer is an error to
// write, as a nil object is; GetName panicked on it.
func TestWriteOfATypeEmbeddingANilPod(t *testing.T) {
	src := listwatchtest.NewSource[*ptrPod]()
	_, err := src.Create(&ptrPod{Pod: pod("ns", "a")})
	require.NoError(t, err)
	for name, write := range map[string]func(*ptrPod) (*ptrPod, error){
		"Create": src.Create, "Update": src.Update, "UpdateStatus": src.UpdateStatus,
	} {
		_, err := write(&ptrPod{summary: "no pod"})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "nil pointer", name)
	}
	got, ok := src.Get("ns", "a")
	require.True(t, ok)
	assert.Empty(t, got.summary, "nothing written")

	// A nil pointer to a part without metadata is a value like any other.
	extras := listwatchtest.NewSource[*withExtra]()
	_, err = extras.Create(&withExtra{Pod: *pod("ns", "a")})
	require.NoError(t, err)
}

// kube-apiserver keeps the first 58 characters of a generateName, so that
// the name it makes is at most 63 (SimpleNameGenerator,
// MaxGeneratedNameLength). A Source kept the whole generateName.
func TestGenerateNameIsCutTo58Characters(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	long := strings.Repeat("a", 70)
	got, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: long}})
	require.NoError(t, err)
	assert.Equal(t, long[:58]+"1", got.Name)
}

// kube-apiserver's UIDs are random UUIDs, unique across the cluster. A
// Source gave "uid-1", "uid-2", ..., the same in every Source: a
// ReplicaSet's ownerReference to the Deployment of one Source named the
// ReplicaSet of another too, and a controller matched the wrong owner.
func TestUIDsAreUniqueUUIDsAcrossSources(t *testing.T) {
	deployments := listwatchtest.NewSource[*appsv1.Deployment]()
	replicaSets := listwatchtest.NewSource[*appsv1.ReplicaSet]()
	d, err := deployments.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	require.NoError(t, err)
	rs, err := replicaSets.Create(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}})
	require.NoError(t, err)
	assert.NotEqual(t, d.UID, rs.UID)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	assert.Regexp(t, uuid, string(d.UID))
	assert.Regexp(t, uuid, string(rs.UID))
}

// A UID in an update is a precondition, checked before anything else:
// against an empty object when none is stored, whatever the kind
// (kube-apiserver's generic store, then etcd3's GuaranteedUpdate). A
// missing Pod's update with a UID was NotFound; a stale object's, with a
// resourceVersion of 0 of a Lease, the resourceVersion's Invalid.
func TestUpdateChecksTheUIDFirst(t *testing.T) {
	pods := listwatchtest.NewSource[*corev1.Pod]()
	p, err := pods.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	require.NoError(t, err)
	require.NoError(t, pods.Delete("ns", "p"))
	_, err = pods.Update(p)
	assert.True(t, apierrors.IsConflict(err), "a deleted object's update with its UID: %v", err)
	p.UID = ""
	_, err = pods.Update(p)
	assert.True(t, apierrors.IsNotFound(err), "without a UID: %v", err)

	leases := listwatchtest.NewSource[*coordinationv1.Lease]()
	l, err := leases.Create(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}})
	require.NoError(t, err)
	l.UID, l.ResourceVersion = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", ""
	_, err = leases.Update(l)
	assert.True(t, apierrors.IsConflict(err), "another UID, no resourceVersion: %v", err)
}

// A watch from "" or "0" with bookmarks is a streaming list, as
// kube-apiserver v1.37 makes it: the state, then the initial-events-end
// BOOKMARK. After RefuseStreaming it is the legacy watch from 0: the
// state, then live events, no bookmark.
func TestWatchFromNothingEndsTheStateWithABookmark(t *testing.T) {
	for _, rv := range []string{"", "0"} {
		for _, refuse := range []bool{false, true} {
			t.Run(fmt.Sprintf("rv=%q refuse=%v", rv, refuse), func(t *testing.T) {
				src := listwatchtest.NewSource[*corev1.Pod]()
				if refuse {
					src.RefuseStreaming()
				}
				_, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
				require.NoError(t, err)
				w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: rv, AllowBookmarks: true})
				require.NoError(t, err)
				defer w.Close()
				ev, err := w.Next()
				require.NoError(t, err)
				assert.Equal(t, reflector.Added, ev.Type)
				_, err = src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
				require.NoError(t, err)
				ev, err = w.Next()
				require.NoError(t, err)
				if refuse {
					assert.Equal(t, reflector.Added, ev.Type, "a live event, after no bookmark")
					return
				}
				require.Equal(t, reflector.Bookmark, ev.Type)
				assert.Equal(t, "true", ev.Object.GetAnnotations()[reflector.InitialEventsEndAnnotation])
				ev, err = w.Next()
				require.NoError(t, err)
				assert.Equal(t, reflector.Added, ev.Type)
				assert.Equal(t, "b", ev.Object.GetName())
			})
		}
	}
}
