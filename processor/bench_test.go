package processor_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/processor"
)

// BenchmarkListenerThroughput measures notifications from Distribute to a
// handler that does nothing, through every listener's goroutines. An
// operation is one Distribute; it counts as done when every listener has
// handled it.
func BenchmarkListenerThroughput(b *testing.B) {
	for _, listeners := range []int{1, 10} {
		b.Run(fmt.Sprintf("listeners=%d", listeners), func(b *testing.B) {
			p := processor.New[*corev1.Pod]()
			var handled sync.WaitGroup
			handled.Add(listeners)
			for range listeners {
				var n atomic.Int64
				p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
					UpdateFunc: func(_, _ *corev1.Pod) {
						if n.Add(1) == int64(b.N) {
							handled.Done()
						}
					},
				}, processor.ListenerOptions{})
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				p.Run(ctx)
			}()
			n := updateOf("a", "1", "2")

			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Distribute(n, false)
			}
			handled.Wait()
			b.StopTimer()
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/s, "notifications/s")
			b.ReportMetric(float64(b.N*listeners)/s, "deliveries/s")
			cancel()
			<-stopped
		})
	}
}
