package deltafifo_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

func newPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

// store is a stand-in for the informer's indexer: the objects the consumer
// already holds.
type store map[string]*corev1.Pod

func (s store) GetByKey(key string) (*corev1.Pod, bool) { p, ok := s[key]; return p, ok }
func (s store) ListKeys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	return keys
}

// A relist that lacks an object the consumer holds yields a typed delete
// whose final state is unknown: the object was deleted while nobody was
// watching, and the delete carries the last state we knew.
func ExampleFIFO_Replace() {
	known := store{"default/old": newPod("old", "7")}
	f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](known))

	// The relist returns only "web".
	_ = f.Replace([]*corev1.Pod{newPod("web", "12")}, "12")

	for f.Len() > 0 {
		_ = f.Pop(context.Background(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], initial bool) error {
			for _, d := range deltas {
				fmt.Printf("%s %v rv=%s finalStateUnknown=%v initial=%v\n",
					key, d.Type, d.Object.ResourceVersion, d.FinalStateUnknown, initial)
			}
			return nil
		})
	}
	fmt.Println("synced:", f.HasSynced())
	// Output:
	// default/web Replaced rv=12 finalStateUnknown=false initial=true
	// default/old Deleted rv=7 finalStateUnknown=true initial=true
	// synced: true
}

// Deltas of one key pile up until it is popped, and come out in order.
func ExampleFIFO_Pop() {
	f := deltafifo.New[*corev1.Pod]()
	_ = f.Add(newPod("web", "1"))
	_ = f.Add(newPod("db", "2"))
	_ = f.Update(newPod("web", "3"))
	f.Close() // Pop drains what is queued, then reports ErrClosed

	for {
		err := f.Pop(context.Background(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], _ bool) error {
			fmt.Print(key, ":")
			for _, d := range deltas {
				fmt.Print(" ", d.Type, "@", d.Object.ResourceVersion)
			}
			fmt.Println()
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// default/web: Added@1 Updated@3
	// default/db: Added@2
	// deltafifo: queue is closed
}

// A transform runs once per object as it enters the queue; here it drops
// managedFields, which informers rarely need, to save memory.
func ExampleWithTransform() {
	f := deltafifo.New(deltafifo.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
		p = p.DeepCopy()
		p.ManagedFields = nil
		return p, nil
	}))
	p := newPod("web", "1")
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	_ = f.Add(p)

	deltas, _ := f.GetByKey("default/web")
	fmt.Println(len(deltas[0].Object.ManagedFields))
	// Output: 0
}
