package deltafifo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// consumer pops from f and applies each delta to k, as the informer does
// to its cache; it reports whether every batch was from the initial list.
func consume(t *testing.T, f *fifo, k *known, n int) (allInitial bool) {
	t.Helper()
	allInitial = true
	for range n {
		err := f.Pop(context.Background(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], initial bool) error {
			allInitial = allInitial && initial
			for _, d := range deltas {
				if d.Type == deltafifo.Deleted {
					k.del(key)
				} else {
					k.set(d.Object)
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	return allInitial
}

func TestFillPopsAreInitialAndSyncWaitsForEndFill(t *testing.T) {
	k := newKnown()
	f := newFIFO(k)
	require.NoError(t, f.StartFill())
	require.NoError(t, f.Fill(pod("a", "1")))
	require.NoError(t, f.Fill(pod("b", "1")))
	assert.True(t, consume(t, f, k, 2), "popped while the list is filled: initial")
	assert.False(t, f.HasSynced(), "everything filled so far is processed, but the list has not ended")
	require.NoError(t, f.Fill(pod("c", "1")))
	require.NoError(t, f.EndFill(nil, "1"))
	assert.False(t, f.HasSynced(), "c is still queued")
	assert.False(t, closed(f.Synced()))
	assert.True(t, consume(t, f, k, 1))
	assert.True(t, f.HasSynced())
	assert.True(t, closed(f.Synced()))
	assert.Equal(t, []string{"ns/a", "ns/b", "ns/c"}, k.ListKeys())

	require.NoError(t, f.Add(pod("d", "2")))
	assert.Equal(t, popped{"ns/d", "Added@2", false}, pop(t, f), "after the list: not initial")
}

func TestSyncWaitsForABatchPoppedDuringTheFill(t *testing.T) {
	f := newFIFO(nil)
	require.NoError(t, f.StartFill())
	require.NoError(t, f.Fill(pod("a", "1")))
	inProcess, release := make(chan struct{}), make(chan struct{})
	popped := make(chan error)
	go func() {
		popped <- f.Pop(context.Background(), func(string, []deltafifo.Delta[*corev1.Pod], bool) error {
			close(inProcess)
			<-release
			return nil
		})
	}()
	<-inProcess
	require.NoError(t, f.EndFill(nil, "1"))
	assert.False(t, f.HasSynced(), "a's process call has not returned")
	close(release)
	require.NoError(t, <-popped)
	assert.True(t, f.HasSynced())
}

func TestFillStartedAgainDeletesWhatTheNewListLacks(t *testing.T) {
	k := newKnown()
	f := newFIFO(k)
	require.NoError(t, f.StartFill())
	require.NoError(t, f.Fill(pod("a", "1")))
	require.NoError(t, f.Fill(pod("b", "1")))
	require.NoError(t, f.Fill(pod("gone", "1")))
	consume(t, f, k, 1) // a is in the cache; b and gone are queued

	// The list failed part way; it is read again, at a later state.
	require.NoError(t, f.StartFill())
	require.NoError(t, f.Fill(pod("b", "3")))
	require.NoError(t, f.Fill(pod("new", "3")))
	require.NoError(t, f.EndFill(nil, "3"))
	assert.Equal(t, []string{
		"ns/b: Replaced@1 Replaced@3",
		"ns/gone: Replaced@1 Deleted!@1",
		"ns/new: Replaced@3",
		"ns/a: Deleted!@1",
	}, snapshot(f))
	assert.True(t, consume(t, f, k, 4))
	assert.Equal(t, []string{"ns/b", "ns/new"}, k.ListKeys())
	assert.True(t, f.HasSynced())
}

func TestFillKeepsTheNewerOfAKeyListedTwice(t *testing.T) {
	f := newFIFO(nil)
	require.NoError(t, f.StartFill())
	require.NoError(t, f.Fill(pod("a", "5")))
	require.NoError(t, f.Fill(pod("a", "4")))
	require.NoError(t, f.Fill(pod("a", "6")))
	require.NoError(t, f.EndFill(nil, "6"))
	assert.Equal(t, []string{"ns/a: Replaced@5 Replaced@6"}, snapshot(f))
}

func TestEndFillLeavesKeptKeysAlone(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%t", keep), func(t *testing.T) {
			k := newKnown()
			f := newFIFO(k)
			require.NoError(t, f.StartFill())
			require.NoError(t, f.Fill(pod("a", "1")))
			consume(t, f, k, 1)
			require.NoError(t, f.StartFill())
			require.NoError(t, f.Fill(pod("b", "2")))
			var kept []*corev1.Pod
			if keep { // a's transform failed this time
				kept = []*corev1.Pod{pod("a", "2")}
			}
			require.NoError(t, f.EndFill(kept, "2"))
			consume(t, f, k, f.Len())
			want := []string{"ns/b"}
			if keep {
				want = []string{"ns/a", "ns/b"}
			}
			assert.Equal(t, want, k.ListKeys())
		})
	}
}

func TestFillRefusals(t *testing.T) {
	f := newFIFO(nil)
	assert.Error(t, f.Fill(pod("a", "1")), "no StartFill")
	assert.Error(t, f.EndFill(nil, "1"), "no StartFill")
	require.NoError(t, f.StartFill())
	var nilPod *corev1.Pod
	assert.ErrorIs(t, f.Fill(nilPod), deltafifo.ErrInvalidObject)
	assert.ErrorIs(t, f.Fill(pod("", "1")), deltafifo.ErrInvalidObject)
	assert.Zero(t, f.Len())
	require.NoError(t, f.EndFill(nil, "1"))
	assert.Error(t, f.EndFill(nil, "1"), "ended already")
	assert.ErrorIs(t, f.StartFill(), deltafifo.ErrPopulated)

	added := newFIFO(nil)
	require.NoError(t, added.Add(pod("a", "1")))
	assert.ErrorIs(t, added.StartFill(), deltafifo.ErrPopulated)
	replaced := newFIFO(nil)
	require.NoError(t, replaced.Replace(nil, "1"))
	assert.ErrorIs(t, replaced.StartFill(), deltafifo.ErrPopulated)

	closedFIFO := newFIFO(nil)
	require.NoError(t, closedFIFO.StartFill())
	closedFIFO.Close()
	assert.ErrorIs(t, closedFIFO.Fill(pod("a", "1")), deltafifo.ErrClosed)
	assert.ErrorIs(t, closedFIFO.EndFill(nil, "1"), deltafifo.ErrClosed)
	assert.ErrorIs(t, closedFIFO.StartFill(), deltafifo.ErrClosed)
}

// Filling a list, with pops in between and attempts started over, leaves
// the consumer with what one Replace of the last attempt's list would.
func TestFillEndsAsReplace(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := newKnown()
		f := newFIFO(k)
		var last map[string]string // the last attempt's list: key → newest rv
		attempts := 1 + rng.IntN(3)
		for a := range attempts {
			require.NoError(t, f.StartFill())
			last = map[string]string{}
			for range rng.IntN(12) {
				name, rv := fmt.Sprintf("p%d", rng.IntN(8)), fmt.Sprint(10*a+rng.IntN(10))
				require.NoError(t, f.Fill(pod(name, rv)))
				if old, ok := last["ns/"+name]; !ok || len(rv) > len(old) || (len(rv) == len(old) && rv > old) {
					last["ns/"+name] = rv
				}
				if rng.IntN(3) == 0 && f.Len() > 0 {
					require.True(t, consume(t, f, k, 1), "seed %d", seed)
				}
			}
		}
		require.NoError(t, f.EndFill(nil, "99"))
		require.True(t, consume(t, f, k, f.Len()), "seed %d", seed)
		require.True(t, f.HasSynced(), "seed %d", seed)
		got := map[string]string{}
		for _, key := range k.ListKeys() {
			p, _ := k.GetByKey(key)
			got[key] = p.ResourceVersion
		}
		require.Equal(t, last, got, "seed %d", seed)
	}
}
