package indexer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
)

func TestIndexerCRUD(t *testing.T) {
	x := indexer.New[*corev1.Pod](nil)
	assert.Zero(t, x.Len())

	require.NoError(t, x.Add(pod("ns", "a", "1", "")))
	require.NoError(t, x.Add(pod("ns", "b", "1", "")))
	got, ok := x.GetByKey("ns/a")
	require.True(t, ok)
	assert.Equal(t, "1", got.ResourceVersion)

	require.NoError(t, x.Update(pod("ns", "a", "2", "")))
	got, ok = x.Get(pod("ns", "a", "", ""))
	require.True(t, ok)
	assert.Equal(t, "2", got.ResourceVersion)
	assert.Equal(t, []string{"ns/a@2", "ns/b@1"}, dump(t, x))

	require.NoError(t, x.Add(pod("ns", "b", "3", "")), "Add of a stored key replaces it")
	assert.Equal(t, []string{"ns/a@2", "ns/b@3"}, dump(t, x))

	require.NoError(t, x.Delete(pod("ns", "a", "2", "")))
	_, ok = x.GetByKey("ns/a")
	assert.False(t, ok)
	require.NoError(t, x.Delete(pod("ns", "a", "2", "")), "deleting an absent key is not an error")
	assert.Equal(t, []string{"ns/b@3"}, dump(t, x))
	assert.Equal(t, 1, x.Len())
}

// The zero Indexer works as New(nil) makes it: reads find nothing, writes
// store, and indexes can be added. Each of its methods used to panic.
func TestZeroIndexerIsUsable(t *testing.T) {
	var x podIndexer
	assert.Zero(t, x.Len())
	assert.Empty(t, x.List())
	_, ok := x.GetByKey("ns/a")
	assert.False(t, ok)
	_, err := x.ByIndex("node", "n1")
	assert.Error(t, err, "no index named node yet")

	require.NoError(t, x.Add(pod("ns", "a", "1", "n1")))
	require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{"node": byNode}))
	require.NoError(t, x.Replace([]*corev1.Pod{pod("ns", "a", "2", "n1"), pod("ns", "b", "1", "n2")}, "2"))
	assert.Equal(t, []string{"ns/a@2", "ns/b@1"}, dump(t, &x))
	inN1, err := x.ByIndex("node", "n1")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, sortedKeys(inN1))
	require.NoError(t, x.Delete(pod("ns", "a", "", "")))
	assert.Equal(t, []string{"ns/b"}, x.ListKeys())
}

func TestSplitMetaNamespaceKey(t *testing.T) {
	for _, obj := range []metav1.Object{pod("ns", "a", "", ""), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}} {
		ns, name, err := indexer.SplitMetaNamespaceKey(indexer.MetaNamespaceKey(obj))
		require.NoError(t, err)
		assert.Equal(t, [2]string{obj.GetNamespace(), obj.GetName()}, [2]string{ns, name}, "the key of %s/%s splits back", obj.GetNamespace(), obj.GetName())
	}
	for _, key := range []string{"", "ns/", "/a", "a/b/c", "ns//a"} {
		ns, name, err := indexer.SplitMetaNamespaceKey(key)
		assert.Error(t, err, "%q", key)
		assert.Equal(t, [2]string{}, [2]string{ns, name}, "%q", key)
	}
}

func TestIndexerKeys(t *testing.T) {
	assert.Equal(t, "ns/a", indexer.MetaNamespaceKey(pod("ns", "a", "", "")))
	assert.Equal(t, "node-1", indexer.MetaNamespaceKey(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}), "cluster-scoped: name only")
	var nilPod *corev1.Pod
	assert.Equal(t, "", indexer.MetaNamespaceKey(nilPod))

	x := indexer.New[*corev1.Pod](nil, indexer.WithKeyFunc(func(p *corev1.Pod) string { return p.Name }))
	require.NoError(t, x.Add(pod("ns", "a", "1", "")))
	_, ok := x.GetByKey("a")
	assert.True(t, ok, "the custom key function is used")
}

