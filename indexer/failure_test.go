package indexer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// A write whose index function fails must leave items and every index as
// they were. The failing index is not the first one, so a write that
// mutated index by index before computing them all would be caught.
func TestIndexerFailingIndexFuncLeavesStoreUnchanged(t *testing.T) {
	newIndexer := func(t *testing.T) *podIndexer {
		// "namespace" and "node" sort before "team": they are computed first.
		x := indexer.New(indexer.Indexers[*corev1.Pod]{
			indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
			"node":                 byNode,
			"team":                 failing,
		})
		require.NoError(t, x.Add(pod("a", "p1", "1", "n1", "team=red")))
		require.NoError(t, x.Add(pod("a", "p2", "1", "n2", "team=blue")))
		return x
	}
	bad := func(ns, name string) *corev1.Pod { return pod(ns, name, "9", "n9", "team=green", "fail=true") }

	tests := []struct {
		name    string
		write   func(x *podIndexer) error
		wantKey string // the key the error must name
	}{
		{"Add of a new key", func(x *podIndexer) error { return x.Add(bad("b", "new")) }, "b/new"},
		{"Update of a stored key", func(x *podIndexer) error { return x.Update(bad("a", "p1")) }, "a/p1"},
		{"Replace with one bad object", func(x *podIndexer) error {
			return x.Replace([]*corev1.Pod{pod("c", "ok", "1", "n3"), bad("c", "bad")}, "10")
		}, "c/bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newIndexer(t)
			before := dump(t, x, indexer.NamespaceIndex, "node", "team")
			err := tt.write(x)
			require.ErrorIs(t, err, errIndex)
			assert.Contains(t, err.Error(), `"team"`, "the error names the index")
			assert.Contains(t, err.Error(), tt.wantKey, "the error names the object")
			assert.Equal(t, before, dump(t, x, indexer.NamespaceIndex, "node", "team"))
		})
	}

	t.Run("AddIndexers failing on a stored object", func(t *testing.T) {
		x := indexer.New(indexer.Indexers[*corev1.Pod]{"node": byNode})
		require.NoError(t, x.Add(pod("a", "p1", "1", "n1", "team=red")))
		require.NoError(t, x.Add(pod("a", "p2", "1", "n2", "fail=true")))
		before := dump(t, x, "node")

		err := x.AddIndexers(indexer.Indexers[*corev1.Pod]{
			"aaa":  indexer.NamespaceIndexFunc[*corev1.Pod], // computed before "team"
			"team": failing,
		})
		require.ErrorIs(t, err, errIndex)
		assert.Contains(t, err.Error(), "a/p2")
		assert.Equal(t, before, dump(t, x, "node"))
		_, err = x.ByIndex("aaa", "a")
		assert.ErrorIs(t, err, indexer.ErrUnknownIndex, "no index of a failed AddIndexers is added")
		require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{"aaa": indexer.NamespaceIndexFunc[*corev1.Pod]}),
			"the name is still free")
	})
}

func TestIndexerNilIndexFunc(t *testing.T) {
	x := indexer.New(indexer.Indexers[*corev1.Pod]{"broken": nil})
	err := x.Add(pod("a", "p1", "1", ""))
	require.Error(t, err, "a nil index function is an error, not a panic")
	assert.Contains(t, err.Error(), `"broken"`)
	assert.Zero(t, x.Len())

	err = x.AddIndexers(indexer.Indexers[*corev1.Pod]{"other": nil})
	require.Error(t, err)
}

func TestIndexerAddIndexers(t *testing.T) {
	x := indexer.New(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]})
	require.NoError(t, x.Add(pod("a", "p1", "1", "n1")))
	require.NoError(t, x.Add(pod("a", "p2", "1", "n2")))

	require.NoError(t, x.AddIndexers(indexer.Indexers[*corev1.Pod]{"node": byNode, "label": byLabel}))
	assert.Equal(t, []string{"a/p1@1", "a/p2@1", "node n1: a/p1", "node n2: a/p2"},
		dump(t, x, "node", "label"), "objects stored before are indexed")

	// The new index is maintained like the others afterwards.
	require.NoError(t, x.Update(pod("a", "p1", "2", "n2")))
	require.NoError(t, x.Add(pod("b", "p3", "1", "n3", "app=web")))
	require.NoError(t, x.Delete(pod("a", "p2", "1", "")))
	assert.Equal(t, []string{"a/p1@2", "b/p3@1",
		"namespace a: a/p1", "namespace b: b/p3",
		"node n2: a/p1", "node n3: b/p3",
		"label app=web: b/p3"},
		dump(t, x, indexer.NamespaceIndex, "node", "label"))

	err := x.AddIndexers(indexer.Indexers[*corev1.Pod]{"zone": byNode, "node": byNode})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `index "node" already exists`)
	_, err = x.ByIndex("zone", "n2")
	assert.ErrorIs(t, err, indexer.ErrUnknownIndex, "nothing of a refused AddIndexers is added")

	require.NoError(t, x.AddIndexers(nil))
}

// An index function that panics fails the write it was called for, as an
// error does: the panic does not escape into the informer's goroutine.
func TestPanickingIndexFuncFailsTheWrite(t *testing.T) {
	x := indexer.New(indexer.Indexers[*corev1.Pod]{"byName": func(p *corev1.Pod) ([]string, error) {
		if p.Name == "boom" {
			panic("index function bug")
		}
		return []string{p.Name}, nil
	}})
	require.NoError(t, x.Add(pod("ns", "good", "1", "")))
	err := x.Add(pod("ns", "boom", "1", ""))
	require.ErrorContains(t, err, "panicked: index function bug")
	assert.Equal(t, 1, x.Len())
	err = x.Replace([]*corev1.Pod{pod("ns", "boom", "2", "")}, "2")
	require.ErrorContains(t, err, "panicked")
	assert.Equal(t, 1, x.Len(), "a failed Replace changes nothing")
}
