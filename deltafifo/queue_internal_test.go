package deltafifo

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKeyQueueOrderAcrossCompaction interleaves pushes and pops so the
// queue compacts many times, and checks that FIFO order survives and the
// backing array does not grow without bound.
func TestKeyQueueOrderAcrossCompaction(t *testing.T) {
	var q keyQueue
	next, want := 0, 0
	for round := 0; round < 50; round++ {
		for i := 0; i < 3*compactAfter; i++ {
			q.push(strconv.Itoa(next))
			next++
		}
		for i := 0; i < 3*compactAfter-1; i++ { // leave one behind each round
			require.Equal(t, strconv.Itoa(want), q.pop())
			want++
		}
	}
	require.Equal(t, next-want, q.len())
	require.Equal(t, next-want, len(q.live()))
	require.Less(t, cap(q.keys), 8*compactAfter+next-want, "dead prefix must be reclaimed")
	for q.len() > 0 {
		require.Equal(t, strconv.Itoa(want), q.pop())
		want++
	}
	require.Equal(t, next, want)
}

// A drained backlog larger than shrinkAbove gives its memory back: the
// queue's array and the FIFO's map of deltas move to smaller ones each time
// they hold a quarter of their room or less (they kept the room of the
// first list for good, and until they were empty). A small one keeps its
// room.
func TestDrainedBacklogIsReleased(t *testing.T) {
	f := New[*corev1.Pod]()
	add := func(from, n int) {
		for i := range n {
			require.NoError(t, f.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: strconv.Itoa(from + i)}}))
		}
	}
	pop := func(n int) {
		for range n {
			require.NoError(t, f.Pop(context.Background(), func(string, []Delta[*corev1.Pod], bool) error { return nil }))
		}
	}
	add(0, 10)
	pop(10)
	assert.Positive(t, cap(f.queue.keys), "a small backlog keeps its room")
	assert.Equal(t, 10, f.itemsPeak)
	add(0, 30*shrinkAbove)
	pop(30*shrinkAbove - 5) // never quite empty
	assert.LessOrEqual(t, cap(f.queue.keys), shrinkAbove, "the queue's array is given back")
	assert.LessOrEqual(t, f.itemsPeak, shrinkAbove, "the map of deltas is given back")
	assert.Equal(t, 5, f.queue.len())
	assert.Len(t, f.items, 5)
	pop(5)
	add(0, 10)
	pop(10)
	assert.LessOrEqual(t, f.itemsPeak, shrinkAbove)
}
