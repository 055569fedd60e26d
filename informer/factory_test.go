package informer_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// startSim starts a simulator with pods, deployments and a custom resource.
func startSim(t *testing.T, opts ...apisim.Option) *apisim.Server {
	t.Helper()
	widgets := apisim.CustomResource("example.com", "v1", "widgets", "Widget", true)
	s := apisim.New(append([]apisim.Option{apisim.WithResources(apisim.Pods(), apisim.Deployments(), widgets)}, opts...)...)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	return s
}

func simConfig(s *apisim.Server) *reflector.Config {
	return &reflector.Config{Host: s.URL()}
}

// eventually polls cond until it holds or the deadline passes: for tests
// over real HTTP, where synctest cannot follow the network.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFactoryPodsOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name string
		ct   reflector.ContentType
		mode reflector.Mode
		opts []reflector.HTTPOption
	}{
		{"json/list-watch", reflector.JSON, reflector.ListWatch, nil},
		{"json/watch-list", reflector.JSON, reflector.WatchList, nil},
		{"protobuf/list-watch", reflector.Protobuf, reflector.ListWatch, nil},
		{"protobuf/watch-list", reflector.Protobuf, reflector.WatchList, nil},
		{"json/watch-list/parallel", reflector.JSON, reflector.WatchList, []reflector.HTTPOption{reflector.WithDecodeWorkers(3)}},
		{"protobuf/watch-list/parallel", reflector.Protobuf, reflector.WatchList, []reflector.HTTPOption{reflector.WithDecodeWorkers(3)}},
		{"json/list-watch/sharing", reflector.JSON, reflector.ListWatch, nil},
		{"protobuf/watch-list/sharing", reflector.Protobuf, reflector.WatchList, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t)
			pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
			for i := range 30 {
				_, err := pods.Create(apisim.MakePod(fmt.Sprint("ns", i%3), fmt.Sprint("pod", i)))
				require.NoError(t, err)
			}
			fopts := []informer.FactoryOption{
				informer.WithListMode(tc.mode),
				informer.WithHTTPOptions(append(tc.opts, reflector.WithContentType(tc.ct))...),
			}
			if strings.HasSuffix(tc.name, "/sharing") {
				fopts = append(fopts, informer.WithSharing())
			}
			f, err := informer.NewFactory(simConfig(s), fopts...)
			require.NoError(t, err)
			inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
			require.NoError(t, err)
			v := newView(t)
			inf.AddEventHandler(v)

			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			f.Start(ctx)
			defer f.Shutdown()
			require.NoError(t, f.WaitForCacheSync(ctx))
			assert.Equal(t, 30, inf.Indexer().Len())

			for i := range 30 {
				switch i % 3 {
				case 0:
					_, err = pods.Delete(fmt.Sprint("ns", i%3), fmt.Sprint("pod", i))
				case 1:
					p, _ := pods.Get(fmt.Sprint("ns", i%3), fmt.Sprint("pod", i))
					p.Labels["touched"] = "yes"
					_, err = pods.Update(p)
				case 2:
					_, err = pods.Create(apisim.MakePod("new", fmt.Sprint("pod", i)))
				}
				require.NoError(t, err)
			}
			want := simKeys(t, pods)
			eventually(t, "the cache to converge", func() bool { return equal(want, podKeys(inf.Indexer().List())) })
			eventually(t, "the handler to converge", func() bool { return equal(want, strip(v.keys())) })
			for _, p := range inf.Indexer().List() {
				server, err := pods.Get(p.Namespace, p.Name)
				require.NoError(t, err)
				assert.Equal(t, server.Labels, p.Labels)
				assert.Equal(t, server.Spec, p.Spec)
			}
			// The factory gives every cache the namespace index, as
			// client-go's factories do, and it follows the changes.
			for ns, n := range map[string]int{"ns0": 0, "ns1": 10, "ns2": 10, "new": 10} {
				inNS, err := inf.Indexer().ByIndex(indexer.NamespaceIndex, ns)
				require.NoError(t, err)
				assert.Len(t, inNS, n, ns)
				for _, p := range inNS {
					assert.Equal(t, ns, p.Namespace)
				}
				assert.ElementsMatch(t, podKeys(inNS), podKeys(inf.Lister().ByNamespace(ns, nil)))
			}
		})
	}
}

