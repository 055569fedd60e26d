package processor_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/processor"
)

func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// After a burst of 100k notifications to a slow handler that then catches up
// to within a few, the listener keeps neither the objects handled nor the
// room the burst took. With MaxPending, its index of the latest
// notification per key kept its room (3.5 MB) until the backlog drained
// completely, which a handler that stays a few behind never lets happen.
func TestListenerGivesBackTheRoomOfABurstWhileBehind(t *testing.T) {
	for _, maxPending := range []int{0, 16} {
		t.Run(fmt.Sprint("MaxPending=", maxPending), func(t *testing.T) {
			const n, keep = 100_000, 5
			gate := make(chan struct{})    // holds the handler at its first call
			stall := make(chan struct{})   // holds it at call n-keep
			stalled := make(chan struct{}) // closed at call n-keep
			drained := make(chan struct{}) // closed at call n
			var handled atomic.Int64
			h := processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
				switch handled.Add(1) {
				case 1:
					<-gate
				case n - keep:
					close(stalled)
					<-stall
				case n:
					close(drained)
				}
			}}
			p := processor.New[*corev1.Pod]()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := p.AddListener(h, processor.ListenerOptions{MaxPending: maxPending})
			go p.Run(ctx)

			base := heapNow()
			weaks := make([]weak.Pointer[corev1.Pod], n)
			for i := range n {
				obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}
				weaks[i] = weak.Make(obj)
				p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "ns/" + obj.Name, New: obj}, false)
			}
			peak := heapNow()
			close(gate)
			<-stalled
			few := heapNow()
			alive := 0
			for _, w := range weaks {
				if w.Value() != nil {
					alive++
				}
			}
			pendingFew := l.Pending()
			close(stall)
			<-drained
			empty := heapNow()
			t.Logf("pending at peak %d; burst: %.2f MB; %d pending: %.3f MB, %d of %d objects alive; drained: %.3f MB",
				n, float64(peak-base)/1e6, pendingFew, float64(few-base)/1e6, alive, n, float64(empty-base)/1e6)
			if alive > keep+2 {
				t.Errorf("%d objects still reachable with %d pending", alive, pendingFew)
			}
			// (base to drained: the test's own weak pointers.)
			if few-empty > 256<<10 {
				t.Errorf("%d behind, the listener holds %.2f MB more than drained", pendingFew, float64(few-empty)/1e6)
			}
			runtime.KeepAlive(weaks)
		})
	}
}
