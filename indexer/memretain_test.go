package indexer_test

import (
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/listwatch/listwatch/indexer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nsPods(ns string, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("p", i)}}
	}
	return pods
}

// Bursts of 60k pods, one namespace after another, each deleted but for
// `left`, while 60k pods stay in "b": the store never falls to a quarter
// of its peak, so Delete never compacts it as a whole. The indexer keeps
// none of the deleted pods reachable, drops emptied index values, and gives
// back each burst namespace's key set's room: it is compared with an
// indexer through the same bursts deleted whole, the `left` pods of each
// added back after (the same peak, so the same room in its items map).
// Each burst's set kept the room of all its keys: 3.7 MB more for one
// burst, 10 MB for three.
func TestKeySetsGiveBackTheRoomOfABurst(t *testing.T) {
	const n = 60_000
	newX := func() *indexer.Indexer[*corev1.Pod] {
		return indexer.New(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]})
	}
	add := func(t *testing.T, x *indexer.Indexer[*corev1.Pod], pods []*corev1.Pod) {
		for _, p := range pods {
			if err := x.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct{ bursts, left int }{{1, 10}, {3, 10}} {
		t.Run(fmt.Sprintf("bursts=%d,left=%d", tc.bursts, tc.left), func(t *testing.T) {
			b := nsPods("b", n)
			x, ref := newX(), newX()
			add(t, x, b)
			add(t, ref, b)
			var kept []*corev1.Pod
			var weaks []weak.Pointer[corev1.Pod]
			for k := range tc.bursts {
				a := nsPods(fmt.Sprint("a", k), n)
				add(t, x, a)
				add(t, ref, a)
				kept = append(kept, a[:tc.left]...)
				for i, p := range a {
					if i >= tc.left {
						weaks = append(weaks, weak.Make(p))
						if err := x.Delete(p); err != nil {
							t.Fatal(err)
						}
					}
					if err := ref.Delete(p); err != nil {
						t.Fatal(err)
					}
				}
			}
			add(t, ref, kept)
			heap() // collect, so that weak pointers to unreachable pods are cleared
			alive := 0
			for _, w := range weaks {
				if w.Value() != nil {
					alive++
				}
			}
			values := x.ListIndexFuncValues(indexer.NamespaceIndex)
			// Fresh: the same contents added straight into a new indexer.
			fresh := newX()
			add(t, fresh, append(b[:n:n], kept...))
			all := heap()
			runtime.KeepAlive(x) // unreachable from here on
			noX := heap()
			runtime.KeepAlive(ref)
			noRef := heap()
			runtime.KeepAlive(fresh)
			none := heap()
			sizeX, sizeRef, sizeFresh := all-noX, noX-noRef, noRef-none
			t.Logf("after %d bursts of %d, %d left of each: indexer %.2f MB; same bursts deleted whole, the rest added back: %.2f MB; fresh: %.2f MB; deleted pods still reachable: %d of %d; index values: %v",
				tc.bursts, n, tc.left, float64(sizeX)/1e6, float64(sizeRef)/1e6, float64(sizeFresh)/1e6, alive, len(weaks), values)
			if alive != 0 {
				t.Errorf("%d deleted pods still reachable", alive)
			}
			if want := 1 + tc.bursts*min(tc.left, 1); len(values) != want {
				t.Errorf("%d index values, want %d: %v", len(values), want, values)
			}
			if sizeX > sizeRef+(1<<20) {
				t.Errorf("the indexer holds %.2f MB more than one through the same bursts whose burst namespaces were emptied", float64(sizeX-sizeRef)/1e6)
			}
			runtime.KeepAlive(b)
			runtime.KeepAlive(kept)
		})
	}
}
