package informer_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// Code that takes a Factory can be tested without an apiserver: the
// Factory's informers of a type list and watch the ListerWatcher given.
func TestFactoryWithListerWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := listwatchtest.NewSource[*corev1.Pod]()
		_, err := pods.Create(pod("default", "web"))
		require.NoError(t, err)
		widgets := listwatchtest.NewSource[*unstructured.Unstructured]()
		f, err := informer.NewFactory(nil,
			informer.WithListerWatcher[*corev1.Pod](pods),
			informer.WithListerWatcher[*unstructured.Unstructured](widgets),
			informer.WithListerWatcher[*corev1.Secret](nil), // ignored
		)
		require.NoError(t, err, "no Config is needed")

		inf, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "default"})
		require.NoError(t, err)
		assert.Equal(t, `pods in "default"`, inf.Name())
		again, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "default"})
		require.NoError(t, err)
		assert.Same(t, inf, again, "one informer per type and target, as ever")
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
		ws, err := informer.ForResource(f, gvr, reflector.Target{Kind: "Widget"})
		require.NoError(t, err)
		assert.Equal(t, "widgets.example.com [unstructured]", ws.Name())
		_, err = informer.For[*corev1.ConfigMap](f, reflector.Target{})
		assert.ErrorContains(t, err, "no ListerWatcher for *v1.ConfigMap")
		_, err = informer.For[*corev1.Secret](f, reflector.Target{})
		assert.ErrorContains(t, err, "no ListerWatcher for *v1.Secret", "the nil one was ignored")

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f.Start(ctx)
		defer f.Shutdown()
		require.NoError(t, f.WaitForCacheSync(ctx))
		_, ok := inf.Lister().Get("default", "web")
		assert.True(t, ok)
		_, err = pods.Create(pod("default", "db"))
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, 2, inf.Indexer().Len())
		dbs, err := inf.Indexer().ByIndex("namespace", "default")
		require.NoError(t, err)
		assert.Len(t, dbs, 2, "the namespace index, as every Factory informer has")
	})
}

func TestFactoryWithoutConfigOrListerWatchers(t *testing.T) {
	_, err := informer.NewFactory(nil)
	assert.ErrorContains(t, err, "informer factory: nil Config")
	assert.ErrorContains(t, err, "WithListerWatcher", "the way to do without one")
}

// A list mode that is none of reflector's is NewFactory's error, not a
// Factory whose informers run some mix of the modes.
func TestFactoryRefusesAnInvalidListMode(t *testing.T) {
	for _, mode := range []reflector.Mode{-7, 42} {
		_, err := informer.NewFactory(nil, informer.WithListMode(mode),
			informer.WithListerWatcher[*corev1.Pod](listwatchtest.NewSource[*corev1.Pod]()))
		assert.ErrorContains(t, err, fmt.Sprintf("WithListMode(%d)", mode))
	}
	for _, mode := range []reflector.Mode{reflector.Auto, reflector.ListWatch, reflector.WatchList} {
		_, err := informer.NewFactory(nil, informer.WithListMode(mode),
			informer.WithListerWatcher[*corev1.Pod](listwatchtest.NewSource[*corev1.Pod]()))
		assert.NoError(t, err, "mode %d", mode)
	}
}

// An informer the Factory started but that runs elsewhere (Run returned
// ErrStarted) is not waited for once it stops.
func TestFactoryWaitEndsWhenAnInformerRunElsewhereStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := informer.NewFactory(nil, informer.WithListerWatcher[*corev1.Pod](blockingLW{}))
		require.NoError(t, err)
		inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		byHand, stopByHand := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(byHand) }()
		synctest.Wait()
		f.Start(t.Context()) // its Run gets ErrStarted
		defer f.Shutdown()
		stopByHand()
		require.NoError(t, <-done)
		err = f.WaitForCacheSync(t.Context()) // would wait for ever without Stopped
		assert.EqualError(t, err, "caches not synced: pods: stopped before it synced")
	})
}