func TestIndexerInvalidObject(t *testing.T) {
	var nilPod *corev1.Pod
	x := indexer.New(allIndexers())
	require.NoError(t, x.Add(pod("ns", "keep", "1", "n1")))
	before := dump(t, x, "node")

	for name, call := range map[string]func() error{
		"Add nil":         func() error { return x.Add(nilPod) },
		"Update no name":  func() error { return x.Update(pod("ns", "", "1", "n2")) },
		"Delete no name":  func() error { return x.Delete(pod("ns", "", "1", "")) },
		"Replace nil":     func() error { return x.Replace([]*corev1.Pod{pod("ns", "a", "1", ""), nilPod}, "1") },
		"Replace no name": func() error { return x.Replace([]*corev1.Pod{pod("", "", "1", "")}, "1") },
		// "a/b" would be the key of "b" in namespace "a".
		"Add slash in name":      func() error { return x.Add(pod("", "a/b", "1", "")) },
		"Add slash in namespace": func() error { return x.Add(pod("x/a", "b", "1", "")) },
	} {
		assert.ErrorIs(t, call(), indexer.ErrInvalidObject, name)
		assert.Equal(t, before, dump(t, x, "node"), name)
	}

	_, ok := x.Get(nilPod)
	assert.False(t, ok)
	_, err := x.Index(indexer.NamespaceIndex, nilPod)
	assert.ErrorIs(t, err, indexer.ErrInvalidObject)
	_, err = indexer.NamespaceIndexFunc(nilPod)
	assert.Error(t, err)

	empty := indexer.New[*corev1.Pod](nil, indexer.WithKeyFunc(func(*corev1.Pod) string { return "" }))
	assert.ErrorIs(t, empty.Add(pod("ns", "a", "1", "")), indexer.ErrInvalidObject)
	assert.Zero(t, empty.Len())

	// A key function that panics fails the write, as an invalid object.
	boom := indexer.New[*corev1.Pod](indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]},
		indexer.WithKeyFunc(func(*corev1.Pod) string { panic("key bug") }))
	err = boom.Add(pod("ns", "a", "1", ""))
	assert.ErrorIs(t, err, indexer.ErrInvalidObject)
	assert.ErrorContains(t, err, "key bug")
	assert.ErrorContains(t, boom.Replace([]*corev1.Pod{pod("ns", "a", "1", "")}, "1"), "key bug")
	_, ok = boom.Get(pod("ns", "a", "1", ""))
	assert.False(t, ok)
	_, err = boom.Index(indexer.NamespaceIndex, pod("ns", "a", "1", ""))
	assert.NoError(t, err, "Index needs the key only to name the object in an error")
	assert.Zero(t, boom.Len())
}

