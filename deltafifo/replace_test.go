package deltafifo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

func TestFIFOReplace(t *testing.T) {
	tests := []struct {
		name  string
		known *known // nil: no KnownObjects
		ops   []op
		want  []string // the queue after the ops, in pop order
	}{{
		name: "every listed object gets a Replaced delta, in list order",
		ops:  []op{replace(pod("b", "1"), pod("a", "1"))},
		want: []string{"ns/b: Replaced@1", "ns/a: Replaced@1"},
	}, {
		name: "a listed key already queued gets Replaced after its deltas",
		ops:  []op{add("a", "1"), replace(pod("a", "2"))},
		want: []string{"ns/a: Added@1 Replaced@2"},
	}, {
		name:  "a known key the list lacks gets a final-state-unknown delete with the known object",
		known: newKnown(pod("a", "1"), pod("b", "1"), pod("c", "1")),
		ops:   []op{replace(pod("b", "2"))},
		want:  []string{"ns/b: Replaced@2", "ns/a: Deleted!@1", "ns/c: Deleted!@1"},
	}, {
		// client-go's missed delete: a key added by the watch but not yet
		// popped is not in the indexer, so only the queue knows it.
		name:  "a queue-only key the list lacks gets a delete with its newest queued object",
		known: newKnown(),
		ops:   []op{add("q", "1"), update("q", "2"), replace(pod("a", "1"))},
		want:  []string{"ns/q: Added@1 Updated@2 Deleted!@2", "ns/a: Replaced@1"},
	}, {
		name:  "ReplaceKeeping: the known key kept gets nothing, the others as with Replace",
		known: newKnown(pod("a", "1"), pod("b", "1"), pod("c", "1")),
		ops:   []op{replaceKeeping([]*corev1.Pod{pod("b", "9")}, pod("a", "2"))},
		want:  []string{"ns/a: Replaced@2", "ns/c: Deleted!@1"},
	}, {
		name:  "ReplaceKeeping: a queued key kept keeps its deltas, with no delete after them",
		known: newKnown(),
		ops:   []op{add("q", "1"), replaceKeeping([]*corev1.Pod{pod("q", "2")})},
		want:  []string{"ns/q: Added@1"},
	}, {
		name:  "ReplaceKeeping: a key both listed and kept is replaced",
		known: newKnown(pod("a", "1")),
		ops:   []op{replaceKeeping([]*corev1.Pod{pod("a", "3"), nil, {}}, pod("a", "2"))},
		want:  []string{"ns/a: Replaced@2"},
	}, {
		name: "without known objects, queued keys the list lacks are deleted",
		ops:  []op{add("q", "1"), replace()},
		want: []string{"ns/q: Added@1 Deleted!@1"},
	}, {
		name:  "a known and queued key carries its newest queued object, not the older known one",
		known: newKnown(pod("a", "1")),
		ops:   []op{update("a", "2"), replace()},
		want:  []string{"ns/a: Updated@2 Deleted!@2"},
	}, {
		name:  "a queue-only key whose newest delta is a delete gets nothing",
		known: newKnown(),
		ops:   []op{add("q", "1"), del("q", "2"), replace()},
		want:  []string{"ns/q: Added@1 Deleted@2"},
	}, {
		name:  "a known key whose newest queued delta is a delete keeps that delete",
		known: newKnown(pod("a", "1")),
		ops:   []op{del("a", "2"), replace()},
		want:  []string{"ns/a: Deleted@2"},
	}, {
		name:  "a second Replace does not delete again what the first one deleted",
		known: newKnown(pod("a", "1")),
		ops:   []op{replace(), replace()},
		want:  []string{"ns/a: Deleted!@1"},
	}, {
		name:  "a key both listed and known gets only Replaced",
		known: newKnown(pod("a", "1")),
		ops:   []op{replace(pod("a", "1"))},
		want:  []string{"ns/a: Replaced@1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			for _, o := range tt.ops {
				require.NoError(t, o(f))
			}
			assert.Equal(t, tt.want, snapshot(f))
		})
	}
}

// twiceListed is a KnownObjects whose ListKeys names every key twice, as a
// view merging two stores that both hold an object might.
type twiceListed struct{ *known }

func (t twiceListed) ListKeys() []string { k := t.known.ListKeys(); return append(k, k...) }

// Resync queues one Sync per known key however often ListKeys names it, as
// client-go's does; it queued one per mention, and the consumer handled
// one resync twice.
func TestResyncQueuesOneSyncPerKey(t *testing.T) {
	f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](twiceListed{newKnown(pod("a", "1"))}))
	require.NoError(t, f.Resync())
	d, _ := f.GetByKey("ns/a")
	assert.Equal(t, "Sync@1", describe(d))

	require.NoError(t, f.Replace([]*corev1.Pod{pod("b", "2")}, "2"))
	drain(t, f)
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "3")}, "3"))
	require.NoError(t, f.Resync())
	d, _ = f.GetByKey("ns/a")
	assert.Equal(t, "Replaced@3 Sync@3", describe(d))
}

