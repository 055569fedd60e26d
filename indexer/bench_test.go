package indexer_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// benchPods returns n pods spread over namespaces of 100 pods each.
func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("ns", i/100), fmt.Sprint("p", i), "1", fmt.Sprint("node", i%50))
	}
	return pods
}

func benchIndexers() indexer.Indexers[*corev1.Pod] {
	return indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]}
}

// BenchmarkIndexerAdd measures Add with the namespace index, cycling over
// 10k keys: the first pass inserts, later passes replace.
func BenchmarkIndexerAdd(b *testing.B) {
	pods := benchPods(10_000)
	x := indexer.New(benchIndexers())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := x.Add(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkIndexerByIndexConcurrent measures ByIndex on a namespace of 100
// pods (out of 10k) from parallel readers while one writer keeps updating
// objects.
func BenchmarkIndexerByIndexConcurrent(b *testing.B) {
	pods := benchPods(10_000)
	x := indexer.New(benchIndexers())
	if err := x.Replace(pods, "1"); err != nil {
		b.Fatal(err)
	}

	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := x.Update(pods[i%len(pods)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	defer writer.Wait()
	defer close(stop)

	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			objs, err := x.ByIndex(indexer.NamespaceIndex, fmt.Sprint("ns", i%100))
			if err != nil || len(objs) != 100 {
				b.Errorf("ByIndex: %d objects, %v", len(objs), err)
				return
			}
			i++
		}
	})
}