func TestIndexerIndexMaintenance(t *testing.T) {
	type op func(x *podIndexer) error
	add := func(p *corev1.Pod) op { return func(x *podIndexer) error { return x.Add(p) } }
	update := func(p *corev1.Pod) op { return func(x *podIndexer) error { return x.Update(p) } }
	del := func(p *corev1.Pod) op { return func(x *podIndexer) error { return x.Delete(p) } }

	tests := []struct {
		name string
		ops  []op
		want []string // dump of namespace, node and label indexes
	}{{
		name: "objects are indexed on add",
		ops:  []op{add(pod("a", "p1", "1", "n1", "app=web")), add(pod("b", "p2", "1", "n1"))},
		want: []string{"a/p1@1", "b/p2@1",
			"namespace a: a/p1", "namespace b: b/p2",
			"node n1: a/p1,b/p2",
			"label app=web: a/p1"},
	}, {
		name: "update moves the key to the new value and drops the emptied old one",
		ops:  []op{add(pod("a", "p1", "1", "n1")), add(pod("a", "p2", "1", "n2")), update(pod("a", "p1", "2", "n2"))},
		want: []string{"a/p1@2", "a/p2@1",
			"namespace a: a/p1,a/p2",
			"node n2: a/p1,a/p2"},
	}, {
		name: "update to no value removes the key from the index",
		ops:  []op{add(pod("a", "p1", "1", "n1")), update(pod("a", "p1", "2", ""))},
		want: []string{"a/p1@2", "namespace a: a/p1"},
	}, {
		name: "multi-valued index: update drops only the values that went away",
		ops: []op{
			add(pod("a", "p1", "1", "", "app=web", "tier=fe")),
			add(pod("a", "p2", "1", "", "app=web")),
			update(pod("a", "p1", "2", "", "app=db", "tier=fe")),
		},
		want: []string{"a/p1@2", "a/p2@1",
			"namespace a: a/p1,a/p2",
			"label app=db: a/p1", "label app=web: a/p2", "label tier=fe: a/p1"},
	}, {
		name: "delete removes the key from every index",
		ops: []op{
			add(pod("a", "p1", "1", "n1", "app=web")), add(pod("a", "p2", "1", "n1")),
			del(pod("a", "p1", "1", "n1", "app=web")),
		},
		want: []string{"a/p2@1", "namespace a: a/p2", "node n1: a/p2"},
	}, {
		name: "delete uses the stored index values, not those of the object passed",
		ops:  []op{add(pod("a", "p1", "1", "n1")), del(pod("a", "p1", "9", "n-other"))},
		want: nil,
	}, {
		name: "deleting everything leaves no index value behind",
		ops:  []op{add(pod("a", "p1", "1", "n1", "x=y")), del(pod("a", "p1", "1", "n1"))},
		want: nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := indexer.New(allIndexers())
			for _, o := range tt.ops {
				require.NoError(t, o(x))
			}
			assert.Equal(t, tt.want, dump(t, x, indexer.NamespaceIndex, "node", "label"))
		})
	}
}

func TestIndexerDuplicateIndexValues(t *testing.T) {
	twice := func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace, p.Namespace}, nil }
	x := indexer.New(indexer.Indexers[*corev1.Pod]{"twice": twice})
	require.NoError(t, x.Add(pod("a", "p1", "1", "")))
	objs, err := x.Index("twice", pod("a", "other", "", ""))
	require.NoError(t, err)
	assert.Len(t, objs, 1)
	require.NoError(t, x.Delete(pod("a", "p1", "1", "")))
	assert.Empty(t, x.ListIndexFuncValues("twice"))
}

// An index function may return a buffer it reuses: the index keeps its
// own copy of the values, so the next call does not change them (it
// used to leave a deleted object's key in the index, and ByIndex handed
// out a nil object for it).
func TestIndexerCopiesWhatIndexFunctionsReturn(t *testing.T) {
	buf := make([]string, 2)
	reused := func(p *corev1.Pod) ([]string, error) {
		buf[0], buf[1] = p.Spec.NodeName, p.Namespace
		return buf, nil
	}
	for _, indexes := range []indexer.Indexers[*corev1.Pod]{
		{"node": reused},
		{"node": reused, "namespace": indexer.NamespaceIndexFunc[*corev1.Pod]},
	} {
		x := indexer.New(indexes)
		require.NoError(t, x.Add(pod("a", "p1", "1", "n1")))
		require.NoError(t, x.Add(pod("b", "p2", "1", "n2")))
		require.NoError(t, x.Update(pod("a", "p1", "2", "n3")))
		keys, err := x.IndexKeys("node", "n3")
		require.NoError(t, err)
		assert.Equal(t, []string{"a/p1"}, keys)
		keys, err = x.IndexKeys("node", "n2")
		require.NoError(t, err)
		assert.Equal(t, []string{"b/p2"}, keys)

		require.NoError(t, x.Delete(pod("b", "p2", "1", "n2")))
		objs, err := x.ByIndex("node", "n2")
		require.NoError(t, err)
		assert.Empty(t, objs)
		assert.ElementsMatch(t, []string{"a", "n3"}, x.ListIndexFuncValues("node"))
	}
}

