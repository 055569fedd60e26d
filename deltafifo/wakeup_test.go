package deltafifo_test

import (
	"context"
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
