package deltafifo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/indexer"
)

func TestDeltaTypeString(t *testing.T) {
	for typ, want := range map[deltafifo.DeltaType]string{
		deltafifo.Added: "Added", deltafifo.Updated: "Updated", deltafifo.Deleted: "Deleted",
		deltafifo.Replaced: "Replaced", deltafifo.Sync: "Sync", 0: "DeltaType(0)", 9: "DeltaType(9)",
	} {
		assert.Equal(t, want, typ.String())
	}
}

// op is one producer call in a table test.
type op func(f *fifo) error

func add(name, rv string) op    { return func(f *fifo) error { return f.Add(pod(name, rv)) } }
func update(name, rv string) op { return func(f *fifo) error { return f.Update(pod(name, rv)) } }
func del(name, rv string) op    { return func(f *fifo) error { return f.Delete(pod(name, rv)) } }
func replace(pods ...*corev1.Pod) op {
	return func(f *fifo) error { return f.Replace(pods, "100") }
}
func replaceKeeping(keep []*corev1.Pod, pods ...*corev1.Pod) op {
	return func(f *fifo) error { return f.ReplaceKeeping(pods, keep, "100") }
}
func resync() op { return func(f *fifo) error { return f.Resync() } }

func TestFIFOOrderAndCollapse(t *testing.T) {
	tests := []struct {
		name  string
		known *known // nil: no KnownObjects
		ops   []op
		want  []string // popped batches, in order
	}{{
		name: "deltas of one key stay in arrival order",
		ops:  []op{add("a", "1"), update("a", "2"), update("a", "3"), del("a", "3")},
		want: []string{"ns/a: Added@1 Updated@2 Updated@3 Deleted@3"},
	}, {
		name: "keys pop in order of first enqueue, later deltas join their key",
		ops:  []op{add("b", "1"), add("a", "1"), add("c", "1"), update("b", "2"), update("a", "2")},
		want: []string{"ns/b: Added@1 Updated@2", "ns/a: Added@1 Updated@2", "ns/c: Added@1"},
	}, {
		name: "two deletes in a row collapse to the newer",
		ops:  []op{del("a", "1"), del("a", "2")},
		want: []string{"ns/a: Deleted@2"},
	}, {
		name: "deletes separated by another delta do not collapse",
		ops:  []op{del("a", "1"), add("a", "2"), del("a", "3")},
		want: []string{"ns/a: Deleted@1 Added@2 Deleted@3"},
	}, {
		name:  "a watch delete after a final-state-unknown delete wins",
		known: newKnown(pod("a", "1")),
		ops:   []op{replace(), del("a", "2")},
		want:  []string{"ns/a: Deleted@2"},
	}, {
		name:  "with known objects, a delete of an unknown, unqueued key is dropped",
		known: newKnown(pod("a", "1")),
		ops:   []op{del("x", "1"), del("a", "2"), add("b", "1"), del("b", "1")},
		want:  []string{"ns/a: Deleted@2", "ns/b: Added@1 Deleted@1"},
	}, {
		name: "without known objects, every delete is queued",
		ops:  []op{del("x", "1")},
		want: []string{"ns/x: Deleted@1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			for _, o := range tt.ops {
				require.NoError(t, o(f))
			}
			assert.Equal(t, tt.want, drain(t, f))
		})
	}
}

func newFIFO(k *known, opts ...deltafifo.Option[*corev1.Pod]) *fifo {
	if k != nil {
		opts = append(opts, deltafifo.WithKnownObjects[*corev1.Pod](k))
	}
	return deltafifo.New(opts...)
}

