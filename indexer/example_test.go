package indexer_test

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
)

func newPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// The namespace index lists the objects of one namespace without scanning
// the whole cache.
func ExampleIndexer_ByIndex() {
	pods := indexer.New(indexer.Indexers[*corev1.Pod]{
		indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
	})
	_ = pods.Add(newPod("kube-system", "coredns", ""))
	_ = pods.Add(newPod("kube-system", "kube-proxy", ""))
	_ = pods.Add(newPod("default", "web", ""))

	inSystem, _ := pods.ByIndex(indexer.NamespaceIndex, "kube-system")
	var names []string
	for _, p := range inSystem {
		names = append(names, p.Name)
	}
	slices.Sort(names) // ByIndex has no order
	fmt.Println(names)
	// Output: [coredns kube-proxy]
}

// An index can be added to a store that already holds objects, and follows
// them as they change.
func ExampleIndexer_AddIndexers() {
	pods := indexer.New[*corev1.Pod](nil)
	_ = pods.Add(newPod("default", "web", "node-a"))

	_ = pods.AddIndexers(indexer.Indexers[*corev1.Pod]{
		"node": func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
	})
	onA, _ := pods.IndexKeys("node", "node-a")
	fmt.Println("on node-a:", onA)

	_ = pods.Update(newPod("default", "web", "node-b")) // rescheduled
	onA, _ = pods.IndexKeys("node", "node-a")
	onB, _ := pods.IndexKeys("node", "node-b")
	fmt.Println("on node-a:", onA, "on node-b:", onB)
	// Output:
	// on node-a: [default/web]
	// on node-a: [] on node-b: [default/web]
}

// A failing index function rejects the write; the store is unchanged.
func ExampleIndexer_Add_indexError() {
	pods := indexer.New(indexer.Indexers[*corev1.Pod]{
		"node": func(p *corev1.Pod) ([]string, error) {
			if p.Spec.NodeName == "" {
				return nil, fmt.Errorf("pod is not scheduled")
			}
			return []string{p.Spec.NodeName}, nil
		},
	})
	err := pods.Add(newPod("default", "pending", ""))
	fmt.Println(err)
	fmt.Println("stored:", pods.Len())
	// Output:
	// indexer: Add: index "node" of default/pending: pod is not scheduled
	// stored: 0
}
