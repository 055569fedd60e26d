package informer_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
)

// A change the informer prepared (ran the index functions on) before
// AddIndexers began is refused by the indexer's Commit, prepared with the
// indexes of before: it is prepared again and stored, and the handlers are
// told, not dropped.
func TestChangePreparedBeforeAddIndexersIsStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		var hold atomic.Bool
		inPrepare, release := make(chan struct{}), make(chan struct{})
		byName := func(p *corev1.Pod) ([]string, error) {
			if p.Name == "b" && hold.CompareAndSwap(true, false) {
				close(inPrepare)
				<-release
			}
			return []string{p.Name}, nil
		}
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName}))
		var mu sync.Mutex
		var added []string
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			mu.Lock()
			defer mu.Unlock()
			added = append(added, p.Name)
		}})
		defer start(t, inf)()
		synctest.Wait()
		require.True(t, inf.HasSynced())

		hold.Store(true)
		src.Create(pod("ns", "b"))
		<-inPrepare // the informer prepares b with the indexes of before
		require.NoError(t, inf.AddIndexers(indexer.Indexers[*corev1.Pod]{
			"byNamespace": indexer.NamespaceIndexFunc[*corev1.Pod],
		}))
		close(release)
		synctest.Wait()

		_, ok := inf.Indexer().GetByKey("ns/b")
		assert.True(t, ok, "b is cached")
		mu.Lock()
		assert.Equal(t, []string{"a", "b"}, added, "the handler is told of b")
		mu.Unlock()
		keys, err := inf.Indexer().IndexKeys("byNamespace", "ns")
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"ns/a", "ns/b"}, keys, "b is in the index added meanwhile")
	})
}
