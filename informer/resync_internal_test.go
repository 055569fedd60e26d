package informer

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
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

// The resync loop asks on the tick (onTheTick), not when the tick came:
// ticks that come a millisecond late, then on time, then late again, gave
// a handler with a 1 s period a resync at every other tick. A synctest
// bubble's ticker is never late, so the ticks here are sent by hand.
func TestResyncLoopAsksOnTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		if _, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
			t.Fatal(err)
		}
		s := New[*corev1.Pod](src)
		ticks := make(chan time.Time)
		s.ticker = func() (<-chan time.Time, func()) { return ticks, func() {} }
		var resyncs atomic.Int32
		s.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			UpdateFunc: func(_, _ *corev1.Pod) { resyncs.Add(1) },
		}, WithHandlerResync(time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(ctx) }()
		synctest.Wait()
		started := time.Now() // the loop's ticker started with Run, at this instant
		const n = 10
		for k := 1; k <= n; k++ {
			late := time.Duration(k%2) * time.Millisecond
			time.Sleep(time.Until(started.Add(time.Duration(k)*time.Second + late)))
			ticks <- time.Now()
			synctest.Wait()
		}
		cancel()
		<-done
		if got := resyncs.Load(); got != n {
			t.Errorf("%d resyncs for %d ticks of a 1 s period", got, n)
		}
	})
}
