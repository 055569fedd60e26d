package reflector_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// wrappedPod embeds its Pod, and so its metadata, through a pointer.
type wrappedPod struct{ *corev1.Pod }

// A transform that returns an object embedding its metadata through a nil
// pointer returned no object: the object is skipped and reported, as for
// a nil one; the reflector panicked on its GetName.
func TestTransformReturningAnEmptyWrapper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *wrappedPod { return &wrappedPod{&corev1.Pod{}} })
		src.Create(&wrappedPod{pod("a")})
		src.Create(&wrappedPod{pod("b")})
		store := deltafifo.New[*wrappedPod]()
		var log errorLog
		r := reflector.New[*wrappedPod](src, store,
			reflector.WithMode[*wrappedPod](reflector.ListWatch),
			reflector.WithErrorHandler[*wrappedPod](log.add),
			reflector.WithTransform(func(p *wrappedPod) (*wrappedPod, error) {
				if p.Name == "a" {
					return &wrappedPod{}, nil
				}
				return p, nil
			}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		assert.Equal(t, []string{"ns/b"}, store.ListKeys())
		require.NotEmpty(t, log.all())
		assert.ErrorIs(t, log.all()[0], reflector.ErrSkipped)
		assert.ErrorContains(t, log.all()[0], "returned no object")
	})
}