func TestIndexerReplace(t *testing.T) {
	x := indexer.New(allIndexers())
	require.NoError(t, x.Add(pod("a", "old", "1", "n1", "app=web")))
	require.NoError(t, x.Replace([]*corev1.Pod{
		pod("b", "p1", "5", "n2"),
		pod("b", "p2", "5", "n2"),
		pod("b", "p1", "6", "n3"), // same key again: the later wins
	}, "6"))
	assert.Equal(t, []string{"b/p1@6", "b/p2@5",
		"namespace b: b/p1,b/p2",
		"node n2: b/p2", "node n3: b/p1"},
		dump(t, x, indexer.NamespaceIndex, "node", "label"))

	require.NoError(t, x.Replace(nil, "7"))
	assert.Nil(t, dump(t, x, indexer.NamespaceIndex, "node", "label"))
}

func TestIndexerIndexQueries(t *testing.T) {
	x := indexer.New(allIndexers())
	require.NoError(t, x.Add(pod("a", "p1", "1", "", "app=web", "tier=fe")))
	require.NoError(t, x.Add(pod("a", "p2", "1", "", "app=web")))
	require.NoError(t, x.Add(pod("b", "p3", "1", "", "tier=fe")))
	require.NoError(t, x.Add(pod("b", "p4", "1", "", "app=db")))

	objs, err := x.Index("label", pod("z", "probe", "", "", "app=web", "tier=fe"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a/p1", "a/p2", "b/p3"}, sortedKeys(objs), "the union of both values, each object once")

	objs, err = x.ByIndex(indexer.NamespaceIndex, "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p3", "b/p4"}, sortedKeys(objs))

	objs, err = x.ByIndex(indexer.NamespaceIndex, "nope")
	require.NoError(t, err)
	assert.Empty(t, objs)

	values := x.ListIndexFuncValues(indexer.NamespaceIndex)
	assert.ElementsMatch(t, []string{"a", "b"}, values)

	t.Run("unknown index", func(t *testing.T) {
		_, err := x.Index("nope", pod("a", "p1", "", ""))
		assert.ErrorIs(t, err, indexer.ErrUnknownIndex)
		assert.Contains(t, err.Error(), `"nope"`)
		_, err = x.IndexKeys("nope", "v")
		assert.ErrorIs(t, err, indexer.ErrUnknownIndex)
		_, err = x.ByIndex("nope", "v")
		assert.ErrorIs(t, err, indexer.ErrUnknownIndex)
		assert.Nil(t, x.ListIndexFuncValues("nope"))
	})
}

func TestIndexerReturnsFreshSlices(t *testing.T) {
	x := indexer.New(allIndexers())
	require.NoError(t, x.Add(pod("a", "p1", "1", "n1")))
	require.NoError(t, x.Add(pod("a", "p2", "1", "n1")))

	list := x.List()
	list[0] = nil
	keys := x.ListKeys()
	keys[0] = "mangled"
	byIndex, _ := x.ByIndex("node", "n1")
	byIndex[0] = nil
	indexKeys, _ := x.IndexKeys("node", "n1")
	indexKeys[0] = "mangled"
	values := x.ListIndexFuncValues("node")
	values[0] = "mangled"

	assert.Equal(t, []string{"a/p1@1", "a/p2@1", "node n1: a/p1,a/p2"}, dump(t, x, "node"))
}

func TestIndexerNamespaceIndex(t *testing.T) {
	x := indexer.New(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]})
	require.NoError(t, x.Add(pod("kube-system", "dns", "1", "")))
	require.NoError(t, x.Add(pod("kube-system", "proxy", "1", "")))
	require.NoError(t, x.Add(pod("default", "web", "1", "")))
	require.NoError(t, x.Add(pod("", "cluster-thing", "1", "")))

	objs, err := x.ByIndex(indexer.NamespaceIndex, "kube-system")
	require.NoError(t, err)
	assert.Equal(t, []string{"kube-system/dns", "kube-system/proxy"}, sortedKeys(objs))

	keys, err := x.IndexKeys(indexer.NamespaceIndex, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"cluster-thing"}, keys, "cluster-scoped objects have the empty namespace value")
}

