package reflector

import (
	"math"
	"math/rand/v2"
	"time"
)

// backoff computes how long to wait after consecutive failures: exponential
// from initial up to max, with full jitter on the upper half, and back to
// initial once no failure has been seen for resetAfter, or at once with
// reset. It is owned by the Reflector's Run goroutine and not safe for
// concurrent use.
type backoff struct {
	initial, max, resetAfter time.Duration

	current     time.Duration // the un-jittered delay of the last failure
	lastFailure time.Time
}

func newBackoff(initial, max time.Duration) *backoff {
	resetAfter := max + min(max, math.MaxInt64-max) // 2×max, saturated
	return &backoff{initial: initial, max: max, resetAfter: resetAfter}
}

// reset makes the next failure wait the initial delay.
func (b *backoff) reset() { b.current = 0 }

// next records a failure at now and returns how long to wait before trying
// again: a duration in [d/2, d] where d doubles with each failure up to max.
func (b *backoff) next(now time.Time) time.Duration {
	if b.current == 0 || now.Sub(b.lastFailure) > b.resetAfter {
		b.current = b.initial
	} else {
		b.current += min(b.current, b.max-b.current) // doubled, up to max
	}
	b.lastFailure = now
	half := b.current / 2
	return half + rand.N(half+1)
}