func TestFIFOResync(t *testing.T) {
	tests := []struct {
		name  string
		known *known
		ops   []op
		want  []string
	}{{
		name:  "a Sync delta with the known object for every known key",
		known: newKnown(pod("a", "1"), pod("b", "1")),
		ops:   []op{resync()},
		want:  []string{"ns/a: Sync@1", "ns/b: Sync@1"},
	}, {
		name:  "queued keys are skipped",
		known: newKnown(pod("a", "1"), pod("b", "1")),
		ops:   []op{update("b", "2"), resync()},
		want:  []string{"ns/b: Updated@2", "ns/a: Sync@1"},
	}, {
		name:  "resync twice queues one Sync per key",
		known: newKnown(pod("a", "1")),
		ops:   []op{resync(), resync()},
		want:  []string{"ns/a: Sync@1"},
	}, {
		name: "without known objects Resync does nothing",
		ops:  []op{resync()},
		want: nil,
	}, {
		name:  "a key whose newest delta is a relist's gets a Sync after it, with the listed object",
		known: newKnown(pod("a", "1"), pod("b", "1")),
		ops:   []op{replace(pod("a", "1"), pod("b", "2")), resync()},
		want:  []string{"ns/a: Replaced@1 Sync@1", "ns/b: Replaced@2 Sync@2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			for _, o := range tt.ops {
				require.NoError(t, o(f))
			}
			assert.Equal(t, tt.want, snapshot(f))
		})
	}
}

// While a popped key is being processed it is neither queued nor (yet, or
// any more) in the consumer's store; the FIFO must still count it as held.
func TestFIFOInFlightKeyIsHeld(t *testing.T) {
	tests := []struct {
		name   string
		known  *known
		first  op // queues ns/a, which is then popped
		during op // runs inside process for ns/a
		want   []string
	}{{
		name:   "Replace deletes an in-flight key the list lacks, with the batch's newest object",
		known:  newKnown(),
		first:  add("a", "1"),
		during: replace(),
		want:   []string{"ns/a: Deleted!@1"},
	}, {
		name:   "Replace adds nothing for an in-flight key whose batch ends with a delete",
		known:  newKnown(pod("a", "0")),
		first:  del("a", "1"),
		during: replace(),
		want:   nil,
	}, {
		name:   "Resync skips an in-flight key: the known object may be older than the batch",
		known:  newKnown(pod("a", "1")),
		first:  update("a", "2"),
		during: resync(),
		want:   nil,
	}, {
		name:   "Resync follows an in-flight Replaced with a Sync of its object",
		known:  newKnown(pod("a", "1")),
		first:  replace(pod("a", "2")),
		during: resync(),
		want:   []string{"ns/a: Sync@2"},
	}, {
		name:   "a Delete of an in-flight key not yet known is queued, not dropped",
		known:  newKnown(),
		first:  add("a", "1"),
		during: del("a", "1"),
		want:   []string{"ns/a: Deleted@1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			require.NoError(t, tt.first(f))
			require.Equal(t, 1, f.Len())
			err := f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
				return tt.during(f)
			})
			require.NoError(t, err)
			assert.Equal(t, tt.want, snapshot(f))
		})
	}

	t.Run("Replace adds nothing for a key whose newest in-flight batch ends with a delete", func(t *testing.T) {
		// Two Pops at once (here one inside the other), both holding
		// ns/a: the older batch still ends with the object, the newer
		// with its deletion, which is the state that counts.
		f := newFIFO(newKnown())
		require.NoError(t, f.Add(pod("a", "1")))
		err := f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
			if err := f.Delete(pod("a", "2")); err != nil {
				return err
			}
			return f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
				return f.Replace(nil, "3")
			})
		})
		require.NoError(t, err)
		assert.Nil(t, snapshot(f))
	})

	t.Run("a finished key is no longer held", func(t *testing.T) {
		k := newKnown()
		f := newFIFO(k)
		require.NoError(t, f.Add(pod("a", "1")))
		pop(t, f)
		require.NoError(t, f.Replace(nil, "1"))
		require.NoError(t, f.Delete(pod("a", "1")))
		assert.Zero(t, f.Len(), "nobody holds ns/a: no delete to report")
	})
}

// A key both being processed and queued again (by an Update while its
// batch is processed) that a relist lacks is deleted with the object of its
// newest queued delta: the batch being processed holds an older state,
// which the tombstone must not take back.
func TestReplaceTombstoneOfAQueuedInFlightKeyCarriesTheQueuedObject(t *testing.T) {
	f := newFIFO(newKnown(pod("a", "1")))
	require.NoError(t, f.Update(pod("a", "2")))
	err := f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
		if err := f.Update(pod("a", "3")); err != nil {
			return err
		}
		return f.Replace(nil, "4")
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a: Updated@3 Deleted!@3"}, snapshot(f))
}

