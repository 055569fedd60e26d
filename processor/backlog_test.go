package processor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Notifications for the backlog tests: the object's name is the key and its
// resourceVersion the state.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

func add(key, rv string, initial bool) Notification[*corev1.Pod] {
	return Notification[*corev1.Pod]{Kind: Add, Key: key, New: pod(key, rv), IsInInitialList: initial}
}

func update(key, oldRV, newRV string) Notification[*corev1.Pod] {
	return Notification[*corev1.Pod]{Kind: Update, Key: key, Old: pod(key, oldRV), New: pod(key, newRV)}
}

func del(key, rv string) Notification[*corev1.Pod] {
	return Notification[*corev1.Pod]{Kind: Delete, Key: key, Old: pod(key, rv)}
}

// show renders n as "Add a 1 initial", "Update a 1->2" or "Delete a 2".
func show(n Notification[*corev1.Pod]) string {
	switch n.Kind {
	case Add:
		s := fmt.Sprintf("Add %s %s", n.Key, n.New.ResourceVersion)
		if n.IsInInitialList {
			s += " initial"
		}
		return s
	case Update:
		return fmt.Sprintf("Update %s %s->%s", n.Key, n.Old.ResourceVersion, n.New.ResourceVersion)
	case Delete:
		return fmt.Sprintf("Delete %s %s", n.Key, n.Old.ResourceVersion)
	}
	return n.Kind.String()
}

// contents lists what b holds, front first, without changing it.
func contents(b *backlog[*corev1.Pod]) []string {
	var out []string
	for i := range b.len() {
		out = append(out, show(*b.ring.at(i)))
	}
	return out
}

// pop is a step of a backlog test that pops one notification.
var pop = Notification[*corev1.Pod]{}

func TestBacklog(t *testing.T) {
	tests := []struct {
		name       string
		maxPending int
		steps      []Notification[*corev1.Pod] // pushed in order; pop pops
		want       []string                    // the backlog's contents at the end
		wantPopped []string                    // what the pops returned
	}{
		{
			name:       "unbounded keeps everything",
			maxPending: 0,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), update("a", "2", "3"), update("a", "3", "4")},
			want:       []string{"Update a 1->2", "Update a 2->3", "Update a 3->4"},
		},
		{
			name:       "below the bound nothing is merged",
			maxPending: 3,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), update("a", "2", "3"), update("a", "3", "4")},
			want:       []string{"Update a 1->2", "Update a 2->3", "Update a 3->4"},
		},
		{
			name:       "at the bound Update+Update keeps the first Old and the second New",
			maxPending: 2,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), update("a", "2", "3"), update("a", "3", "4"), update("a", "4", "5")},
			want:       []string{"Update a 1->2", "Update a 2->5"},
		},
		{
			name:       "Add+Update is an Add of the new state, initial kept",
			maxPending: 1,
			steps:      []Notification[*corev1.Pod]{add("a", "1", true), update("a", "1", "2"), update("a", "2", "3")},
			want:       []string{"Add a 3 initial"},
		},
		{
			name:       "an Add is never merged",
			maxPending: 1,
			steps:      []Notification[*corev1.Pod]{add("a", "1", true), add("a", "2", false), update("a", "2", "3")},
			want:       []string{"Add a 1 initial", "Add a 3"},
		},
		{
			name:       "deletes are never dropped and nothing merges across them",
			maxPending: 1,
			steps: []Notification[*corev1.Pod]{
				update("a", "1", "2"), del("a", "2"), update("a", "2", "3"), update("a", "3", "4"),
				del("a", "4"), del("a", "4"), add("a", "10", false), update("a", "10", "11"),
			},
			want: []string{"Update a 1->2", "Delete a 2", "Update a 2->4", "Delete a 4", "Delete a 4", "Add a 11"},
		},
		{
			name:       "a merged update takes the place of the one it merges into",
			maxPending: 2,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), update("b", "1", "2"), update("a", "2", "3"), update("b", "2", "3")},
			want:       []string{"Update a 1->3", "Update b 1->3"},
		},
		{
			name:       "an empty key is never merged",
			maxPending: 1,
			steps:      []Notification[*corev1.Pod]{update("", "1", "2"), update("", "2", "3")},
			want:       []string{"Update  1->2", "Update  2->3"},
		},
		{
			name:       "a popped notification is no longer merged into",
			maxPending: 1,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), pop, update("a", "2", "3"), update("a", "3", "4")},
			want:       []string{"Update a 2->4"},
			wantPopped: []string{"Update a 1->2"},
		},
		{
			name:       "the front can be merged into",
			maxPending: 2,
			steps:      []Notification[*corev1.Pod]{update("a", "1", "2"), update("b", "1", "2"), pop, update("b", "2", "3"), update("b", "3", "4")},
			want:       []string{"Update b 1->2", "Update b 2->4"},
			wantPopped: []string{"Update a 1->2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBacklog[*corev1.Pod](tt.maxPending)
			var popped []string
			for _, n := range tt.steps {
				if n.Kind == 0 {
					popped = append(popped, show(b.pop()))
					continue
				}
				b.push(n)
			}
			if got := contents(b); !slices.Equal(got, tt.want) {
				t.Errorf("backlog holds\n\t%q\nwant\n\t%q", got, tt.want)
			}
			if !slices.Equal(popped, tt.wantPopped) {
				t.Errorf("popped %q, want %q", popped, tt.wantPopped)
			}
		})
	}
}

// TestBacklogAgainstModel checks the backlog, its index of keys and its ring
// wrapping and resizing under it, against a plain slice that applies the
// policy by scanning, over random pushes and pops.
func TestBacklogAgainstModel(t *testing.T) {
	for _, maxPending := range []int{0, 1, 3, 20} {
		t.Run(fmt.Sprint("MaxPending=", maxPending), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(maxPending)))
			b := newBacklog[*corev1.Pod](maxPending)
			var model []Notification[*corev1.Pod]
			rv := 0
			for step := range 20000 {
				// Phases of filling and draining make the ring grow,
				// shrink and wrap around.
				filling := step/500%2 == 0
				if len(model) > 0 && rng.IntN(10) < map[bool]int{true: 3, false: 7}[filling] {
					got, want := show(b.pop()), show(model[0])
					model = model[1:]
					if got != want {
						t.Fatalf("step %d: popped %q, want %q", step, got, want)
					}
					continue
				}
				rv++
				key := fmt.Sprint("k", rng.IntN(8))
				var n Notification[*corev1.Pod]
				switch rng.IntN(10) {
				case 0:
					n = add(key, fmt.Sprint(rv), rng.IntN(2) == 0)
				case 1:
					n = del(key, fmt.Sprint(rv))
				default:
					n = update(key, fmt.Sprint(rv-1), fmt.Sprint(rv))
				}
				merged := b.push(n)
				wantMerged := false
				if j := lastOfKey(model, key); maxPending > 0 && n.Kind == Update && j >= 0 && model[j].Kind != Delete && len(model) >= maxPending {
					model[j].New = n.New
					wantMerged = true
				} else {
					model = append(model, n)
				}
				if merged != wantMerged {
					t.Fatalf("step %d: push(%s) merged=%v, want %v", step, show(n), merged, wantMerged)
				}
				if b.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", step, b.len(), len(model))
				}
			}
		})
	}
}

func lastOfKey(ns []Notification[*corev1.Pod], key string) int {
	for j := len(ns) - 1; j >= 0; j-- {
		if ns[j].Key == key {
			return j
		}
	}
	return -1
}