// Prepare runs the index functions and changes nothing; Commit stores
// without running any, and refuses a write prepared before AddIndexers,
// which must be prepared again.
func TestIndexerPrepareCommit(t *testing.T) {
	calls := 0
	counting := func(p *corev1.Pod) ([]string, error) { calls++; return byNode(p) }
	x := indexer.New(indexer.Indexers[*corev1.Pod]{"node": counting})

	w, err := x.Prepare(pod("a", "p1", "1", "n1"))
	require.NoError(t, err)
	assert.Equal(t, "a/p1", w.Key())
	assert.Equal(t, 1, calls)
	assert.Zero(t, x.Len(), "Prepare stores nothing")

	require.True(t, x.Commit(w))
	assert.Equal(t, 1, calls, "Commit runs no index function")
	assert.Equal(t, []string{"a/p1@1", "node n1: a/p1"}, dump(t, x, "node"))

	stale, err := x.Prepare(pod("a", "p1", "2", "n2"))
	require.NoError(t, err)
	require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{"label": byLabel}))
	assert.False(t, x.Commit(stale), "prepared before AddIndexers")
	assert.Equal(t, []string{"a/p1@1", "node n1: a/p1"}, dump(t, x, "node"), "a refused Commit stores nothing")

	assert.False(t, x.Commit(indexer.Write[*corev1.Pod]{}), "the zero Write")
	other := indexer.New[*corev1.Pod](nil)
	fromOther, err := other.Prepare(pod("a", "p9", "1", ""))
	require.NoError(t, err)
	assert.False(t, x.Commit(fromOther), "a Write prepared by another Indexer")

	_, err = x.Prepare(nil)
	assert.ErrorIs(t, err, indexer.ErrInvalidObject)
	_, err = indexer.New(indexer.Indexers[*corev1.Pod]{"failing": failing}).Prepare(pod("a", "p1", "1", "", "fail=true"))
	assert.ErrorIs(t, err, errIndex)
}

// wrappedPod embeds its Pod, and so its metadata, through a pointer.
type wrappedPod struct{ *corev1.Pod }

// An object that embeds its metadata through a nil pointer is refused as a
// nil one is; its GetName panicked inside the indexer.
func TestObjectEmbeddingANilPod(t *testing.T) {
	x := indexer.New(indexer.Indexers[*wrappedPod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*wrappedPod]})
	require.NoError(t, x.Add(&wrappedPod{pod("ns", "a", "1", "")}))
	for name, call := range map[string]func() error{
		"Add":     func() error { return x.Add(&wrappedPod{}) },
		"Update":  func() error { return x.Update(&wrappedPod{}) },
		"Delete":  func() error { return x.Delete(&wrappedPod{}) },
		"Replace": func() error { return x.Replace([]*wrappedPod{{}}, "2") },
	} {
		assert.ErrorIs(t, call(), indexer.ErrInvalidObject, name)
	}
	assert.Equal(t, 1, x.Len())
	_, err := x.Index(indexer.NamespaceIndex, &wrappedPod{})
	assert.ErrorIs(t, err, indexer.ErrInvalidObject)
	assert.Empty(t, indexer.MetaNamespaceKey(&wrappedPod{}))

	// One whose metadata comes from its own ObjectMeta, embedded less
	// deeply than the nil Pod, works, and is stored.
	y := indexer.New(indexer.Indexers[*shadowedPod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*shadowedPod]})
	require.NoError(t, y.Add(&shadowedPod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}))
	assert.Equal(t, []string{"ns/a"}, y.ListKeys())
}

// shadowedPod takes its metadata methods from its own ObjectMeta.
type shadowedPod struct {
	metav1.ObjectMeta
	*corev1.Pod
}
