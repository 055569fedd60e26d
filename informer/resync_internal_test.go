package informer

import (
	"testing"
	"time"
)

// A tick delivered late is asked about at the time it was due, so that a
// whole-second resync period is kept (before, a handler with a 1 s period
// resynced every 2 s about half the time).
func TestOnTheTick(t *testing.T) {
	started := time.Now()
	for _, c := range []struct{ delivered, due time.Duration }{
		{time.Second + 3*time.Microsecond, time.Second},
		{2*time.Second + 40*time.Millisecond, 2 * time.Second},
		{3*time.Second - time.Microsecond, 3 * time.Second},
		{7*time.Second + 499*time.Millisecond, 7 * time.Second}, // ticks dropped while Resync ran
	} {
		if got := onTheTick(started, started.Add(c.delivered)); !got.Equal(started.Add(c.due)) {
			t.Errorf("a tick delivered after %v: asked at %v, want %v", c.delivered, got.Sub(started), c.due)
		}
	}
}
