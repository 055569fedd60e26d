package indexer_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// generation returns n pods spread over 4 namespaces, all labelled gen=g.
func generation(g string, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("ns", i%4), fmt.Sprintf("%s-%d", g, i), g, "", "gen="+g)
	}
	return pods
}

// Readers running during Replace must see the old contents or the new, in
// items and indexes alike, never a mix. Run with -race.
func TestIndexerConcurrentReadersDuringReplace(t *testing.T) {
	sizes := map[string]int{"a": 200, "b": 120}
	gens := map[string][]*corev1.Pod{"a": generation("a", sizes["a"]), "b": generation("b", sizes["b"])}
	x := indexer.New(allIndexers())
	require.NoError(t, x.Replace(gens["a"], "1"))

	// consistent reports a problem with one read of len objects, all of
	// which must come from one generation of size want(gen).
	consistent := func(what string, objs []*corev1.Pod, want func(g string) int) error {
		if len(objs) == 0 {
			return fmt.Errorf("%s: empty", what)
		}
		g := objs[0].ResourceVersion
		for _, p := range objs {
			if p.ResourceVersion != g {
				return fmt.Errorf("%s: generations %s and %s mixed", what, g, p.ResourceVersion)
			}
		}
		if len(objs) != want(g) {
			return fmt.Errorf("%s: %d objects of generation %s, want %d", what, len(objs), g, want(g))
		}
		return nil
	}

	stop := make(chan struct{})
	errs := make(chan error, 4)
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := consistent("List", x.List(), func(g string) int { return sizes[g] }); err != nil {
					errs <- err
					return
				}
				byNS, err := x.ByIndex(indexer.NamespaceIndex, "ns1")
				if err == nil {
					err = consistent("ByIndex", byNS, func(g string) int { return sizes[g] / 4 })
				}
				if err != nil {
					errs <- err
					return
				}
				if values := x.ListIndexFuncValues("label"); len(values) != 1 {
					errs <- fmt.Errorf("label index holds values %v, want one generation", values)
					return
				}
			}
		})
	}

	for i := range 200 {
		g := "b"
		if i%2 == 1 {
			g = "a"
		}
		require.NoError(t, x.Replace(gens[g], g))
	}
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Writes racing with AddIndexers must end up in the new index too: half
// the objects are stored before, the other half while AddIndexers computes
// (its index function holds its first call until 500 of them are written)
// and after.
func TestIndexerAddIndexersDuringWrites(t *testing.T) {
	x := indexer.New[*corev1.Pod](nil)
	const n = 2000
	podN := func(i int) *corev1.Pod { return pod(fmt.Sprint("ns", i%7), fmt.Sprint("p", i), "1", "") }
	for i := range n / 2 {
		require.NoError(t, x.Add(podN(i)))
	}
	entered, progressed := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	byNamespace := func(p *corev1.Pod) ([]string, error) {
		// Only AddIndexers' first call waits: the writes that run the
		// function too (they are prepared with it from then on) do not.
		if first.CompareAndSwap(false, true) {
			close(entered)
			select {
			case <-progressed:
			case <-time.After(time.Minute): // a guard, not a wait
				t.Error("writes did not go on while AddIndexers computed")
			}
		}
		return []string{p.Namespace}, nil
	}
	var writer sync.WaitGroup
	writer.Go(func() {
		<-entered
		for i := n / 2; i < n; i++ {
			assert.NoError(t, x.Add(podN(i)))
			if i == n/2+500 {
				close(progressed)
			}
		}
	})
	require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: byNamespace}))
	writer.Wait()

	total := 0
	for _, ns := range x.ListIndexFuncValues(indexer.NamespaceIndex) {
		objs, err := x.ByIndex(indexer.NamespaceIndex, ns)
		require.NoError(t, err)
		for _, o := range objs {
			assert.Equal(t, ns, o.Namespace)
		}
		total += len(objs)
	}
	assert.Equal(t, n, total)
	// Every object, whichever side of AddIndexers it was written on, can be
	// deleted without a stale index entry.
	for i := range n {
		require.NoError(t, x.Delete(podN(i)))
	}
	assert.Empty(t, x.ListIndexFuncValues(indexer.NamespaceIndex))
}

