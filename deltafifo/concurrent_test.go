package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// TestFIFOConcurrentProducersAndConsumer checks, under -race, that what
// several producers write reaches one consumer complete and in per-key
// order.
func TestFIFOConcurrentProducersAndConsumer(t *testing.T) {
	const producers, keys, updates = 4, 50, 20
	f := deltafifo.New[*corev1.Pod]()

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for u := 1; u <= updates; u++ {
				for k := range keys {
					// Each producer owns its keys, so per-key order is defined.
					assert.NoError(t, f.Update(pod(fmt.Sprintf("p%d-k%d", p, k), fmt.Sprint(u))))
				}
			}
		})
	}

	last := map[string]int{}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			err := f.Pop(context.Background(), func(key string, d deltas, _ bool) error {
				for _, delta := range d {
					var rv int
					_, _ = fmt.Sscan(delta.Object.ResourceVersion, &rv)
					if rv <= last[key] {
						return fmt.Errorf("%s: version %d after %d", key, rv, last[key])
					}
					last[key] = rv
				}
				return nil
			})
			if errors.Is(err, deltafifo.ErrClosed) {
				return
			}
			assert.NoError(t, err)
		}
	}()

	wg.Wait()
	f.Close()
	<-consumed
	require.Len(t, last, producers*keys)
	for key, rv := range last {
		assert.Equal(t, updates, rv, key)
	}
}
