package demo

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/listwatch/listwatch/internal/apisim"
)

// liveSet is the objects of one workload that exist in the simulator. The
// churn goroutine is the only writer, so it can keep this list itself.
type liveSet struct {
	w      Workload
	target int // the size the churn keeps the set near
	next   int // the number of the next object created

	keys  []objectKey
	index map[objectKey]int // position in keys
}

type objectKey struct{ namespace, name string }

func (s *liveSet) add(namespace, name string) {
	if s.index == nil {
		s.index = map[objectKey]int{}
	}
	k := objectKey{namespace, name}
	s.index[k] = len(s.keys)
	s.keys = append(s.keys, k)
}

func (s *liveSet) remove(k objectKey) {
	i := s.index[k]
	last := s.keys[len(s.keys)-1]
	s.keys[i], s.index[last] = last, i
	s.keys = s.keys[:len(s.keys)-1]
	delete(s.index, k)
}

// churn writes to the simulator at rate writes per second to each set,
// until ctx ends: half updates, a quarter creates, a quarter deletes, which
// keeps every set near its target size. A write that fails (the simulator
// closing) is skipped.
func churn(ctx context.Context, sim *apisim.Server, sets []*liveSet, namespaces []string, rate float64, r *rand.Rand) {
	t := time.NewTicker(time.Duration(float64(time.Second) / (rate * float64(len(sets)))))
	defer t.Stop()
	for turn := 0; ; turn++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		set := sets[turn%len(sets)]
		op := r.IntN(4)
		switch {
		case len(set.keys) < set.target*9/10:
			op = 0
		case len(set.keys) > set.target*11/10:
			op = 1
		}
		switch {
		case op == 0 || len(set.keys) == 0: // create
			ns, name := namespaces[r.IntN(len(namespaces))], objectName(set.next)
			set.next++
			if set.w.create(sim, ns, name, r) == nil {
				set.add(ns, name)
			}
		case op == 1: // delete
			k := set.keys[r.IntN(len(set.keys))]
			_ = set.w.remove(sim, k.namespace, k.name)
			set.remove(k)
		default: // update
			k := set.keys[r.IntN(len(set.keys))]
			_ = set.w.update(sim, k.namespace, k.name, r)
		}
	}
}