// A write computes index values without the lock; if AddIndexers runs
// meanwhile, the write must compute them again for the new set of indexes.
func TestIndexerWriteRacingAddIndexersIsRecomputed(t *testing.T) {
	writes := map[string]func(x *podIndexer, p *corev1.Pod) error{
		"Add":     func(x *podIndexer, p *corev1.Pod) error { return x.Add(p) },
		"Replace": func(x *podIndexer, p *corev1.Pod) error { return x.Replace([]*corev1.Pod{p}, "1") },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			gate := func(p *corev1.Pod) ([]string, error) {
				once.Do(func() { // block the first computation only
					close(entered)
					<-release
				})
				return []string{p.Name}, nil
			}
			x := indexer.New(indexer.Indexers[*corev1.Pod]{"gate": gate})

			done := make(chan error)
			go func() { done <- write(x, pod("a", "slow", "1", "")) }()
			<-entered
			require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]}))
			close(release)
			require.NoError(t, <-done)

			keys, err := x.IndexKeys(indexer.NamespaceIndex, "a")
			require.NoError(t, err)
			assert.Equal(t, []string{"a/slow"}, keys, "the write must be indexed by the index added meanwhile")
			require.NoError(t, x.Delete(pod("a", "slow", "1", "")))
			assert.Empty(t, x.ListIndexFuncValues(indexer.NamespaceIndex))
		})
	}
}

// AddIndexers calls index functions without the lock: one may read the
// indexer, and a write of an object it already computed, made meanwhile,
// is computed again before the index is installed.
func TestIndexerAddIndexersComputesWithoutTheLock(t *testing.T) {
	x := indexer.New[*corev1.Pod](nil)
	require.NoError(t, x.Add(pod("ns", "a", "1", "", "team=red")))
	require.NoError(t, x.Add(pod("ns", "b", "1", "", "team=red")))

	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	byTeam := func(p *corev1.Pod) ([]string, error) {
		_ = x.List() // reads the indexer: no lock may be held here
		// Block AddIndexers' first computation only, not the writes
		// below, which run byTeam too.
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return []string{p.Labels["team"]}, nil
	}
	done := make(chan error)
	go func() { done <- x.AddIndexers(indexer.Indexers[*corev1.Pod]{"team": byTeam}) }()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("AddIndexers returned %v before computing", err)
	case <-time.After(time.Minute): // a guard, not a wait: the index function reads the indexer at once
		t.Fatal("AddIndexers holds the indexer's lock while it calls an index function")
	}
	// Writes while AddIndexers computes: both pods move to team blue,
	// whichever of them it computed already.
	require.NoError(t, x.Update(pod("ns", "a", "2", "", "team=blue")))
	require.NoError(t, x.Update(pod("ns", "b", "2", "", "team=blue")))
	require.NoError(t, x.Add(pod("ns", "c", "1", "", "team=blue")))
	close(release)
	require.NoError(t, <-done)

	blue, err := x.IndexKeys("team", "blue")
	require.NoError(t, err)
	slices.Sort(blue)
	assert.Equal(t, []string{"ns/a", "ns/b", "ns/c"}, blue)
	red, err := x.IndexKeys("team", "red")
	require.NoError(t, err)
	assert.Empty(t, red, "no stale value of an object updated while AddIndexers computed")
}

// AddIndexers returns while a writer keeps updating an object: it computes
// the objects stored when it began, once each, and writes made meanwhile
// bring the new index's values themselves. (It used to compute, pass after
// pass, what was written during the pass before, and to hold writes back
// for the last passes.)
func TestAddIndexersReturnsWhileWritesGoOn(t *testing.T) {
	x := indexer.New[*corev1.Pod](nil)
	require.NoError(t, x.Add(pod("a", "hot", "0", "")))
	var firstCalls atomic.Int64
	entered, progressed, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-entered
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := x.Update(pod("a", "hot", strconv.Itoa(i), "")); err != nil {
				t.Error(err)
				return
			}
			if i == 3 {
				close(progressed)
			}
		}
	})
	slow := func(p *corev1.Pod) ([]string, error) {
		if p.ResourceVersion == "0" { // AddIndexers' call: the object stored when it began
			firstCalls.Add(1)
			close(entered)
			select { // writes land during this call
			case <-progressed:
			case <-time.After(time.Minute): // a guard, not a wait
				t.Error("writes did not go on while AddIndexers computed")
			}
		}
		return []string{p.Namespace}, nil
	}
	require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{"ns": slow}))
	close(stop)
	wg.Wait()
	assert.Equal(t, int64(1), firstCalls.Load(), "index function calls on the object stored at the start")
	keys, err := x.IndexKeys("ns", "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/hot"}, keys)
}
