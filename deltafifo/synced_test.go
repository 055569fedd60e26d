package deltafifo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFIFOHasSynced(t *testing.T) {
	type step struct {
		initial bool // isInInitialList of the popped key
		synced  bool // HasSynced after the pop
	}
	tests := []struct {
		name        string
		known       *known
		ops         []op
		syncedAfter bool // HasSynced right after the ops
		pops        []step
	}{{
		name: "not synced before any write",
	}, {
		name:  "Resync does not populate",
		known: newKnown(pod("k", "1")),
		ops:   []op{resync()},
		pops:  []step{{false, false}},
	}, {
		name: "first Replace: synced once every listed key is popped",
		ops:  []op{replace(pod("a", "1"), pod("b", "1")), add("c", "1")},
		pops: []step{{true, false}, {true, true}, {false, true}},
	}, {
		name: "an empty first Replace syncs at once",
		ops:  []op{replace()}, syncedAfter: true,
	}, {
		name:  "generated deletes count toward the initial list",
		known: newKnown(pod("gone", "1")),
		ops:   []op{replace(pod("a", "1"))},
		pops:  []step{{true, false}, {true, true}},
	}, {
		name:  "keys queued before the first Replace count too",
		known: newKnown(pod("k", "1")),
		ops:   []op{resync(), replace(pod("a", "1"), pod("k", "1"))},
		pops:  []step{{true, false}, {true, true}},
	}, {
		name: "Add before Replace: synced at once, nothing is initial",
		ops:  []op{add("a", "1"), replace(pod("a", "1"), pod("b", "1"))}, syncedAfter: true,
		pops: []step{{false, true}, {false, true}},
	}, {
		name: "Update before Replace also populates",
		ops:  []op{update("a", "1")}, syncedAfter: true,
		pops: []step{{false, true}},
	}, {
		name:  "a dropped Delete before Replace also populates",
		known: newKnown(),
		ops:   []op{del("x", "1"), replace(pod("a", "1"))}, syncedAfter: true,
		pops: []step{{false, true}},
	}, {
		name: "a second Replace does not restart the count",
		ops:  []op{replace(pod("a", "1")), replace(pod("a", "2"), pod("b", "1"))},
		pops: []step{{true, true}, {false, true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFIFO(tt.known)
			for _, o := range tt.ops {
				require.NoError(t, o(f))
			}
			require.Equal(t, tt.syncedAfter, f.HasSynced())
			require.Equal(t, tt.syncedAfter, closed(f.Synced()))
			for i, want := range tt.pops {
				got := pop(t, f)
				assert.Equal(t, want.initial, got.initial, "pop %d (%s): isInInitialList", i, got.key)
				assert.Equal(t, want.synced, f.HasSynced(), "pop %d (%s): HasSynced", i, got.key)
				assert.Equal(t, want.synced, closed(f.Synced()), "pop %d (%s): Synced channel", i, got.key)
			}
			assert.Zero(t, f.Len(), "the test pops everything")
		})
	}
}

func TestFIFOSyncedOnlyAfterProcessReturns(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"))
	err := f.Pop(context.Background(), func(_ string, _ deltas, initial bool) error {
		assert.True(t, initial)
		assert.False(t, f.HasSynced(), "the last initial key is not processed yet")
		assert.False(t, closed(f.Synced()))
		return errors.New("failed")
	})
	require.Error(t, err)
	assert.True(t, f.HasSynced(), "a failed batch still counts as processed")
	assert.True(t, closed(f.Synced()))
}

func TestFIFOReAddedInitialKeyIsNotInitial(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"))
	err := f.Pop(context.Background(), func(string, deltas, bool) error {
		return f.Update(pod("a", "2"))
	})
	require.NoError(t, err)
	assert.True(t, f.HasSynced())
	assert.False(t, pop(t, f).initial)
}
