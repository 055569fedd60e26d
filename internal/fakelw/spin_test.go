package fakelw_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/listwatch/listwatch/internal/fakelw"
)

// In a bubble, where time stands still while goroutines run, a SpinGuard
// lets 10,000 requests through at one instant and panics at the next; once
// the clock has moved it counts again from zero.
func TestSpinGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g fakelw.SpinGuard
		for range 10_000 {
			g.Asked()
		}
		assert.PanicsWithValue(t,
			"fakelw: 10001 lists and watches at one instant (2000-01-01T00:00:00Z): the client asks again without waiting, which in a synctest bubble stops the clock for good",
			g.Asked)
		time.Sleep(time.Nanosecond)
		assert.NotPanics(t, func() {
			for range 10_000 {
				g.Asked()
			}
		})
	})
}
