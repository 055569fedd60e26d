package demo

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
)

// The churn keeps each set near its target size, and its list of the
// objects that exist matches the simulator's: every object it lists
// exists, and it lists every object.
func TestChurnKeepsItsSetsTrue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := apisim.New(apisim.WithResources(apisim.Pods(), WidgetResource()))
		defer sim.Close()
		nss := []string{"a", "b", "c"}
		var sets []*liveSet
		for _, w := range []Workload{Pods(), Widgets()} {
			set := &liveSet{w: w, target: 30, next: 30}
			r := rand.New(rand.NewPCG(3, 4))
			if err := sim.Populate(w.Resource, 30, nss, func(ns string, i int) runtime.Object {
				set.add(ns, objectName(i))
				return w.initial(ns, objectName(i), r)
			}); err != nil {
				t.Fatal(err)
			}
			sets = append(sets, set)
		}

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			churn(ctx, sim, sets, nss, 10, rand.New(rand.NewPCG(1, 2)))
		}()
		time.Sleep(time.Minute) // in the bubble's clock: 600 writes to each set
		cancel()
		<-done

		for _, set := range sets {
			n, err := sim.Len(set.w.Resource)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.keys) != n || n < 27 || n > 33 {
				t.Errorf("%s: the churn lists %d, the simulator has %d; want both near 30",
					set.w.Name, len(set.keys), n)
			}
			for i, k := range set.keys {
				if set.index[k] != i {
					t.Errorf("%s: %v at %d, indexed at %d", set.w.Name, k, i, set.index[k])
				}
				if err := set.w.update(sim, k.namespace, k.name, rand.New(rand.NewPCG(5, 6))); err != nil {
					t.Errorf("%s: %v is listed but cannot be updated: %v", set.w.Name, k, err)
				}
			}
		}
	})
}
