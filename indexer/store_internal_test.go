package indexer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkInvariants verifies that the indexes and the stored index values
// describe each other exactly: every value of every entry lists its key,
// every key listed under a value is stored with that value, and no value
// has an empty key set; the values entries share (single) are those of
// the one index, and not modified.
func checkInvariants[T metav1.Object](t *testing.T, s *store[T]) {
	t.Helper()
	require.Len(t, s.values, len(s.indexes.funcs))
	if len(s.values) != 1 {
		require.Empty(t, s.single, "shared values with %d indexes", len(s.values))
	}
	for v, c := range s.single {
		require.Equal(t, [][]string{{v}}, c, "the shared values of %q", v)
		require.NotEmpty(t, s.values[0][v], "the shared values of %q, which no entry has", v)
	}
	for key, e := range s.items {
		require.Len(t, e.values, len(s.values), key)
		for i, vs := range e.values {
			for _, v := range vs {
				require.Contains(t, s.values[i][v], key, "index %s value %q", s.indexes.names[i], v)
			}
		}
	}
	for i, vi := range s.values {
		for v, keys := range vi {
			require.NotEmpty(t, keys, "index %s keeps the empty value %q", s.indexes.names[i], v)
			for key := range keys {
				e, ok := s.items[key]
				require.True(t, ok, "index %s value %q lists the absent key %s", s.indexes.names[i], v, key)
				require.True(t, slices.Contains(e.values[i], v), "index %s value %q lists %s, which lacks it", s.indexes.names[i], v, key)
			}
		}
	}
}

// TestStoreInvariantsUnderRandomWrites applies a deterministic random
// sequence of adds, updates, deletes, replaces and index additions and
// checks the invariants after each.
func TestStoreInvariantsUnderRandomWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomPod := func() *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprint("ns", rng.IntN(3)),
			Name:      fmt.Sprint("p", rng.IntN(20)),
			Labels:    map[string]string{},
		}}
		for range rng.IntN(3) {
			p.Labels[fmt.Sprint("k", rng.IntN(3))] = fmt.Sprint("v", rng.IntN(2))
		}
		if rng.IntN(2) == 0 {
			p.Spec.NodeName = fmt.Sprint("n", rng.IntN(3))
		}
		return p
	}
	labels := func(p *corev1.Pod) ([]string, error) {
		var out []string
		for k, v := range p.Labels {
			out = append(out, k+"="+v)
		}
		return out, nil
	}
	node := func(p *corev1.Pod) ([]string, error) {
		if p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}

	x := New(Indexers[*corev1.Pod]{"labels": labels})
	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 60:
			require.NoError(t, x.Add(randomPod()))
		case r < 90:
			require.NoError(t, x.Delete(randomPod()))
		case r < 99:
			list := make([]*corev1.Pod, rng.IntN(15))
			for i := range list {
				list[i] = randomPod()
			}
			require.NoError(t, x.Replace(list, ""))
		default:
			name := fmt.Sprint("node", step)
			require.NoError(t, x.AddIndexers(Indexers[*corev1.Pod]{name: node}))
		}
		checkInvariants(t, x.s)
	}
}

// A store that shrinks to under a quarter of its peak copies its maps into
// maps of its size, and stays whole while doing so.
func TestStoreCompactsAfterShrinking(t *testing.T) {
	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod], "node": byNode})
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("ns", i%7), Name: fmt.Sprint("p", i)},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprint("n", i%5)},
		}
	}
	const n = 4 * shrinkAbove
	for i := range n {
		require.NoError(t, x.Add(pod(i)))
	}
	require.Equal(t, n, x.s.peak)
	addr := func(m any) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
	items, namespaces, nodes := addr(x.s.items), addr(x.s.values[0]), addr(x.s.values[1])
	n1 := addr(x.s.values[1]["n1"]) // a key set that keeps keys
	const kept = n/4 - 1
	for i := range n - kept {
		require.NoError(t, x.Delete(pod(i)))
	}
	require.Equal(t, kept, x.Len())
	require.Equal(t, kept, x.s.peak, "not compacted under a quarter of the peak")
	require.NotEqual(t, items, addr(x.s.items), "the objects' map was not replaced")
	require.NotEqual(t, namespaces, addr(x.s.values[0]), "the namespace index's map was not replaced")
	require.NotEqual(t, nodes, addr(x.s.values[1]), "the node index's map was not replaced")
	require.NotEqual(t, n1, addr(x.s.values[1]["n1"]), "a value's key set was not replaced")
	checkInvariants(t, x.s)
	got, err := x.ByIndex("node", "n1")
	require.NoError(t, err)
	require.Len(t, got, kept/5)
	for i := n - kept; i < n; i++ {
		_, ok := x.GetByKey(fmt.Sprintf("ns%d/p%d", i%7, i))
		require.True(t, ok, "p%d", i)
	}
}

// Compacting while AddIndexers computes a new index (it changes the store
// under the read-write lock alone) loses nothing: the new index holds every
// object left, and the indexes and entries agree.
func TestStoreCompactsWhileIndexesAreAdded(t *testing.T) {
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("ns", i%7), Name: fmt.Sprint("p", i)}}
	}
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	const n = 4 * shrinkAbove
	for round := range 10 {
		x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
		for i := range n {
			require.NoError(t, x.Add(pod(i)))
		}
		added := make(chan error)
		go func() { added <- x.AddIndexers(Indexers[*corev1.Pod]{"name": byName}) }()
		const kept = n / 8
		for i := range n - kept {
			require.NoError(t, x.Delete(pod(i)))
		}
		require.NoError(t, <-added)
		require.NoError(t, x.Delete(pod(n-kept))) // compacts, if AddIndexers kept the first try from it
		checkInvariants(t, x.s)
		require.Less(t, x.s.peak, 4*x.Len(), "round %d: not compacted", round)
		names, err := x.IndexKeys("name", fmt.Sprint("p", n-1))
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprintf("ns%d/p%d", (n-1)%7, n-1)}, names)
		require.Len(t, x.ListIndexFuncValues("name"), kept-1)
	}
}

// Copies made before AddIndexers installed its index are not installed
// after it: they lack the new index. (Indexer.compact copies under the read
// lock, and AddIndexers changes the store under the lock alone, so it can
// come between the copy and the install.)
func TestCompactedCopiesOfOldIndexesAreNotInstalled(t *testing.T) {
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
	for i := range 10 {
		require.NoError(t, x.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}))
	}
	s := x.s
	c := s.compacted()
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	require.NoError(t, x.AddIndexers(Indexers[*corev1.Pod]{"name": byName}))
	x.installCompacted(s, c)
	checkInvariants(t, x.s)
	keys, err := x.IndexKeys("name", "p3")
	require.NoError(t, err)
	require.Equal(t, []string{"ns/p3"}, keys)
}
