package deltafifo_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// BenchmarkFIFOAddPop measures one Add followed by one Pop of that key.
func BenchmarkFIFOAddPop(b *testing.B) {
	f := deltafifo.New[*corev1.Pod]()
	pods := make([]*corev1.Pod, 1024)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i), "1")
	}
	ctx := context.Background()
	process := func(string, []deltafifo.Delta[*corev1.Pod], bool) error { return nil }
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := f.Add(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
		if err := f.Pop(ctx, process); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkFIFOReplace measures a Replace of 10k objects into a FIFO whose
// consumer knows all of them, then popping every key.
func BenchmarkFIFOReplace(b *testing.B) {
	const n = 10_000
	pods := make([]*corev1.Pod, n)
	k := mapKnown{}
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i), "1")
		k["ns/"+pods[i].Name] = pods[i]
	}
	ctx := context.Background()
	process := func(string, []deltafifo.Delta[*corev1.Pod], bool) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		f := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](k))
		if err := f.Replace(pods, "1"); err != nil {
			b.Fatal(err)
		}
		for f.Len() > 0 {
			if err := f.Pop(ctx, process); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// mapKnown is an unsorted, unlocked KnownObjects, cheaper than known.
type mapKnown map[string]*corev1.Pod

func (m mapKnown) GetByKey(key string) (*corev1.Pod, bool) { p, ok := m[key]; return p, ok }

func (m mapKnown) ListKeys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