func simKeys(t *testing.T, pods apisim.Objects[*corev1.Pod]) []string {
	all, _, err := pods.List("")
	require.NoError(t, err)
	return podKeys(all)
}

func podKeys(ps []*corev1.Pod) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, objkey.Key(p)+"@"+p.ResourceVersion)
	}
	sort.Strings(out)
	return out
}

// strip removes the "#uid" that view.keys adds.
func strip(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i], _, _ = strings.Cut(k, "#")
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFactorySharesInformersAndNamesUnsynced(t *testing.T) {
	s := startSim(t)
	f, err := informer.NewFactory(simConfig(s))
	require.NoError(t, err)
	a, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "x"})
	require.NoError(t, err)
	b, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "x"})
	require.NoError(t, err)
	assert.Same(t, a, b, "one informer per type and target")
	c, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "y"})
	require.NoError(t, err)
	assert.NotSame(t, a, c)

	// A resource the server does not serve never syncs; the error says
	// which informer and why.
	_, err = informer.For[*appsv1.ReplicaSet](f, reflector.Target{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	err = f.WaitForCacheSync(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replicasets.apps")
	assert.Contains(t, err.Error(), "404")
	assert.NotContains(t, err.Error(), "pods in")
}

func TestFactoryCustomResource(t *testing.T) {
	s := startSim(t)
	widgets := apisim.CustomResource("example.com", "v1", "widgets", "Widget", true)
	objs := apisim.Of[*unstructured.Unstructured](s, widgets)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "default", "name": "w1"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	_, err := objs.Create(w)
	require.NoError(t, err)

	// With the kind, and without it (objects of any kind are accepted).
	for _, kind := range []string{"Widget", ""} {
		f, err := informer.NewFactory(simConfig(s))
		require.NoError(t, err)
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
		inf, err := informer.ForResource(f, gvr, reflector.Target{Kind: kind})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		f.Start(ctx)
		require.NoError(t, f.WaitForCacheSync(ctx))
		got, ok := inf.Lister().Get("default", "w1")
		require.True(t, ok)
		size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
		assert.EqualValues(t, 3, size)
		assert.Equal(t, "example.com/v1", got.GetAPIVersion())
		f.Shutdown()
		cancel()
	}
}

// A handler's panic, in a Factory given WithFactoryHandlerErrorHandler,
// reaches it as a *processor.HandlerPanicError that names the informer:
// two informers of one type (here unstructured, for two resources) have
// listeners of the same names. Without a name an informer made with New
// over an HTTP ListerWatcher is named after what it lists.
func TestFactoryHandlerPanicsNameTheInformer(t *testing.T) {
	s := startSim(t)
	_, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "a"))
	require.NoError(t, err)
	_, err = apisim.Of[*appsv1.Deployment](s, apisim.Deployments()).Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}})
	require.NoError(t, err)
	var mu sync.Mutex
	var panics []string
	f, err := informer.NewFactory(simConfig(s), informer.WithFactoryHandlerErrorHandler(func(err error) {
		var pe *processor.HandlerPanicError
		require.ErrorAs(t, err, &pe)
		mu.Lock()
		defer mu.Unlock()
		panics = append(panics, pe.Processor+": "+pe.Listener+": "+pe.Key)
	}))
	require.NoError(t, err)
	boom := processor.HandlerFuncs[*unstructured.Unstructured]{AddFunc: func(*unstructured.Unstructured, bool) { panic("boom") }}
	for _, gvr := range []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("pods"),
		appsv1.SchemeGroupVersion.WithResource("deployments"),
	} {
		inf, err := informer.ForResource(f, gvr, reflector.Target{Namespace: "default"})
		require.NoError(t, err)
		inf.AddEventHandler(boom)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	eventually(t, "two panics", func() bool { mu.Lock(); defer mu.Unlock(); return len(panics) == 2 })
	assert.ElementsMatch(t, []string{
		`pods in "default" [unstructured]: listener 1 (processor.HandlerFuncs[*k8s.io/apimachinery/pkg/apis/meta/v1/unstructured.Unstructured]): default/a`,
		`deployments.apps in "default" [unstructured]: listener 1 (processor.HandlerFuncs[*k8s.io/apimachinery/pkg/apis/meta/v1/unstructured.Unstructured]): default/d`,
	}, panics)

	client, err := reflector.NewClient(simConfig(s))
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*unstructured.Unstructured](client, reflector.Target{
		Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), LabelSelector: "app=d"})
	require.NoError(t, err)
	assert.Equal(t, "deployments.apps (app=d) [unstructured]", informer.New[*unstructured.Unstructured](lw).Name())
	assert.Equal(t, "mine", informer.New[*unstructured.Unstructured](lw, informer.WithName[*unstructured.Unstructured]("mine")).Name())
}