func TestFIFOInvalidObject(t *testing.T) {
	noName := pod("", "1")
	var nilPod *corev1.Pod
	calls := map[string]func(f *fifo) error{
		"Add no name":       func(f *fifo) error { return f.Add(noName) },
		"Update no name":    func(f *fifo) error { return f.Update(noName) },
		"Delete no name":    func(f *fifo) error { return f.Delete(noName) },
		"Replace no name":   func(f *fifo) error { return f.Replace([]*corev1.Pod{pod("a", "1"), noName}, "1") },
		"Add nil":           func(f *fifo) error { return f.Add(nilPod) },
		"Replace nil":       func(f *fifo) error { return f.Replace([]*corev1.Pod{nilPod}, "1") },
		"Delete nil, known": func(f *fifo) error { return f.Delete(nilPod) },
		// "ns/a/b" would be the key of "b" in a namespace "ns/a".
		"Add slash in name": func(f *fifo) error { return f.Add(pod("a/b", "1")) },
		"Replace slash in namespace": func(f *fifo) error {
			p := pod("b", "1")
			p.Namespace = "ns/a"
			return f.Replace([]*corev1.Pod{p}, "1")
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			f := newFIFO(newKnown())
			err := call(f)
			require.ErrorIs(t, err, deltafifo.ErrInvalidObject)
			require.ErrorIs(t, err, indexer.ErrInvalidObject, "one error for both stores")
			assert.Zero(t, f.Len(), "queue must be unchanged")
			assert.False(t, f.HasSynced(), "a rejected write does not populate the FIFO")
		})
	}

	t.Run("a key function or transform that panics", func(t *testing.T) {
		boom := func(*corev1.Pod) string { panic("key bug") }
		f := deltafifo.New(deltafifo.WithKeyFunc(boom))
		err := f.Add(pod("a", "1"))
		require.ErrorIs(t, err, deltafifo.ErrInvalidObject)
		assert.ErrorContains(t, err, "key bug")
		assert.ErrorContains(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"), "key bug")
		// A kept object the key function panics on fails the Replace:
		// left out, it would be queued as deleted.
		picky := func(p *corev1.Pod) string {
			if p.Labels == nil {
				panic("key bug")
			}
			return p.Namespace + "/" + p.Name
		}
		kept := pod("a", "1")
		f = deltafifo.New(deltafifo.WithKeyFunc(picky), deltafifo.WithKnownObjects[*corev1.Pod](newKnown(kept)))
		assert.ErrorContains(t, f.ReplaceKeeping(nil, []*corev1.Pod{kept}, "2"), "key bug")
		assert.Zero(t, f.Len(), "nothing queued, no deletion")
		f = deltafifo.New(deltafifo.WithTransform(func(*corev1.Pod) (*corev1.Pod, error) { panic("transform bug") }))
		assert.ErrorContains(t, f.Add(pod("a", "1")), "transform bug")
		assert.Zero(t, f.Len())
	})

	t.Run("empty key from a custom key function", func(t *testing.T) {
		f := deltafifo.New(deltafifo.WithKeyFunc(func(*corev1.Pod) string { return "" }))
		err := f.Add(pod("a", "1"))
		require.ErrorIs(t, err, deltafifo.ErrInvalidObject)
		assert.Contains(t, err.Error(), "empty key")
	})
}

func TestFIFOTransform(t *testing.T) {
	// countingTransform marks each object it sees with a label and counts
	// its calls; a pod named "bad" makes it fail.
	newTransform := func(calls *int) func(*corev1.Pod) (*corev1.Pod, error) {
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			*calls++
			if p.Name == "bad" {
				return nil, errors.New("bad pod")
			}
			q := p.DeepCopy()
			q.Labels = map[string]string{"transformed": q.Labels["transformed"] + "x"}
			return q, nil
		}
	}

	t.Run("applied once to every written object, not by Resync", func(t *testing.T) {
		var calls int
		k := newKnown(pod("k", "1"))
		f := newFIFO(k, deltafifo.WithTransform(newTransform(&calls)))
		require.NoError(t, f.Add(pod("a", "1")))
		require.NoError(t, f.Update(pod("a", "2")))
		require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "3"), pod("b", "1")}, "5"))
		require.NoError(t, f.Delete(pod("b", "2")))
		assert.Equal(t, 5, calls)
		require.NoError(t, f.Resync())
		assert.Equal(t, 5, calls, "Resync must not transform known objects again")

		for _, key := range f.ListKeys() {
			deltas, _ := f.GetByKey(key)
			for _, d := range deltas {
				want := "x"
				if d.Object.Name == "k" {
					want = "" // the known object, carried as it is
				}
				assert.Equal(t, want, d.Object.Labels["transformed"], "%s %v", key, d.Type)
			}
		}
	})

	t.Run("error from Add, queue unchanged", func(t *testing.T) {
		var calls int
		f := deltafifo.New(deltafifo.WithTransform(newTransform(&calls)))
		err := f.Add(pod("bad", "1"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bad pod")
		assert.Contains(t, err.Error(), "ns/bad")
		assert.Zero(t, f.Len())
		assert.False(t, f.HasSynced())
	})

	t.Run("error from Replace, nothing queued", func(t *testing.T) {
		var calls int
		k := newKnown(pod("gone", "1"))
		f := newFIFO(k, deltafifo.WithTransform(newTransform(&calls)))
		err := f.Replace([]*corev1.Pod{pod("a", "1"), pod("bad", "1"), pod("c", "1")}, "1")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "list item 1")
		assert.Zero(t, f.Len(), "no Replaced and no generated delete may be queued")
		assert.False(t, f.HasSynced(), "a failed Replace is not the first Replace")
	})

	t.Run("transform returning nil is an error", func(t *testing.T) {
		f := deltafifo.New(deltafifo.WithTransform(func(*corev1.Pod) (*corev1.Pod, error) { return nil, nil }))
		require.Error(t, f.Add(pod("a", "1")))
		assert.Zero(t, f.Len())
	})
}

