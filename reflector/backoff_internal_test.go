package reflector

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/rest"
)

// A Retry-After at or past the backoff's maximum must still be spread:
// informers turned away together by a busy server (API Priority and
// Fairness answers every one of them "Retry-After: 60") must not all come
// back at the same instant, the maximum, every time.
func TestRetryAfterPastMaximumIsSpread(t *testing.T) {
	r := New[*corev1.Pod](nil, nil)
	err := &rest.APIError{ErrStatus: metav1.Status{Code: 429, Reason: metav1.StatusReasonTooManyRequests}, RetryAfter: time.Minute}
	waits := map[time.Duration]bool{}
	for range 100 {
		s := runState{backoff: newBackoff(r.opt.backoffInitial, r.opt.backoffMax)}
		s.backoff.next(time.Now()) // some failures in a row already
		s.backoff.next(time.Now())
		w := r.backoffFor(&s, err)
		if w > r.opt.backoffMax {
			t.Fatalf("waited %v, more than the maximum %v", w, r.opt.backoffMax)
		}
		waits[w] = true
	}
	if len(waits) < 50 {
		t.Errorf("100 informers told Retry-After: 60s waited %d distinct durations: they come back together", len(waits))
	}
}

// A Retry-After below the backoff's maximum is honoured: the server asked
// for 25 s, and the maximum (30 s) leaves room to wait that long. Coming
// back after 20 s, as the spread over [2/3, 1] of the maximum allows, asks
// a server that is shedding load before it said it could take more.
func TestRetryAfterBelowMaximumIsHonoured(t *testing.T) {
	r := New[*corev1.Pod](nil, nil, WithBackoff[*corev1.Pod](10*time.Millisecond, 30*time.Second))
	err := &rest.APIError{ErrStatus: metav1.Status{Code: 429, Reason: metav1.StatusReasonTooManyRequests}, RetryAfter: 25 * time.Second}
	for range 1000 {
		s := runState{backoff: newBackoff(r.opt.backoffInitial, r.opt.backoffMax)}
		if w := r.backoffFor(&s, err); w < 25*time.Second || w > 30*time.Second {
			t.Fatalf("Retry-After 25s with a maximum of 30s: waited %v, want 25s to 30s", w)
		}
	}
}

// Extremes of WithBackoff: nothing negative, nothing past the maximum, no
// panic from rand.N, with a Retry-After of centuries.
func TestRetryAfterWithExtremeBackoffs(t *testing.T) {
	for _, b := range [][2]time.Duration{
		{time.Nanosecond, time.Nanosecond}, {10 * time.Millisecond, 30 * time.Millisecond},
		{time.Second, time.Millisecond}, {0, 0}, {time.Millisecond, 1<<63 - 1},
	} {
		r := New[*corev1.Pod](nil, nil, WithBackoff[*corev1.Pod](b[0], b[1]))
		for _, ra := range []time.Duration{time.Nanosecond, time.Millisecond, time.Minute, 1<<63 - 1} {
			err := &rest.APIError{ErrStatus: metav1.Status{Code: 429}, RetryAfter: ra}
			for range 100 {
				s := runState{backoff: newBackoff(r.opt.backoffInitial, r.opt.backoffMax)}
				for range 70 {
					if w := r.backoffFor(&s, err); w <= 0 || w > r.opt.backoffMax {
						t.Fatalf("WithBackoff(%v, %v), Retry-After %v: waited %v (max %v)", b[0], b[1], ra, w, r.opt.backoffMax)
					}
				}
			}
		}
	}
}

// After twice its maximum without a failure, the backoff starts again from
// its initial delay: a failure after a quiet stretch is not the next of a
// run of them. Sooner, it stays where the run left it.
func TestBackoffResetsAfterAQuietStretch(t *testing.T) {
	b := newBackoff(time.Second, 30*time.Second)
	now := time.Now()
	for range 10 {
		b.next(now) // a run of failures: at the maximum
	}
	now = now.Add(time.Minute) // twice the maximum
	if w := b.next(now); w < 15*time.Second {
		t.Fatalf("a failure %v after the last waited %v, want 15s to 30s: still the same run", time.Minute, w)
	}
	now = now.Add(time.Minute + time.Second)
	if w := b.next(now); w > time.Second {
		t.Fatalf("a failure %v after the last waited %v, want at most the initial 1s", time.Minute+time.Second, w)
	}
}
