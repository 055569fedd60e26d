package share_test

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/share"
)

// Two pods of one ReplicaSet, decoded separately, hold the same labels and
// the same tolerations. After Share they hold one copy of each; the parts
// that differ stay their own.
func Example() {
	newPod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeName:    node,
				Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
			},
		}
	}
	a, b := newPod("web-1", "node-1"), newPod("web-2", "node-2")

	t := share.New(share.DefaultSlots)
	share.Share(t, a)
	share.Share(t, b)

	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	fmt.Println("one labels map:", same(a.Labels, b.Labels))
	fmt.Println("one tolerations array:", same(a.Spec.Tolerations, b.Spec.Tolerations))
	fmt.Println(a.Name, a.Spec.NodeName, b.Name, b.Spec.NodeName)
	// Output:
	// one labels map: true
	// one tolerations array: true
	// web-1 node-1 web-2 node-2
}
