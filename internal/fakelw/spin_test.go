package fakelw_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// In a bubble, where time stands still while goroutines run, a SpinGuard
// lets one client (one context) ask 10,000 times at one instant and panics
// at the next; once the clock has moved it counts again from zero.
func TestSpinGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g fakelw.SpinGuard
		ctx := t.Context()
		for range 10_000 {
			g.Asked(ctx)
		}
		assert.PanicsWithValue(t,
			"fakelw: 10001 lists and watches at one instant (2000-01-01T00:00:00Z) from one client: it asks again without waiting, which in a synctest bubble stops the clock for good",
			func() { g.Asked(ctx) })
		time.Sleep(time.Nanosecond)
		assert.NotPanics(t, func() {
			for range 10_000 {
				g.Asked(ctx)
			}
		})
	})
}

// Many clients that each ask a few times at one instant are no spin (5,001
// informers started at once on one Source, each listing and watching),
// until all of them together pass the backstop: a client that asks with a
// new context every time is caught by that.
func TestSpinGuardCountsPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g fakelw.SpinGuard
		assert.NotPanics(t, func() {
			for range 5_001 {
				ctx, cancel := context.WithCancel(t.Context())
				g.Asked(ctx) // its list
				g.Asked(ctx) // its watch
				cancel()
			}
		})
		assert.Panics(t, func() {
			for range 1_000_000 {
				ctx, cancel := context.WithCancel(t.Context())
				g.Asked(ctx)
				cancel()
			}
		})
	})
}

// A Source counts the first pages of its lists and its watches, not a
// list's next pages: those are progress, however many come at one instant.
func TestSourceCountsNoNextPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		for _, name := range []string{"a", "b", "c"} {
			src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
		}
		first, err := src.List(t.Context(), reflector.ListOptions{Limit: 1}, func(*corev1.Pod) error { return nil })
		require.NoError(t, err)
		next := reflector.ListOptions{Limit: 1, Continue: first.Continue} // the second page of three
		for range 20_000 {
			_, err := src.List(t.Context(), next, func(*corev1.Pod) error { return nil })
			require.NoError(t, err)
		}
		for range 10_000 - 1 { // with the first page above
			_, err := src.List(t.Context(), reflector.ListOptions{}, func(*corev1.Pod) error { return nil })
			require.NoError(t, err)
		}
		assert.Panics(t, func() { _, _ = src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1"}) },
			"the 10,001st first page or watch")
	})
}
