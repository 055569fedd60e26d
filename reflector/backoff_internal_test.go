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