// Two Pops at once (here one inside the other) may each hold a batch of one
// key: the newest batch is what the FIFO counts as the key's state, whatever
// the older one ends with.
func TestNewestInFlightBatchDecides(t *testing.T) {
	tests := []struct {
		name   string
		known  *known
		older  []op // queue ns/a for the outer Pop
		newer  op   // queues ns/a again, for the inner Pop
		during op   // runs inside the inner Pop
		want   []string
	}{{
		name:   "a Delete after a newer batch that added the key back is queued",
		known:  newKnown(),
		older:  []op{add("a", "1"), del("a", "2")},
		newer:  add("a", "3"),
		during: del("a", "3"),
		want:   []string{"ns/a: Deleted@3"},
	}, {
		name:   "Resync queues no Sync when the older batch is a relist's and the newer is not",
		known:  newKnown(pod("a", "1")),
		older:  []op{replace(pod("a", "2"))},
		newer:  update("a", "3"),
		during: resync(),
		want:   nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			for _, o := range tt.older {
				require.NoError(t, o(f))
			}
			err := f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
				if err := tt.newer(f); err != nil {
					return err
				}
				return f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
					return tt.during(f)
				})
			})
			require.NoError(t, err)
			assert.Equal(t, tt.want, snapshot(f))
		})
	}
}

// A list that holds one key twice counts once, with the newer object, in
// whichever order they come: handlers never see it go back in time.
func TestReplaceWithAKeyTwiceKeepsTheNewer(t *testing.T) {
	for _, order := range [][]string{{"5", "3"}, {"3", "5"}} {
		f := deltafifo.New[*corev1.Pod]()
		require.NoError(t, f.Replace([]*corev1.Pod{pod("a", order[0]), pod("a", order[1]), pod("b", "4")}, "5"))
		var got []string
		for f.Len() > 0 {
			require.NoError(t, f.Pop(t.Context(), func(key string, ds []deltafifo.Delta[*corev1.Pod], _ bool) error {
				for _, d := range ds {
					got = append(got, key+"@"+d.Object.ResourceVersion)
				}
				return nil
			}))
		}
		assert.Equal(t, []string{"ns/a@5", "ns/b@4"}, got, "list order %v", order)
	}
}

// nilKnown says it knows ns/gone, as a nil object.
type nilKnown struct{}

func (nilKnown) GetByKey(string) (*corev1.Pod, bool) { return nil, true }
func (nilKnown) ListKeys() []string                  { return []string{"ns/gone"} }

// A known key whose object is nil counts as unknown: no delta carries a
// nil object (a relist queued a delete of nil, a resync a Sync of nil).
func TestKnownNilObjectCountsAsNone(t *testing.T) {
	f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](nilKnown{}))
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"))
	require.NoError(t, f.Resync())
	assert.Equal(t, []string{"ns/a: Replaced@1"}, snapshot(f))
}

// panicky is a KnownObjects of one object, b, whose methods panic once
// fail is set: user code, which the FIFO calls under its lock.
type panicky struct{ failList, failGet bool }

func (k panicky) GetByKey(key string) (*corev1.Pod, bool) {
	if k.failGet {
		panic("GetByKey broke")
	}
	return pod("b", "1"), key == "ns/b"
}

func (k panicky) ListKeys() []string {
	if k.failList {
		panic("ListKeys broke")
	}
	return []string{"ns/b"}
}

// A panic in the known objects fails the call that read them, which then
// changes nothing: a Replace that had queued its list but not the
// deletions it implies would leave deleted objects in the cache.
func TestPanickingKnownObjectsFailTheCall(t *testing.T) {
	for _, k := range []panicky{{failList: true}, {failGet: true}} {
		f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](k))
		require.NoError(t, f.Add(pod("a", "1")))

		err := f.Replace([]*corev1.Pod{pod("a", "2"), pod("c", "2")}, "2")
		require.ErrorContains(t, err, "the known objects panicked")
		require.ErrorContains(t, err, "broke")
		assert.Equal(t, []string{"ns/a: Added@1"}, snapshot(f), "Replace must change nothing")

		err = f.Resync()
		require.ErrorContains(t, err, "the known objects panicked")
		assert.Equal(t, []string{"ns/a: Added@1"}, snapshot(f), "Resync must change nothing")
	}
	f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](panicky{failGet: true}))
	err := f.Delete(pod("b", "2"))
	require.ErrorContains(t, err, "the known objects panicked")
	assert.Empty(t, snapshot(f))
	assert.False(t, f.HasSynced(), "a failed Delete does not count as the first write")
}

// A kept object with a "/" in its name or namespace keeps nothing: its key
// would be another object's ("ns/a" in namespace "" is "a" in namespace
// "ns"), which the list lacks and which must then be deleted, as the list
// items with one are refused (ErrInvalidObject).
func TestReplaceKeepingIgnoresAKeptObjectWithASlash(t *testing.T) {
	f := newFIFO(newKnown(pod("a", "1"), pod("b", "1")))
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ns/a", ResourceVersion: "2"}}
	require.NoError(t, f.ReplaceKeeping([]*corev1.Pod{pod("b", "2")}, []*corev1.Pod{kept}, "100"))
	assert.Equal(t, []string{"ns/b: Replaced@2", "ns/a: Deleted!@1"}, snapshot(f),
		"the object named ns/a is not a of namespace ns")
}
