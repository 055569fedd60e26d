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

// 100 pods indexed by their labels, each given 1000 labels and then one:
// the store never shrinks, and no one value's key set grew, but the
// index's map of values held 100k values and kept their room (3.5 MB for
// 100 pods). It is compared with an indexer given the final pods only.
func TestIndexValuesGiveBackTheRoomOfABurst(t *testing.T) {
	byLabel := func(p *corev1.Pod) ([]string, error) {
		var vs []string
		for k := range p.Labels {
			vs = append(vs, k)
		}
		return vs, nil
	}
	labelled := func(i, labels int) *corev1.Pod {
		l := map[string]string{}
		for j := range labels {
			l[fmt.Sprintf("l-%d-%d", i, j)] = ""
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i), Labels: l}}
	}
	const n, burst = 100, 1000
	newX := func() *indexer.Indexer[*corev1.Pod] {
		return indexer.New(indexer.Indexers[*corev1.Pod]{"label": byLabel})
	}
	x, ref := newX(), newX()
	final := make([]*corev1.Pod, n)
	for i := range final {
		final[i] = labelled(i, 1)
		if err := x.Add(labelled(i, burst)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range final {
		if err := x.Update(p); err != nil {
			t.Fatal(err)
		}
		if err := ref.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(x.ListIndexFuncValues("label")); got != n {
		t.Fatalf("%d label values, want %d", got, n)
	}
	both := heap()
	runtime.KeepAlive(x)
	onlyRef := heap()
	runtime.KeepAlive(ref)
	none := heap()
	took, want := both-onlyRef, onlyRef-none
	t.Logf("%d pods after a burst of %d label values: %.2f MB; without the burst: %.2f MB", n, n*burst, float64(took)/1e6, float64(want)/1e6)
	if took > want+200_000 {
		t.Errorf("the indexer holds %.2f MB more than one given the same pods without the burst", float64(took-want)/1e6)
	}
	runtime.KeepAlive(final)
}