// A second Start starts only the informers created since the first: one
// already running is not run again (its Run would refuse, and the Factory
// would lose the first Start's way to stop it). Shutdown stops the
// informers of both Starts while neither Start's context has ended, and
// each informer listed once.
func TestSecondStartStartsOnlyNewInformers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := listwatchtest.NewSource[*corev1.Pod]()
		configMaps := listwatchtest.NewSource[*corev1.ConfigMap]()
		var logs syncBuffer
		f, err := informer.NewFactory(nil, informer.WithListMode(reflector.ListWatch),
			informer.WithFactoryLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			informer.WithListerWatcher[*corev1.Pod](pods),
			informer.WithListerWatcher[*corev1.ConfigMap](configMaps))
		require.NoError(t, err)
		_, err = informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		first, cancelFirst := context.WithCancel(t.Context())
		defer cancelFirst() // only so that a failure leaves nothing running
		f.Start(first)
		synctest.Wait()

		_, err = informer.For[*corev1.ConfigMap](f, reflector.Target{})
		require.NoError(t, err)
		second, cancelSecond := context.WithCancel(t.Context())
		defer cancelSecond()
		f.Start(second)
		require.NoError(t, f.WaitForCacheSync(t.Context()))

		shutDown := make(chan struct{})
		go func() {
			f.Shutdown()
			close(shutDown)
		}()
		select {
		case <-shutDown:
		case <-time.After(time.Hour): // the bubble's clock: no real wait
			t.Fatal("Shutdown still waiting an hour later: the informer the first Start ran was not stopped")
		}
		podLists, _ := pods.Requests()
		configMapLists, _ := configMaps.Requests()
		assert.EqualValues(t, 1, podLists, "LISTs of pods")
		assert.EqualValues(t, 1, configMapLists, "LISTs of configmaps")
		assert.NotContains(t, logs.String(), "did not run")
	})
}

// An informer whose Start's context ended has stopped for good. For then
// makes a new one in its place, which the next Start runs: the Factory
// handed out the stopped one, which Start never ran again, and
// WaitForCacheSync said nil (it had synced once) over a cache frozen for
// ever.
func TestForReplacesAnInformerWhoseStartEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := listwatchtest.NewSource[*corev1.Pod]()
		_, err := pods.Create(pod("a", "p1"))
		require.NoError(t, err)
		f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(pods.For))
		require.NoError(t, err)
		defer f.Shutdown()
		first, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		ctx1, stop1 := context.WithCancel(t.Context())
		f.Start(ctx1)
		require.NoError(t, f.WaitForCacheSync(ctx1))
		again, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		assert.Same(t, first, again, "a running informer is shared")
		stop1()

		second, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		assert.NotSame(t, first, second, "the stopped informer handed out again")
		seen := make(chan string, 10)
		second.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) { seen <- p.Name }})
		ctx2, stop2 := context.WithCancel(t.Context())
		defer stop2()
		f.Start(ctx2)
		require.NoError(t, f.WaitForCacheSync(ctx2))
		_, err = pods.Create(pod("a", "p2"))
		require.NoError(t, err)
		synctest.Wait()
		_, ok := second.Lister().Get("a", "p2")
		assert.True(t, ok, "p2 not in the new informer's cache")
		assert.ElementsMatch(t, []string{"p1", "p2"}, drain(seen))
		<-first.Stopped()
		_, ok = first.Lister().Get("a", "p2")
		assert.False(t, ok, "the first informer stays stopped")
		same, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		assert.Same(t, second, same)
	})
}

// An informer run elsewhere (the Factory's Run of it returned ErrStarted)
// is not replaced when the Factory's Start's context ends: it still runs,
// and a second one would watch and cache beside it. It is once that run
// returns.
func TestForKeepsAnInformerRunningElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := listwatchtest.NewSource[*corev1.Pod]()
		f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(pods.For), informer.WithFactoryLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		defer f.Shutdown()
		inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		byHand, stopByHand := context.WithCancel(t.Context())
		defer stopByHand()
		done := make(chan error, 1)
		go func() { done <- inf.Run(byHand) }()
		synctest.Wait()
		ctx, stop := context.WithCancel(t.Context())
		f.Start(ctx) // its Run returns ErrStarted
		synctest.Wait()
		stop()
		again, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		assert.Same(t, inf, again, "a second informer in place of one still running")
		stopByHand()
		require.NoError(t, <-done)
		replaced, err := informer.For[*corev1.Pod](f, reflector.Target{})
		require.NoError(t, err)
		assert.NotSame(t, inf, replaced, "the stopped informer handed out again")
	})
}

// A Target.Resource with a group or version but no resource is refused,
// whatever the ListerWatcher: with one of the Factory's own, it made an
// informer apart from the type's own.
func TestForRefusesAPartialResourceWithAListerWatcher(t *testing.T) {
	f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(listwatchtest.NewSource[*corev1.Pod]().For))
	require.NoError(t, err)
	defer f.Shutdown()
	_, err = informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{Resource: schema.GroupVersionResource{Version: "v1"}})
	assert.EqualError(t, err, "informer factory: Target.Resource v1 has a group or version but no resource: give all three, or none")
}

