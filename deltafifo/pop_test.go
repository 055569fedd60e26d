package deltafifo_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

type deltas = []deltafifo.Delta[*corev1.Pod]

// popAsync calls Pop in a new goroutine and sends its outcome on the
// returned channel.
func popAsync(ctx context.Context, f *fifo) <-chan popResult {
	out := make(chan popResult, 1)
	go func() {
		var r popResult
		r.err = f.Pop(ctx, func(key string, d deltas, initial bool) error {
			r.popped = popped{key, describe(d), initial}
			return nil
		})
		out <- r
	}()
	return out
}

type popResult struct {
	popped
	err error
}

func requireBlocked(t *testing.T, ch <-chan popResult) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		t.Fatalf("Pop returned %+v, want it blocked", r)
	default:
	}
}

func TestFIFOPopWaits(t *testing.T) {
	t.Run("until a key is queued", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := deltafifo.New[*corev1.Pod]()
			ch := popAsync(t.Context(), f)
			requireBlocked(t, ch)
			require.NoError(t, f.Add(pod("a", "1")))
			r := <-ch
			require.NoError(t, r.err)
			assert.Equal(t, "ns/a", r.key)
		})
	})

	t.Run("until the context is cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := deltafifo.New[*corev1.Pod]()
			ctx, cancel := context.WithCancel(t.Context())
			ch := popAsync(ctx, f)
			requireBlocked(t, ch)
			cancel()
			assert.ErrorIs(t, (<-ch).err, context.Canceled)
		})
	})

	t.Run("until the context deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := deltafifo.New[*corev1.Pod]()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			assert.ErrorIs(t, (<-popAsync(ctx, f)).err, context.DeadlineExceeded)
		})
	})

	t.Run("until Close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := deltafifo.New[*corev1.Pod]()
			ch1, ch2 := popAsync(t.Context(), f), popAsync(t.Context(), f)
			requireBlocked(t, ch1)
			f.Close()
			assert.ErrorIs(t, (<-ch1).err, deltafifo.ErrClosed)
			assert.ErrorIs(t, (<-ch2).err, deltafifo.ErrClosed)
		})
	})

	t.Run("every waiting Pop gets a key when several are queued at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := deltafifo.New[*corev1.Pod]()
			ch1, ch2 := popAsync(t.Context(), f), popAsync(t.Context(), f)
			requireBlocked(t, ch1)
			require.NoError(t, f.Add(pod("a", "1")))
			require.NoError(t, f.Add(pod("b", "1")))
			r1, r2 := <-ch1, <-ch2
			require.NoError(t, r1.err)
			require.NoError(t, r2.err)
			assert.ElementsMatch(t, []string{"ns/a", "ns/b"}, []string{r1.key, r2.key})
		})
	})
}

func TestFIFOPopContextAlreadyDone(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Add(pod("a", "1")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := f.Pop(ctx, func(string, deltas, bool) error {
		t.Error("process called with a cancelled context")
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, f.Len(), "nothing popped")
}

func TestFIFOPopReturnsProcessError(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Add(pod("a", "1")))
	errBoom := errors.New("boom")
	err := f.Pop(context.Background(), func(string, deltas, bool) error { return errBoom })
	assert.Same(t, errBoom, err, "the error must be returned unwrapped")
	assert.Zero(t, f.Len(), "a failed batch is not requeued")
}

func TestFIFOPopNilProcess(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Add(pod("a", "1")))
	require.Error(t, f.Pop(context.Background(), nil))
	assert.Equal(t, 1, f.Len())
}

func TestFIFOReAddDuringProcessingIsANewEntry(t *testing.T) {
	f := deltafifo.New[*corev1.Pod]()
	require.NoError(t, f.Add(pod("a", "1")))
	require.NoError(t, f.Add(pod("b", "1")))
	err := f.Pop(context.Background(), func(key string, batch deltas, _ bool) error {
		// Process runs unlocked: these calls would deadlock otherwise.
		require.NoError(t, f.Update(pod("a", "2")))
		require.NoError(t, f.Delete(pod("a", "2")))
		assert.Equal(t, "Added@1", describe(batch), "the batch in flight must not grow")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b: Added@1", "ns/a: Updated@2 Deleted@2"}, drain(t, f))
}

func TestFIFOClose(t *testing.T) {
	f := newFIFO(newKnown(pod("k", "1")))
	require.NoError(t, f.Add(pod("a", "1")))
	require.NoError(t, f.Add(pod("b", "1")))
	f.Close()
	f.Close() // idempotent

	for name, write := range map[string]op{
		"Add": add("c", "1"), "Update": update("c", "1"), "Delete": del("k", "1"),
		"Replace": replace(pod("c", "1")), "Resync": resync(),
	} {
		assert.ErrorIs(t, write(f), deltafifo.ErrClosed, name)
	}

	assert.Equal(t, "ns/a", pop(t, f).key, "Close keeps what is queued")
	assert.Equal(t, "ns/b", pop(t, f).key)
	err := f.Pop(context.Background(), func(string, deltas, bool) error {
		t.Error("process called on a closed, empty FIFO")
		return nil
	})
	assert.ErrorIs(t, err, deltafifo.ErrClosed)
	assert.Contains(t, err.Error(), "closed")
}

func TestFIFOPanickingProcessReleasesTheKey(t *testing.T) {
	f := newFIFO(newKnown())
	require.NoError(t, f.Replace([]*corev1.Pod{pod("a", "1")}, "1"))
	func() {
		defer func() { assert.NotNil(t, recover()) }()
		_ = f.Pop(context.Background(), func(string, deltas, bool) error { panic("handler bug") })
	}()
	assert.True(t, f.HasSynced(), "the panicked batch still counts as processed")
	require.NoError(t, f.Replace(nil, "2"))
	assert.Zero(t, f.Len(), "ns/a is no longer in flight")
}

// A delete of a key whose batch being processed ends in a delete is
// dropped, as it is once that batch is done: the consumer is applying that
// delete (it was queued, and the informer told its handlers twice).
// A Delete of a key whose only in-flight batch already ends in Deleted must be
// dropped, as it is when it arrives just after that batch was processed (and
// as in client-go, whose Pop holds the lock while processing).
func TestDeleteWhileItsDeleteIsProcessed(t *testing.T) {
	k := newKnown(pod("a", "1"))
	f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](k))
	require.NoError(t, f.Delete(pod("a", "2")))
	err := f.Pop(context.Background(), func(key string, d deltas, _ bool) error {
		// The consumer is applying the delete: the reflector sees the
		// same delete again meanwhile.
		require.NoError(t, f.Delete(pod("a", "2")))
		k.mu.Lock()
		delete(k.objs, key)
		k.mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, snapshot(f), "second delete of an already-deleted key was queued")

	// Same call after processing: dropped.
	require.NoError(t, f.Delete(pod("a", "2")))
	assert.Empty(t, snapshot(f))
}
