package processor

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRing(t *testing.T) {
	// A step pushes the next push values of a counter, then pops pop values,
	// which must come out in the order they went in.
	type step struct{ push, pop int }
	tests := []struct {
		name    string
		steps   []step
		wantCap int // capacity after the last step
	}{
		{"empty", nil, 0},
		{"push and pop within the first block", []step{{5, 0}, {0, 5}}, ringMinCap},
		{"fill exactly", []step{{ringMinCap, 0}}, ringMinCap},
		{"grow once", []step{{ringMinCap + 1, 0}}, 2 * ringMinCap},
		{"grow many times", []step{{1000, 0}}, 1024},
		{"wrap around without growing", []step{{10, 8}, {12, 0}, {0, 14}}, ringMinCap},
		{"wrap around many times", []step{{3, 0}, {7, 7}, {7, 7}, {7, 7}, {7, 7}, {0, 3}}, ringMinCap},
		{"grow while wrapped", []step{{12, 10}, {14, 0}, {10, 0}}, 2 * ringMinCap},
		{"shrink after a burst", []step{{1000, 0}, {0, 1000}}, ringMinCap},
		{"shrink while wrapped", []step{{64, 44}, {10, 14}}, 32},
		{"interleaved", []step{{1, 0}, {2, 1}, {3, 2}, {40, 20}, {5, 25}, {0, 3}}, ringMinCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r ring[*int]
			next, want := 0, 0 // next value to push, next value to pop
			for _, s := range tt.steps {
				for range s.push {
					v := next
					r.push(&v)
					next++
				}
				for range s.pop {
					if got := *r.peek(); got != want {
						t.Fatalf("peek = %d, want %d", got, want)
					}
					if got := *r.pop(); got != want {
						t.Fatalf("pop = %d, want %d", got, want)
					}
					want++
				}
				if r.len() != next-want {
					t.Fatalf("len = %d, want %d", r.len(), next-want)
				}
				for i := range r.len() {
					if got := **r.at(i); got != want+i {
						t.Fatalf("at(%d) = %d, want %d", i, got, want+i)
					}
				}
				// Slots that hold no value hold no reference either.
				live := 0
				for _, p := range r.buf {
					if p != nil {
						live++
					}
				}
				if live != r.len() {
					t.Fatalf("%d slots hold a reference, want %d", live, r.len())
				}
			}
			if len(r.buf) != tt.wantCap {
				t.Fatalf("capacity %d, want %d", len(r.buf), tt.wantCap)
			}
		})
	}
}

func TestRingAtEditsInPlace(t *testing.T) {
	var r ring[int]
	for i := range 20 { // wraps: the front is no longer at buf[0] after pops
		r.push(i)
	}
	for range 10 {
		r.pop()
	}
	*r.at(3) = -1
	got := []int{r.pop(), r.pop(), r.pop(), r.pop(), r.pop()}
	if want := []int{10, 11, 12, -1, 14}; !slices.Equal(got, want) {
		t.Fatalf("popped %v, want %v", got, want)
	}
}

func BenchmarkRing(b *testing.B) {
	b.Run("steady", func(b *testing.B) { // push one, pop one, at a depth of 64
		var r ring[Notification[*corev1.Pod]]
		for range 64 {
			r.push(Notification[*corev1.Pod]{})
		}
		b.ReportAllocs()
		for b.Loop() {
			r.push(Notification[*corev1.Pod]{Kind: Update})
			r.pop()
		}
	})
	b.Run("burst", func(b *testing.B) { // push 1024, pop them all: growth and shrinkage
		var r ring[Notification[*corev1.Pod]]
		b.ReportAllocs()
		for b.Loop() {
			for range 1024 {
				r.push(Notification[*corev1.Pod]{Kind: Update})
			}
			for range 1024 {
				r.pop()
			}
		}
		b.ReportMetric(float64(b.N)*1024/b.Elapsed().Seconds(), "push+pop/s")
	})
}
