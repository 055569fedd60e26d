package indexer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labelValuesFunc indexes a pod by the comma-separated values of its
// label, and fails on the value FAIL.
func labelValuesFunc(label string) IndexFunc[*corev1.Pod] {
	return func(p *corev1.Pod) ([]string, error) {
		v := p.Labels[label]
		if v == "" {
			return nil, nil
		}
		if v == "FAIL" {
			return nil, errors.New("fail")
		}
		if rand.IntN(16) == 0 {
			runtime.Gosched() // widen the window between computing and storing
		}
		return strings.Split(v, ","), nil
	}
}

// checkIndexes checks that nothing is pending, and that every stored object
// is indexed under exactly the values its index functions give now, and
// the indexes hold nothing else.
func checkIndexes(t *testing.T, x *Indexer[*corev1.Pod], funcs map[string]IndexFunc[*corev1.Pod]) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.s
	if x.pending != nil {
		t.Fatalf("pending left")
	}
	if x.prep != s.indexes {
		t.Fatalf("prep != installed")
	}
	checkInvariants(t, s)
	for i, name := range s.indexes.names {
		f := funcs[name]
		if f == nil {
			t.Fatalf("index %s installed but unknown to the test", name)
		}
		want := map[string]map[string]bool{}
		for key, e := range s.items {
			vs, err := f(e.obj)
			if err != nil {
				t.Fatalf("stored object %s fails index %s", key, name)
			}
			ev := slices.Clone(e.values[i])
			slices.Sort(ev)
			vs = slices.Clone(vs)
			slices.Sort(vs)
			if !slices.Equal(ev, vs) {
				t.Fatalf("index %s key %s: entry values %v, function gives %v", name, key, e.values[i], vs)
			}
			for _, v := range vs {
				if want[v] == nil {
					want[v] = map[string]bool{}
				}
				want[v][key] = true
			}
		}
		if len(want) != len(s.values[i]) {
			t.Fatalf("index %s: %d values, want %d", name, len(s.values[i]), len(want))
		}
		for v, keys := range s.values[i] {
			if len(keys) != len(want[v]) {
				t.Fatalf("index %s value %s: %d keys want %d", name, v, len(keys), len(want[v]))
			}
			for k := range keys {
				if !want[v][k] {
					t.Fatalf("index %s value %s: extra key %s", name, v, k)
				}
			}
		}
	}
}

// AddIndexers from two goroutines, some of them failing, while three
// others Add, Prepare and Commit, Delete, Replace (big lists too) and
// delete everything (which compacts): the indexes end as if every object
// had been stored with every installed index from the start. Four
// rounds of interleavings; run with -race and -count to see more.
func TestAddIndexersUnderConcurrentWrites(t *testing.T) {
	for round := range 4 {
		addIndexersRound(t, round)
	}
}

func addIndexersRound(t *testing.T, round int) {
	funcs := map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]}
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
	const nKeys = 40
	labels := []string{"a", "b", "c", "d", "e", "f"}
	mk := func(r *rand.Rand, i int) *corev1.Pod {
		l := map[string]string{}
		for _, k := range labels {
			switch r.IntN(4) {
			case 0:
			case 1:
				l[k] = fmt.Sprint("v", r.IntN(3))
			case 2:
				l[k] = fmt.Sprint("v", r.IntN(3), ",w", r.IntN(2))
			case 3:
				l[k] = "v0,v0" // duplicate values
			}
		}
		if r.IntN(8) == 0 {
			l["bad"] = "FAIL"
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("ns", i%3), Name: fmt.Sprint("p", i), Labels: l}}
	}
	var stop atomic.Bool
	var ops atomic.Int64       // writes made
	waitOps := func(n int64) { // lets the writers make n more
		for target := ops.Load() + n; ops.Load() < target; {
			runtime.Gosched()
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(round), uint64(g)))
			for !stop.Load() {
				ops.Add(1)
				i := r.IntN(nKeys)
				switch op := r.IntN(20); {
				case op < 10:
					_ = x.Add(mk(r, i))
				case op < 12:
					w, err := x.Prepare(mk(r, i))
					if err == nil {
						runtime.Gosched()
						for !x.Commit(w) {
							w, err = x.Prepare(w.obj)
							if err != nil {
								break
							}
						}
					}
				case op < 17:
					_ = x.Delete(mk(r, i))
				case op < 19:
					n := r.IntN(nKeys)
					if r.IntN(3) == 0 {
						n = 1000 // big: compaction after deletes
					}
					list := make([]*corev1.Pod, 0, n)
					for j := 0; j < n; j++ {
						list = append(list, mk(r, r.IntN(max(n, nKeys))))
					}
					_ = x.Replace(list, "")
				default:
					// shrink to trigger compaction
					for _, k := range x.ListKeys() {
						ns, name, _ := SplitMetaNamespaceKey(k)
						_ = x.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
					}
				}
			}
		})
	}
	// AddIndexers from two goroutines.
	var fmu sync.Mutex
	var added sync.WaitGroup
	for g := 0; g < 2; g++ {
		added.Go(func() {
			waitOps(int64(50 * (g + 1)))
			for j := g; j < len(labels); j += 2 {
				name := "by-" + labels[j]
				f := labelValuesFunc(labels[j])
				err := x.AddIndexers(Indexers[*corev1.Pod]{name: f})
				if err == nil {
					fmu.Lock()
					funcs[name] = f
					fmu.Unlock()
				}
				// a failing one
				bad := labelValuesFunc("bad")
				if err := x.AddIndexers(Indexers[*corev1.Pod]{"bad-" + labels[j]: bad}); err == nil {
					fmu.Lock()
					funcs["bad-"+labels[j]] = bad
					fmu.Unlock()
				}
				runtime.Gosched()
			}
		})
	}
	added.Wait()
	waitOps(200)
	stop.Store(true)
	wg.Wait()
	// The "bad" indexes may have been installed (if no bad object was stored then).
	checkIndexes(t, x, funcs)
	for name := range funcs {
		if !strings.HasPrefix(name, "by-") && !strings.HasPrefix(name, "bad-") && name != NamespaceIndex {
			t.Fatal(name)
		}
	}
}