func TestFactoryMetadataOnly(t *testing.T) {
	s := startSim(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	_, err := pods.Create(apisim.MakePod("default", "a"))
	require.NoError(t, err)
	f, err := informer.NewFactory(simConfig(s))
	require.NoError(t, err)
	inf, err := informer.ForMetadata(f, corev1.SchemeGroupVersion.WithResource("pods"), reflector.Target{Kind: "Pod"})
	require.NoError(t, err)
	// Beside the typed informer of pods, its name tells it apart (in
	// WaitForCacheSync's errors and handlers' panics).
	typed, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	assert.Equal(t, "pods", typed.Name())
	assert.Equal(t, "pods [metadata]", inf.Name())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	got, ok := inf.Lister().Get("default", "a")
	require.True(t, ok)
	assert.Equal(t, "PartialObjectMetadata", got.Kind)
	assert.NotEmpty(t, got.Labels)
}

// ForResource and ForMetadata take their resource from gvr: a Target that
// names another is refused, where it was overwritten without a word.
func TestForResourceRefusesATargetOfAnotherResource(t *testing.T) {
	f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	defer f.Shutdown()
	pods, secrets := corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithResource("secrets")
	_, err = informer.ForResource(f, pods, reflector.Target{Resource: secrets})
	assert.EqualError(t, err, "informer factory: an informer of pods.v1 given a Target of secrets.v1")
	_, err = informer.ForMetadata(f, pods, reflector.Target{Resource: secrets})
	assert.EqualError(t, err, "informer factory: an informer of pods.v1 given a Target of secrets.v1")
	_, err = informer.ForResource(f, pods, reflector.Target{Resource: pods})
	assert.NoError(t, err)
	_, err = informer.ForMetadata(f, pods, reflector.Target{})
	assert.NoError(t, err)
	// For a k8s.io/api type, a group and version without a resource is
	// refused as NewListerWatcher refuses it, also once the informer of
	// the type's own resource exists: it was filled in, and that informer
	// was returned.
	_, err = informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{Resource: schema.GroupVersionResource{Version: "v2"}})
	assert.ErrorContains(t, err, "has a group or version but no resource")
}