func TestFIFOInspection(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Add(pod("b", "1")))
	require.NoError(t, f.Add(pod("a", "1")))
	assert.Equal(t, []string{"ns/b", "ns/a"}, f.ListKeys())
	assert.Equal(t, 2, f.Len())

	deltas, ok := f.GetByKey("ns/a")
	require.True(t, ok)
	deltas[0].Type = deltafifo.Sync // a copy: the queue is not affected
	again, _ := f.GetByKey("ns/a")
	assert.Equal(t, "Added@1", describe(again))

	_, ok = f.GetByKey("ns/zz")
	assert.False(t, ok)
}

// A typed nil given as the known objects is none, not a panic at the first
// Replace, Resync or Delete.
func TestTypedNilKnownObjectsIsNone(t *testing.T) {
	var idx *indexer.Indexer[*corev1.Pod]
	f := deltafifo.New[*corev1.Pod](deltafifo.WithKnownObjects[*corev1.Pod](idx))
	assert.NoError(t, f.Replace(nil, "1"))
	assert.NoError(t, f.Resync())
	assert.NoError(t, f.Delete(pod("a", "1")))
}

// A transform that changes the object's key is refused: the delta would be
// queued under one key with an object of another.
func TestTransformMustKeepTheKey(t *testing.T) {
	f := deltafifo.New[*corev1.Pod](deltafifo.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
		c := p.DeepCopy()
		c.Name = "renamed"
		return c, nil
	}))
	err := f.Add(pod("a", "1"))
	assert.ErrorIs(t, err, deltafifo.ErrInvalidObject)
	assert.ErrorContains(t, err, "renamed")
	assert.Zero(t, f.Len())
}

func TestPopWithNilContext(t *testing.T) {
	var nilCtx context.Context
	err := deltafifo.New[*corev1.Pod]().Pop(nilCtx, func(string, []deltafifo.Delta[*corev1.Pod], bool) error { return nil })
	assert.ErrorContains(t, err, "nil context")
}

// The zero FIFO works as New() makes it: it queues, hands out, syncs and
// closes. It used to fail every write with a misleading "key function
// panicked", wait in Pop until the context ended, and panic in Close.
func TestZeroFIFOIsUsable(t *testing.T) {
	var f fifo
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"))
	require.NoError(t, f.Add(pod("b", "2")))
	require.NoError(t, f.Resync())
	assert.Equal(t, []string{"ns/a", "ns/b"}, f.ListKeys())

	var got []string
	for range 2 {
		require.NoError(t, f.Pop(t.Context(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], _ bool) error {
			got = append(got, key+" "+describe(deltas))
			return nil
		}))
	}
	assert.Equal(t, []string{"ns/a Replaced@1", "ns/b Added@2"}, got)
	select {
	case <-f.Synced():
	default:
		t.Fatal("Synced not closed after the first Replace's keys were popped")
	}

	f.Close()
	assert.ErrorIs(t, f.Add(pod("c", "3")), deltafifo.ErrClosed)
	assert.ErrorIs(t, f.Pop(t.Context(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error { return nil }), deltafifo.ErrClosed)
}

// wrappedPod embeds its Pod, and so its metadata, through a pointer.
type wrappedPod struct{ *corev1.Pod }

// An object that embeds its metadata through a nil pointer is refused as a
// nil one is, also from a transform; its GetName panicked.
func TestObjectEmbeddingANilPod(t *testing.T) {
	f := deltafifo.New[*wrappedPod]()
	for name, call := range map[string]func() error{
		"Add":     func() error { return f.Add(&wrappedPod{}) },
		"Update":  func() error { return f.Update(&wrappedPod{}) },
		"Delete":  func() error { return f.Delete(&wrappedPod{}) },
		"Replace": func() error { return f.Replace([]*wrappedPod{{}}, "1") },
	} {
		assert.ErrorIs(t, call(), deltafifo.ErrInvalidObject, name)
	}
	assert.Zero(t, f.Len())

	lossy := deltafifo.New(deltafifo.WithTransform(func(*wrappedPod) (*wrappedPod, error) { return &wrappedPod{}, nil }))
	assert.Error(t, lossy.Add(&wrappedPod{pod("a", "1")}))
	assert.Zero(t, lossy.Len())
}
