package deltafifo

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
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
