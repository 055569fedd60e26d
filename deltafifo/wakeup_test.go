package deltafifo_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// cancelOnCheck is a context that is cancelled the first time Err is
// called once armed: it stands for a context cancelled between the moment
// a waiting Pop is woken and the moment it runs again.
type cancelOnCheck struct {
	context.Context
	cancel context.CancelFunc
	armed  atomic.Bool
}

func (c *cancelOnCheck) Err() error {
	if c.armed.Load() {
		c.cancel()
	}
	return c.Context.Err()
}

// TestPopWhoseContextEndsPassesItsWakeUpOn: of two Pops waiting, the one
// woken for a key may find its context cancelled; the key must then reach
// the other, not wait for the next write.
func TestPopWhoseContextEndsPassesItsWakeUpOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := deltafifo.New[*corev1.Pod]()
		inner, cancel := context.WithCancel(t.Context())
		ctxA := &cancelOnCheck{Context: inner, cancel: cancel}
		a := popAsync(ctxA, f)
		synctest.Wait() // a waits first: it gets the first wake-up
		b := popAsync(t.Context(), f)
		synctest.Wait()

		ctxA.armed.Store(true)
		require.NoError(t, f.Add(pod("k", "1")))
		synctest.Wait()

		ra := <-a
		require.ErrorIs(t, ra.err, context.Canceled)
		select {
		case rb := <-b:
			require.NoError(t, rb.err)
			assert.Equal(t, "ns/k", rb.key)
		default:
			f.Close() // let b go, for the bubble to end
			<-b
			t.Fatalf("the second Pop still waits with %d key(s) queued", 1)
		}
	})
}

// pausedBeforeWait is a context whose Done, the first time it is called,
// says so on paused and waits for resume: it holds a Pop that found the
// queue empty just before it starts to wait for a wake-up.
type pausedBeforeWait struct {
	context.Context
	paused, resume chan struct{}
	once           sync.Once
}

func (c *pausedBeforeWait) Done() <-chan struct{} {
	c.once.Do(func() {
		close(c.paused)
		<-c.resume
	})
	return c.Context.Done()
}

// TestPopPassesItsWakeUpOnWhileKeysRemain: two keys queued while two Pops
// were on their way to wait leave one wake-up between them (the FIFO keeps
// one). The Pop that takes it and pops a key must pass it on while a key
// is left, or the other Pop waits with a key queued until the next write.
func TestPopPassesItsWakeUpOnWhileKeysRemain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := deltafifo.New[*corev1.Pod]()
		resume := make(chan struct{})
		ctxA := &pausedBeforeWait{Context: t.Context(), paused: make(chan struct{}), resume: resume}
		ctxB := &pausedBeforeWait{Context: t.Context(), paused: make(chan struct{}), resume: resume}
		a, b := popAsync(ctxA, f), popAsync(ctxB, f)
		<-ctxA.paused
		<-ctxB.paused

		require.NoError(t, f.Add(pod("k1", "1")))
		require.NoError(t, f.Add(pod("k2", "1")))
		close(resume)
		synctest.Wait()

		var keys []string
		var waiting []<-chan popResult
		for _, ch := range []<-chan popResult{a, b} {
			select {
			case r := <-ch:
				require.NoError(t, r.err)
				keys = append(keys, r.key)
			default:
				waiting = append(waiting, ch)
			}
		}
		if len(waiting) > 0 {
			f.Close() // let the waiting Pop go, for the bubble to end
			for _, ch := range waiting {
				<-ch
			}
			t.Fatalf("a Pop still waits with a key queued; the other popped %v", keys)
		}
		assert.ElementsMatch(t, []string{"ns/k1", "ns/k2"}, keys)
	})
}
