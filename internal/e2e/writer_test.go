package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// writer changes objects on a server for one scenario, remembering the
// last state of each so that updates carry its resourceVersion. Every
// object it creates has the label app=e2e and a tier label. It is used from
// one goroutine.
type writer struct {
	t    testing.TB
	srv  server
	objs map[string]*unstructured.Unstructured // "kind ns/name" → last state
	gen  int
	n    int // writes so far
}

func newWriter(t testing.TB, srv server) *writer {
	return &writer{t: t, srv: srv, objs: map[string]*unstructured.Unstructured{}}
}

func objID(k kind, ns, name string) string { return k.name + " " + ns + "/" + name }

// create creates an object of k in tier ("a" or "b").
func (w *writer) create(k kind, ns, name, tier string) *unstructured.Unstructured {
	w.t.Helper()
	obj := w.srv.create(w.t, k, k.object(ns, name, map[string]string{"app": "e2e", "tier": tier}))
	w.objs[objID(k, ns, name)] = obj
	w.n++
	return obj
}

// createN creates objects o0..o{n-1} of k in ns, alternating tiers a and b.
func (w *writer) createN(k kind, ns string, n int) {
	w.t.Helper()
	for i := range n {
		w.create(k, ns, fmt.Sprint("o", i), tierOf(i))
	}
}

func tierOf(i int) string { return string(rune('a' + i%2)) }

// touch changes an object's "gen" label: a new resourceVersion.
func (w *writer) touch(k kind, ns, name string) *unstructured.Unstructured {
	w.t.Helper()
	return w.relabel(k, ns, name, "")
}

// relabel moves an object to tier ("" keeps its tier) and bumps its "gen"
// label.
func (w *writer) relabel(k kind, ns, name, tier string) *unstructured.Unstructured {
	w.t.Helper()
	id := objID(k, ns, name)
	obj, ok := w.objs[id]
	if !ok {
		w.t.Fatalf("writer: %s does not exist", id)
	}
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	w.gen++
	labels["gen"] = fmt.Sprint(w.gen)
	if tier != "" {
		labels["tier"] = tier
	}
	obj.SetLabels(labels)
	obj = w.srv.update(w.t, k, obj)
	w.objs[id] = obj
	w.n++
	return obj
}

// remove deletes an object.
func (w *writer) remove(k kind, ns, name string) {
	w.t.Helper()
	w.srv.remove(w.t, k, ns, name)
	delete(w.objs, objID(k, ns, name))
	w.n++
}

// exists reports whether the writer's object exists.
func (w *writer) exists(k kind, ns, name string) bool {
	_, ok := w.objs[objID(k, ns, name)]
	return ok
}

// names returns the names of the existing objects of k in ns, sorted.
func (w *writer) names(k kind, ns string) []string {
	prefix := k.name + " " + ns + "/"
	var out []string
	for id := range w.objs {
		if len(id) > len(prefix) && id[:len(prefix)] == prefix {
			out = append(out, id[len(prefix):])
		}
	}
	slices.Sort(out)
	return out
}

// churn makes one round of mixed writes to k in ns, chosen by rnd: three
// creates, four updates, two tier moves, three deletes, and one object
// deleted earlier created again under its old name (a new uid). round
// makes the new names unique.
func (w *writer) churn(rnd *rand.Rand, k kind, ns string, round int) []func() {
	pick := func() string {
		names := w.names(k, ns)
		if len(names) == 0 {
			return ""
		}
		return names[rnd.IntN(len(names))]
	}
	var ops []func()
	for i := range 3 {
		name := fmt.Sprintf("r%d-%d", round, i)
		ops = append(ops, func() { w.create(k, ns, name, tierOf(i)) })
	}
	for range 4 {
		ops = append(ops, func() {
			if name := pick(); name != "" {
				w.touch(k, ns, name)
			}
		})
	}
	for range 2 {
		ops = append(ops, func() {
			if name := pick(); name != "" {
				w.relabel(k, ns, name, tierOf(rnd.IntN(2)))
			}
		})
	}
	var gone []string
	for range 3 {
		ops = append(ops, func() {
			if name := pick(); name != "" {
				w.remove(k, ns, name)
				gone = append(gone, name)
			}
		})
	}
	ops = append(ops, func() {
		if len(gone) > 0 && !w.exists(k, ns, gone[0]) {
			w.create(k, ns, gone[0], "a")
		}
	})
	return ops
}
