package informer_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
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
		assert.Equal(t, "widgets.example.com", ws.Name())
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
	assert.ErrorContains(t, err, "nil Config")
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

func TestFactoryListerWatcherForUnstructuredNeedsAResource(t *testing.T) {
	f, err := informer.NewFactory(nil, informer.WithListerWatcher[*unstructured.Unstructured](listwatchtest.NewSource[*unstructured.Unstructured]()))
	require.NoError(t, err)
	_, err = informer.For[*unstructured.Unstructured](f, reflector.Target{})
	assert.ErrorContains(t, err, "needs Target.Resource")
}