func TestFactoryReflectorSettings(t *testing.T) {
	s := startSim(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	_, err := pods.Create(apisim.MakePod("default", "a"))
	require.NoError(t, err)
	f, err := informer.NewFactory(simConfig(s),
		informer.WithListMode(reflector.ListWatch),
		informer.WithRelistInterval(300*time.Millisecond),
		informer.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	// The relist interval reaches the reflector: more LISTs follow.
	eventually(t, "periodic relists", func() bool { return s.Requests(apisim.VerbList, apisim.Pods()) >= 3 })
}

// WithMinWatchTimeout reaches the factory's informers: watches asked to
// end within one to two seconds end, and the reflector opens the next.
func TestFactoryMinWatchTimeout(t *testing.T) {
	s := startSim(t)
	f, err := informer.NewFactory(simConfig(s), informer.WithListMode(reflector.ListWatch),
		informer.WithMinWatchTimeout(time.Second))
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	eventually(t, "a second watch", func() bool { return s.Requests(apisim.VerbWatch, apisim.Pods()) >= 2 })
	assert.Equal(t, 1, s.Requests(apisim.VerbList, apisim.Pods()), "a watch that timed out is resumed, not relisted")
}

// WithPageSize reaches the factory's informers: five pods in pages of two
// are three LISTs.
func TestFactoryPageSize(t *testing.T) {
	s := startSim(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		_, err := pods.Create(apisim.MakePod("default", name))
		require.NoError(t, err)
	}
	f, err := informer.NewFactory(simConfig(s), informer.WithListMode(reflector.ListWatch), informer.WithPageSize(2))
	require.NoError(t, err)
	inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	assert.Len(t, inf.Indexer().List(), 5)
	assert.Equal(t, 3, s.Requests(apisim.VerbList, apisim.Pods()))
}

// WithDefaultResync reaches the factory's informers' handlers, and
// WithFactoryLogger is where they log (here, a handler's panic).
func TestFactoryDefaultResyncAndLogger(t *testing.T) {
	s := startSim(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	_, err := pods.Create(apisim.MakePod("default", "a"))
	require.NoError(t, err)
	var logs syncBuffer
	f, err := informer.NewFactory(simConfig(s),
		informer.WithDefaultResync(time.Second),
		informer.WithFactoryLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	var resyncs atomic.Int32
	inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { panic("handler bug") },
		UpdateFunc: func(old, p *corev1.Pod) { resyncs.Add(1) },
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	eventually(t, "a resync", func() bool { return resyncs.Load() > 0 })
	eventually(t, "the panic in the factory's log", func() bool { return strings.Contains(logs.String(), "handler bug") })
}

// After Shutdown no informer can sync any more: WaitForCacheSync must say so
// instead of blocking until its context ends (for ever with Background).
func TestWaitForCacheSyncAfterShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Nothing listens on port 1: the informer never syncs.
		f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
		require.NoError(t, err)
		_, err = informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		f.Start(t.Context())
		f.Shutdown()

		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		t0 := time.Now()
		err = f.WaitForCacheSync(ctx)
		assert.Error(t, err)
		assert.Zero(t, time.Since(t0), "WaitForCacheSync waited for its context although every informer had stopped: %v", err)
	})
}

// A target that spells out the resource of a k8s.io/api type gets the same
// informer as one that leaves it out (the resource was watched twice).
func TestEquivalentTargetsShareOneInformer(t *testing.T) {
	f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	a, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	b, err := informer.For[*corev1.Pod](f, reflector.Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}})
	require.NoError(t, err)
	assert.Same(t, a, b)

	// Selectors that select the same objects, spelled differently.
	web, err := informer.For[*corev1.Pod](f, reflector.Target{LabelSelector: "app=web,tier=be", FieldSelector: "spec.nodeName=n1,status.phase!=Failed"})
	require.NoError(t, err)
	for _, target := range []reflector.Target{
		{LabelSelector: "tier=be,app=web", FieldSelector: "status.phase!=Failed,spec.nodeName=n1"},
		{LabelSelector: " app = web, tier=be ", FieldSelector: "spec.nodeName==n1,status.phase!=Failed"},
	} {
		same, err := informer.For[*corev1.Pod](f, target)
		require.NoError(t, err)
		assert.Same(t, web, same, "%+v", target)
	}
	other, err := informer.For[*corev1.Pod](f, reflector.Target{LabelSelector: "app=web"})
	require.NoError(t, err)
	assert.NotSame(t, web, other)

	// Two requirements on one key in either order, "==" for "=", one given
	// twice: labels.Parse sorts by key only and keeps "==".
	for _, pair := range [][2]string{
		{"app!=x,app!=y", "app!=y,app!=x"},
		{"app==web", "app=web"},
		{"tier=be,app=web,app!=x", "app!=x,tier=be,app=web"},
		{"app in (a,b)", "app in (b, a)"},
		{"app=web,app=web", "app=web"},
	} {
		a, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "pairs", LabelSelector: pair[0]})
		require.NoError(t, err)
		b, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "pairs", LabelSelector: pair[1]})
		require.NoError(t, err)
		assert.Same(t, a, b, "%q and %q", pair[0], pair[1])
	}
}

