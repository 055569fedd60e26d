package result_test

import (
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/bench/result"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := result.Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var samples []time.Duration
	for i := 1; i <= 1000; i++ {
		samples = append(samples, time.Duration(1001-i)*time.Millisecond) // unsorted
	}
	l := result.Summarize(samples)
	if l.Samples != 1000 || l.P50 != 500 || l.P99 != 990 || l.P999 != 999 || l.Max != 1000 {
		t.Errorf("Summarize = %+v", *l)
	}
	if result.Summarize(nil) != nil {
		t.Error("Summarize(nil) is not nil")
	}
}
