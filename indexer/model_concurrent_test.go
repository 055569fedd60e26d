package indexer_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// TestIndexerConcurrentMatchesModel runs writers on disjoint keys, readers
// and an AddIndexers at once, under -race. What must hold at any moment is
// checked as it happens: a writer reads back what it wrote, and finds it in
// the indexes, since no one else writes its keys; a reader never sees a
// key go back to an older write, nor an object under an index value it
// lacks, nor anything twice. At the end the Indexer must equal the model
// made of what each writer stored, with the added index if AddIndexers
// succeeded.
func TestIndexerConcurrentMatchesModel(t *testing.T) {
	const writers, readers, opsPerWriter = 3, 2, 300
	pool := modelIndexes() // buf is not safe for concurrent use: not used
	initial := []indexSpec{pool[0], pool[1], pool[2]}
	added := pool[3] // strict: fails on some objects writer 0 writes
	indexers := indexer.Indexers[*corev1.Pod]{}
	for _, s := range initial {
		indexers[s.name] = s.fn
	}
	x := indexer.New(indexers)

	var (
		wg, half sync.WaitGroup
		mu       sync.Mutex
		stored   = map[string]*corev1.Pod{} // what the writers stored, when they are done
		errs     = make(chan error, writers+readers+1)
		done     = make(chan struct{})
		addErr   error
	)
	half.Add(writers)
	for w := range writers {
		wg.Go(func() {
			var halfway sync.Once
			defer halfway.Do(half.Done) // if the writer stops early
			mine, err := write(x, w, opsPerWriter, func() { halfway.Do(half.Done) })
			if err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for k, p := range mine {
				stored[k] = p
			}
		})
	}
	wg.Go(func() {
		half.Wait() // AddIndexers races with the second half of the writes
		addErr = x.AddIndexers(indexer.Indexers[*corev1.Pod]{added.name: added.fn})
	})
	var rg sync.WaitGroup
	for range readers {
		rg.Go(func() {
			if err := read(x, append(slices.Clone(initial), added), done); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	m := newModel(initial)
	m.objs = stored
	if addErr == nil {
		m.installed = append(m.installed, added)
	} else if (outcome{kind: errIndexFunc}).match(addErr) != nil {
		t.Fatalf("AddIndexers: %v, want the index function's error", addErr)
	}
	r := &run{x: x, m: m, pool: pool}
	r.step("the end", r.check)
	if r.fail != nil {
		t.Fatalf("AddIndexers returned %v; at %s the indexer differs from the writers' model: %v", addErr, r.fail.at, r.fail.err)
	}
}

// write runs n random writes of writer w's keys and returns what it
// stored, checking after each write that it reads it back. It calls half
// after n/2 writes.
func write(x *podIndexer, w, n int, half func()) (map[string]*corev1.Pod, error) {
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	mine := map[string]*corev1.Pod{}
	for i := range n {
		if i == n/2 {
			half()
		}
		d := decoder{data: make([]byte, 8)}
		for j := range d.data {
			d.data[j] = byte(rng.Uint32())
		}
		s := d.pod(false)
		s.name %= 4 // valid names only
		if w > 0 || i < n/2 {
			// Objects the added index fails on only from writer 0, after
			// AddIndexers may have begun: it can succeed or fail.
			s.fail = failNot
		}
		p := s.pod(strconv.Itoa(i))
		p.Name = fmt.Sprintf("w%d-%s", w, p.Name)
		key := modelKey(p)
		var err error
		deletes := rng.IntN(4) == 0
		switch {
		case deletes:
			err = x.Delete(p)
		case rng.IntN(3) == 0: // as the informer does: prepare again while Commit refuses
			for {
				var wr indexer.Write[*corev1.Pod]
				if wr, err = x.Prepare(p); err != nil || x.Commit(wr) {
					break
				}
			}
		default:
			err = x.Update(p)
		}
		if err != nil {
			if (outcome{kind: errIndexFunc}).match(err) != nil {
				return nil, fmt.Errorf("write %d of %s: %w", i, describe(p), err)
			}
			continue // the added index fails on p: nothing changed
		}
		if deletes {
			delete(mine, key)
		} else {
			mine[key] = p
		}
		want, stored := mine[key]
		if got, ok := x.GetByKey(key); got != want || ok != stored {
			return nil, fmt.Errorf("write %d: GetByKey(%q) = %s, %v after it, want %s, %v", i, key, describe(got), ok, describe(want), stored)
		}
		keys, err := x.IndexKeys(indexer.NamespaceIndex, p.Namespace)
		if err != nil {
			return nil, err
		}
		if slices.Contains(keys, key) != stored {
			return nil, fmt.Errorf("write %d: IndexKeys(namespace, %q) = %q after it, stored: %v", i, p.Namespace, keys, stored)
		}
	}
	return mine, nil
}

// read checks what must hold at any moment, until done is closed.
func read(x *podIndexer, specs []indexSpec, done <-chan struct{}) error {
	newest := map[string]int{} // the newest write of each key seen
	seen := func(what string, p *corev1.Pod) error {
		seq, _ := strconv.Atoi(p.ResourceVersion)
		key := modelKey(p)
		if last, ok := newest[key]; ok && seq < last {
			return fmt.Errorf("%s: %s after write %d of it", what, describe(p), last)
		}
		newest[key] = seq
		return nil
	}
	for {
		select {
		case <-done:
			return nil
		default:
		}
		list := x.List()
		if err := sameObjects("List", list, keyed(list)); err != nil {
			return err
		}
		for _, p := range list {
			if err := seen("List", p); err != nil {
				return err
			}
			if got, ok := x.GetByKey(modelKey(p)); ok {
				if err := seen("GetByKey", got); err != nil {
					return err
				}
			}
		}
		for _, s := range specs {
			for _, v := range allValues {
				objs, err := x.ByIndex(s.name, v)
				if errors.Is(err, indexer.ErrUnknownIndex) && s.name == "strict" {
					continue // not added yet
				}
				if err != nil {
					return fmt.Errorf("ByIndex(%q, %q): %w", s.name, v, err)
				}
				what := fmt.Sprintf("ByIndex(%q, %q)", s.name, v)
				if err := sameObjects(what, objs, keyed(objs)); err != nil {
					return err
				}
				for _, p := range objs {
					if values, _ := callIndex(s.fn, p); !slices.Contains(values, v) {
						return fmt.Errorf("%s: %s, whose values are %q", what, describe(p), values)
					}
					if err := seen(what, p); err != nil {
						return err
					}
				}
			}
			if values := x.ListIndexFuncValues(s.name); len(sortedSet(values)) != len(values) {
				return fmt.Errorf("ListIndexFuncValues(%q): %q", s.name, values)
			}
		}
	}
}

// keyed maps objects by key, the later of two with a key winning.
func keyed(objs []*corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, p := range objs {
		out[modelKey(p)] = p
	}
	return out
}