// drain returns what ch holds now.
func drain[V any](ch chan V) []V {
	var out []V
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

func TestFactoryListerWatcherForUnstructuredNeedsAResource(t *testing.T) {
	f, err := informer.NewFactory(nil, informer.WithListerWatcher[*unstructured.Unstructured](listwatchtest.NewSource[*unstructured.Unstructured]()))
	require.NoError(t, err)
	_, err = informer.For[*unstructured.Unstructured](f, reflector.Target{})
	assert.ErrorContains(t, err, "needs Target.Resource")
}

// With WithListerWatcherFor and a Source's For, each informer sees what a
// server would serve its Target: its namespace and selectors, with objects
// that enter or leave the selection added and deleted.
func TestFactoryWithListerWatcherFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pods := listwatchtest.NewSource[*corev1.Pod]()
		create := func(ns, name, app string) *corev1.Pod {
			p := pod(ns, name)
			p.Labels = map[string]string{"app": app}
			created, err := pods.Create(p)
			require.NoError(t, err)
			return created
		}
		web := create("a", "web", "web")
		create("a", "db", "db")
		onN1 := pod("b", "web")
		onN1.Labels = map[string]string{"app": "web"}
		onN1.Spec.NodeName = "n1"
		_, err := pods.Create(onN1)
		require.NoError(t, err)
		var targets []reflector.Target
		f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(func(target reflector.Target) (reflector.ListerWatcher[*corev1.Pod], error) {
			targets = append(targets, target)
			return pods.For(target)
		}))
		require.NoError(t, err)
		webInA, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "a", LabelSelector: "app=web"})
		require.NoError(t, err)
		var seen []string
		webInA.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, _ bool) { seen = append(seen, "add "+p.Name) },
			UpdateFunc: func(_, p *corev1.Pod) { seen = append(seen, "update "+p.Name) },
			DeleteFunc: func(p *corev1.Pod, _ bool) { seen = append(seen, "delete "+p.Name+" app="+p.Labels["app"]) },
		})
		named, err := informer.For[*corev1.Pod](f, reflector.Target{FieldSelector: "metadata.name=db"})
		require.NoError(t, err)
		onNode, err := informer.For[*corev1.Pod](f, reflector.Target{FieldSelector: "spec.nodeName=n1"})
		require.NoError(t, err)
		_, err = informer.For[*corev1.Pod](f, reflector.Target{FieldSelector: "spec.priority=1"})
		assert.True(t, apierrors.IsBadRequest(err), "a field pods are not selected by: %v", err)
		assert.ErrorContains(t, err, `the ListerWatcher of pods (spec.priority=1): field label not supported: spec.priority`)
		_, err = informer.For[*corev1.Pod](f, reflector.Target{LabelSelector: "app in (web"})
		assert.True(t, apierrors.IsBadRequest(err), "a selector that does not parse: %v", err)
		assert.Len(t, targets, 5, "asked once for each Target")

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f.Start(ctx)
		defer f.Shutdown()
		require.NoError(t, f.WaitForCacheSync(ctx))
		assert.Equal(t, []string{"a/web"}, webInA.Indexer().ListKeys())
		assert.Equal(t, []string{"a/db"}, named.Indexer().ListKeys())
		assert.Equal(t, []string{"b/web"}, onNode.Indexer().ListKeys())

		// web leaves the selection, db enters it.
		web.Labels["app"] = "gone"
		_, err = pods.Update(web)
		require.NoError(t, err)
		db, _ := pods.Get("a", "db")
		db.Labels["app"] = "web"
		_, err = pods.Update(db)
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []string{"a/db"}, webInA.Indexer().ListKeys())
		assert.Equal(t, []string{"add web", "delete web app=web", "add db"}, seen,
			"a pod that stops matching is deleted with the state the informer had")
	})
}

// A WithListerWatcherFor function may ask the Factory for informers: it is
// called outside the Factory's lock, where it deadlocked. (Not in a
// synctest bubble: a goroutine blocked on a mutex would hang the bubble
// rather than fail the test.)
func TestListerWatcherForMayUseTheFactory(t *testing.T) {
	pods := listwatchtest.NewSource[*corev1.Pod]()
	configMaps := listwatchtest.NewSource[*corev1.ConfigMap]()
	var f *informer.Factory
	f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(configMaps.For),
		informer.WithListerWatcherFor(func(target reflector.Target) (reflector.ListerWatcher[*corev1.Pod], error) {
			if _, err := informer.For[*corev1.ConfigMap](f, reflector.Target{Namespace: target.Namespace}); err != nil {
				return nil, err
			}
			return pods.For(target)
		}))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "a"})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("informer.For still blocked after a minute: a deadlock on the Factory's lock")
	}
	f.Shutdown()
	_, err = informer.For[*corev1.Pod](f, reflector.Target{Namespace: "b"})
	assert.ErrorIs(t, err, informer.ErrShutdown)
	_, err = informer.For[*corev1.Pod](f, reflector.Target{Namespace: "a"})
	assert.NoError(t, err, "the informer made before Shutdown")
}
