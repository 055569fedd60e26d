package deltafifo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Some combinations of consecutive deletes cannot be produced through the
// public API (Replace never queues a final-state-unknown delete after a
// delete), so the collapse rule is tested on enqueueLocked directly.
func TestCollapseConsecutiveDeletes(t *testing.T) {
	p := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
	}
	tests := []struct {
		name                  string
		olderFSU, newerFSU    bool
		wantRV                string
		wantFinalStateUnknown bool
	}{
		{"both known: newer wins", false, false, "2", false},
		{"both unknown: newer wins", true, true, "2", true},
		{"older known, newer unknown: known wins", false, true, "1", false},
		{"older unknown, newer known: known wins", true, false, "2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New[*corev1.Pod]()
			f.enqueueLocked("ns/a", Delta[*corev1.Pod]{Type: Deleted, Object: p("1"), FinalStateUnknown: tt.olderFSU})
			f.enqueueLocked("ns/a", Delta[*corev1.Pod]{Type: Deleted, Object: p("2"), FinalStateUnknown: tt.newerFSU})
			d := f.items["ns/a"]
			if assert.Len(t, d, 1) {
				assert.Equal(t, tt.wantRV, d[0].Object.ResourceVersion)
				assert.Equal(t, tt.wantFinalStateUnknown, d[0].FinalStateUnknown)
			}
			assert.Equal(t, 1, f.queue.len())
		})
	}
}
