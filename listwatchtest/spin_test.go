package listwatchtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/reflector"
)

// Thousands of informers started at one instant on one Source, each
// listing and watching once, are no client that asks again without
// waiting: the Source's guard against that counts per client. It counted
// per Source, and panicked at the 10,001st request.
func TestManyInformersStartedAtOnceOnOneSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		if _, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		const n = 5_001 // 10,002 requests
		infs := make([]*informer.SharedIndexInformer[*corev1.Pod], n)
		for i := range infs {
			infs[i] = informer.New[*corev1.Pod](src, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
			wg.Go(func() { _ = infs[i].Run(ctx) })
		}
		synctest.Wait()
		for i, inf := range infs {
			if !inf.HasSynced() {
				t.Fatalf("informer %d has not synced", i)
			}
		}
		if lists, watches := src.Requests(); lists != n || watches != n {
			t.Errorf("%d lists and %d watches, want %d of each", lists, watches, n)
		}
		cancel()
		wg.Wait()
	})
}

// A test that ends the watch after every write (a soak or fault loop) makes
// the informer watch again at once, at one instant of a synctest bubble's
// clock, more than 10,000 times: it follows the Source's changes and is
// no spin. The Source's guard panicked at the 10,001st watch, blaming
// the informer for a loop it was not in (found by a review helper).
func TestWatchesEndedAfterEveryWriteAreNoSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		inf := informer.New[*corev1.Pod](src)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { _ = inf.Run(ctx) })
		defer wg.Wait()
		defer cancel()
		synctest.Wait()
		const n = 10_050
		for i := range n {
			if _, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}); err != nil {
				t.Fatal(err)
			}
			src.CloseWatches()
			synctest.Wait()
		}
		if got := len(inf.Indexer().List()); got != n {
			t.Errorf("the cache holds %d pods, want %d", got, n)
		}
	})
}