// A Factory's informer is shared by everyone who asks for its Target, so a
// second transform or watch error handler is refused rather than set: the
// first caller's would have been dropped without a word, its Lister then
// holding what its own transform removes. nil still clears either.
func TestSharedInformerRefusesASecondTransformOrErrorHandler(t *testing.T) {
	f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	a, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	b, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	require.Same(t, a, b)
	keep := func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }

	require.NoError(t, a.SetTransform(keep))
	assert.ErrorContains(t, b.SetTransform(keep), "a transform is set already")
	require.NoError(t, b.SetTransform(nil))
	require.NoError(t, b.SetTransform(keep))

	require.NoError(t, a.SetWatchErrorHandler(func(error) {}))
	assert.ErrorContains(t, b.SetWatchErrorHandler(func(error) {}), "an error handler is set already")
	require.NoError(t, b.SetWatchErrorHandler(nil))
	require.NoError(t, b.SetWatchErrorHandler(func(error) {}))
}

// After Shutdown, For creates nothing (it would never run) and says so;
// informers it made before are still returned.
func TestForAfterShutdown(t *testing.T) {
	f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	before, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	f.Shutdown()
	_, err = informer.For[*corev1.Pod](f, reflector.Target{Namespace: "late"})
	assert.ErrorIs(t, err, informer.ErrShutdown)
	again, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	assert.Same(t, before, again)
}

// A nil context starts nothing and waits for nothing: no panic.
func TestFactoryWithNilContext(t *testing.T) {
	f, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	var nilCtx context.Context
	f.Start(nilCtx)
	assert.ErrorContains(t, f.WaitForCacheSync(nilCtx), "nil context")
	assert.ErrorContains(t, f.WaitForCacheSync(t.Context()), "not started: Start was given a nil context",
		"an informer the refused Start did not start is not synced")

	// An informer created after the refused Start was never started: it is
	// not waited for (as after any Start), nor blamed on the nil context.
	f2, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	f2.Start(nilCtx)
	_, err = informer.For[*corev1.Pod](f2, reflector.Target{})
	require.NoError(t, err)
	assert.NoError(t, f2.WaitForCacheSync(t.Context()))
	f2.Shutdown()
	f.Shutdown()
}

// A nil Factory (NewFactory's, on an error not checked) gives a clear
// error, not a panic.
func TestForWithANilFactory(t *testing.T) {
	var f *informer.Factory
	_, err := informer.For[*corev1.Pod](f, reflector.Target{})
	assert.EqualError(t, err, "informer factory: an informer of *v1.Pod: the Factory is nil")
	_, err = informer.ForResource(f, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, reflector.Target{})
	assert.ErrorContains(t, err, "the Factory is nil")
	_, err = informer.ForMetadata(f, corev1.SchemeGroupVersion.WithResource("pods"), reflector.Target{})
	assert.ErrorContains(t, err, "the Factory is nil")
	f.Start(t.Context())
	assert.ErrorContains(t, f.WaitForCacheSync(t.Context()), "the Factory is nil")
	f.Shutdown()
}

