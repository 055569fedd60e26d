package reflector

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestWithBackoffKeepsAUsableRange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		initial, max     time.Duration
		wantInit, wantMx time.Duration
	}{
		{"as given", time.Second, time.Minute, time.Second, time.Minute},
		{"max below initial is raised to it", 5 * time.Second, 0, 5 * time.Second, 5 * time.Second},
		{"no initial keeps the default", 0, 10 * time.Second, 800 * time.Millisecond, 10 * time.Second},
		{"negative initial keeps the default", -time.Second, -time.Second, 800 * time.Millisecond, 800 * time.Millisecond},
		{"below a millisecond is raised to it", time.Nanosecond, time.Nanosecond, time.Millisecond, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions[*corev1.Pod]()
			WithBackoff[*corev1.Pod](tc.initial, tc.max)(&o)
			assert.Equal(t, tc.wantInit, o.backoffInitial, "initial")
			assert.Equal(t, tc.wantMx, o.backoffMax, "max")
		})
	}
}

func TestDurationOptionsAreBounded(t *testing.T) {
	o := defaultOptions[*corev1.Pod]()
	WithRelistInterval[*corev1.Pod](time.Millisecond)(&o)
	assert.Equal(t, time.Second, o.relistInterval, "a relist interval of 1ms would be a LIST storm")
	WithRelistInterval[*corev1.Pod](-time.Second)(&o)
	assert.Zero(t, o.relistInterval, "negative: never")

	WithMinWatchTimeout[*corev1.Pod](time.Duration(math.MaxInt64))(&o)
	r := &Reflector[*corev1.Pod]{opt: o}
	for range 100 {
		if s := r.watchTimeout(); s < 24*3600 || s >= 48*3600 {
			t.Fatalf("timeoutSeconds %d for the largest minimum watch timeout", s)
		}
	}
}

// The backoff grows up to a max however large, and never waits nothing.
func TestBackoffSaturates(t *testing.T) {
	b := newBackoff(time.Second, time.Duration(math.MaxInt64))
	now := time.Now()
	var last time.Duration
	for i := range 80 {
		now = now.Add(time.Second)
		d := b.next(now)
		if i > 0 && d < last/2 {
			t.Fatalf("failure %d waits %s after %s: the backoff went back", i+1, d, last)
		}
		last = d
	}
	assert.Greater(t, last, 24*time.Hour)

	b = newBackoff(time.Millisecond, time.Millisecond)
	assert.Positive(t, b.next(now))
}

// WithDecodeWorkers is bounded: each worker is a goroutine per watch.
func TestDecodeWorkersAreBounded(t *testing.T) {
	for n, want := range map[int]int{-1: 1, 0: 1, 8: 8, 100_000: 64, math.MaxInt: 64} {
		var o httpOptions
		WithDecodeWorkers(n)(&o)
		assert.Equal(t, want, o.workers(), "WithDecodeWorkers(%d)", n)
	}
}

func TestCheckModeRefusesWhatIsNoMode(t *testing.T) {
	for _, m := range []Mode{Auto, ListWatch, WatchList} {
		assert.NoError(t, checkMode(m), "Mode(%d)", m)
	}
	for _, m := range []Mode{-7, 42} {
		assert.EqualError(t, checkMode(m), fmt.Sprintf("reflector: Mode(%d) is not Auto, ListWatch or WatchList", m))
	}
}
