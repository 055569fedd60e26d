package fakelw

import (
	"runtime"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/reflector"
)

// An open watch keeps none of the events it has handed out: its queue kept
// them all reachable, with their objects, until an append happened to
// move it (a burst of 100k events pinned up to 5 MiB).
func TestWatcherKeepsNoEventItHandedOut(t *testing.T) {
	w := newWatcher[*corev1.Pod](t.Context(), nil)
	const n = 1000
	refs := make([]weak.Pointer[corev1.Pod], 0, n)
	for range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		refs = append(refs, weak.Make(p))
		w.push(reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: p})
	}
	for range n {
		if _, err := w.Next(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	alive := 0
	for _, r := range refs {
		if r.Value() != nil {
			alive++
		}
	}
	runtime.KeepAlive(w)
	if alive > 0 {
		t.Errorf("an open watch with nothing queued keeps %d of the %d objects it handed out", alive, n)
	}
}