// Shutdown closes the Factory's connections: over HTTP/2 the connection of
// a watch just cancelled is not idle yet, and stayed open for the 90 s idle
// timeout (a program that makes factories again and again piled them up).
func TestShutdownClosesConnections(t *testing.T) {
	sim := apisim.New(apisim.WithResources(apisim.Pods()))
	t.Cleanup(sim.Close)
	srv := httptest.NewUnstartedServer(sim)
	var open atomic.Int32
	allClosed := make(chan struct{}, 1)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			if open.Add(-1) == 0 {
				select {
				case allClosed <- struct{}{}:
				default:
				}
			}
		}
	}
	f := newTLSFactory(t, srv)
	_, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	f.Start(t.Context())
	require.NoError(t, f.WaitForCacheSync(t.Context()))
	require.NotZero(t, open.Load())
	f.Shutdown()
	select {
	case <-allClosed:
	case <-time.After(30 * time.Second): // a deadline, not a wait
		t.Fatalf("%d connections still open after Shutdown", open.Load())
	}
}

// A Factory's informers share one HTTP/2 connection, and come back on one
// after it is reset (an apiserver that crashed, a load balancer dropping
// its connections), however their backoffs spread them, through a
// handshake slowed by latency. Before the rest Client's gate started a
// new round once no connection was up, they dialed while the first new
// one was in its handshake: 8–19 connections for 200 here.
func TestFactoryComesBackOnOneConnectionAfterACut(t *testing.T) {
	sim := apisim.New(apisim.WithResources(apisim.Pods()))
	t.Cleanup(sim.Close)
	var conns, watching atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			watching.Add(1)
			defer watching.Add(-1)
		}
		sim.ServeHTTP(w, r)
	}))
	ln := &slowListener{Listener: srv.Listener, d: 20 * time.Millisecond}
	srv.Listener = ln
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	f := newTLSFactory(t, srv)
	const n = 200
	for i := range n {
		_, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: fmt.Sprint("ns-", i)})
		require.NoError(t, err)
	}
	f.Start(t.Context())
	t.Cleanup(f.Shutdown)
	require.NoError(t, f.WaitForCacheSync(t.Context()))
	allWatching := func(when string) {
		deadline := time.Now().Add(30 * time.Second) // a deadline, not a wait
		for watching.Load() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d informers watching", when, watching.Load(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	allWatching("at the start")
	require.EqualValues(t, 1, conns.Load(), "connections at the start")
	ln.reset()
	for watching.Load() == n { // the cut reaches the handlers
		time.Sleep(time.Millisecond)
	}
	allWatching("after the cut")
	assert.EqualValues(t, 1, conns.Load()-1, "connections after the cut")
}

// slowListener's connections take d to send each write, as over a network
// with latency: a TLS handshake takes a few times d.
type slowListener struct {
	net.Listener
	d     time.Duration
	mu    sync.Mutex
	conns []net.Conn
}

func (l *slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return slowConn{c, l.d}, nil
}

// reset resets every connection accepted, as a server that crashed or a
// load balancer that dropped them would.
func (l *slowListener) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	l.conns = nil
}

type slowConn struct {
	net.Conn
	d time.Duration
}

func (c slowConn) Write(p []byte) (int, error) {
	time.Sleep(c.d)
	return c.Conn.Write(p)
}

// newTLSFactory starts srv over TLS with HTTP/2, closed when the test
// ends, and returns a Factory that trusts it.
func newTLSFactory(t *testing.T, srv *httptest.Server) *informer.Factory {
	t.Helper()
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f, err := informer.NewFactory(&reflector.Config{Host: srv.URL, TLS: reflector.TLSConfig{CAData: caPEM}})
	require.NoError(t, err)
	return f
}
