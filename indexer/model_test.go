package indexer_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// TestIndexerMatchesModel runs random sequences of writes (Add, Update,
// Delete, Replace, Prepare and Commit, AddIndexers with writes made while
// it computes) against an Indexer and against a model that answers every
// query by scanning all its objects, and compares every query after every
// operation. A failure prints the operations, shrunk to those it needs, and
// a fuzz corpus entry: save it under testdata/fuzz/FuzzIndexerMatchesModel/
// and run `go test -run FuzzIndexerMatchesModel/<file> ./indexer` to replay
// it, or rerun the seed it names with -run 'TestIndexerMatchesModel/seed=N'.
func TestIndexerMatchesModel(t *testing.T) {
	for _, sc := range modelScenarios() {
		t.Run(sc.name, func(t *testing.T) { checkAgainstModel(t, encode(sc.initial, sc.ops)) })
	}
	for seed := range uint64(60) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x1d3))
			data := make([]byte, 2+rng.IntN(400))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			checkAgainstModel(t, data)
		})
	}
}

// FuzzIndexerMatchesModel is TestIndexerMatchesModel over fuzz input: each
// input decodes to the indexes to start with and a sequence of operations.
func FuzzIndexerMatchesModel(f *testing.F) {
	for _, sc := range modelScenarios() {
		f.Add(encode(sc.initial, sc.ops))
	}
	f.Fuzz(checkAgainstModel)
}

// A scenario is a sequence written by hand for what random sequences
// rarely make.
type scenario struct {
	name    string
	initial uint8 // the indexes of New, a mask as for selected
	ops     []op
}

func modelScenarios() []scenario {
	const (
		namespace = 1 << 0
		vals      = 1 << 2
		strict    = 1 << 3
		buf       = 1 << 4
		empty     = 1 << 5
		inUse     = 1 << 7 // AddIndexers keeps the names installed
		nilFunc   = 3 << 6 // AddIndexers adds the nil function too
	)
	x, y := podSpec{ns: 1, name: 0, node: 2, vals: []int{0, 0}}, podSpec{ns: 2, name: 1, node: 1}
	c := podSpec{name: 3, vals: []int{1}}           // cluster-scoped
	bad := podSpec{ns: 1, name: 1, fail: failError} // names 0 and 1 only while AddIndexers computes (decoder.pod)
	good := bad
	good.fail = failNot
	add := func(s podSpec) op { return op{kind: opAdd, obj: s} }
	del := func(s podSpec) op { return op{kind: opDelete, obj: s} }
	replace := func(list ...podSpec) op { return op{kind: opReplace, list: list} }
	prepare := func(slot int, s podSpec) op { return op{kind: opPrepare, slot: slot, obj: s} }
	commit := func(slot int) op { return op{kind: opCommit, slot: slot} }
	addIndexers := func(mask uint8, during ...op) op { return op{kind: opAddIndexers, add: mask, during: during} }
	return []scenario{
		{"stale Write committed last", namespace | vals, []op{
			prepare(0, x), add(y), {kind: opUpdate, obj: x.with(0, nil)}, commit(0), commit(0), del(y), del(y)}},
		{"Replace with a key twice, then empty", namespace | strict, []op{
			add(c), replace(x, y, x.with(1, []int{1, 2, 1})), replace(x, bad), replace()}},
		{"values duplicated, several, none", vals | buf | empty, []op{
			add(x), add(c), add(x.with(0, nil)), add(x.with(1, []int{1, 2, 1})), del(c), del(x)}},
		{"AddIndexers refused", namespace, []op{
			add(x), addIndexers(inUse | namespace | vals), addIndexers(nilFunc | vals), addIndexers(0), add(y)}},
		{"AddIndexers fails on a write made meanwhile", namespace, []op{
			add(x), addIndexers(strict, add(bad)), del(bad), addIndexers(strict)}},
		{"AddIndexers succeeds if that write is overwritten", namespace, []op{add(x), addIndexers(strict, add(bad), add(good))}},
		{"AddIndexers succeeds if that write is deleted", namespace, []op{add(x), addIndexers(strict, add(bad), del(bad))}},
		{"AddIndexers succeeds if that write is left out of a Replace", namespace, []op{add(x), addIndexers(strict, add(bad), replace(x, y))}},
		{"AddIndexers fails on a Replace made meanwhile", namespace, []op{add(x), addIndexers(strict, replace(y, bad))}},
		{"AddIndexers fails on a Write committed meanwhile", namespace, []op{
			add(x), addIndexers(strict, prepare(1, bad), commit(1))}},
		{"Writes prepared before, while and after AddIndexers", namespace, []op{
			add(x), prepare(0, y), addIndexers(strict|vals, prepare(1, bad), commit(0), prepare(2, y)),
			commit(1), commit(2), commit(0), prepare(3, bad), commit(3)}},
		{"Write prepared while AddIndexers fails", namespace, []op{
			add(bad), addIndexers(strict, prepare(1, y), add(x)), commit(1)}},
		// Stored: see model.commit.
		{"Write prepared before AddIndexers fails", namespace, []op{
			add(bad), prepare(0, y), addIndexers(strict), commit(0)}},
	}
}

// checkAgainstModel runs the operations data decodes to and fails with
// them, shrunk, if the Indexer and the model differ.
func checkAgainstModel(t *testing.T, data []byte) {
	initial, ops := decode(data)
	fail := runModel(initial, ops)
	if fail == nil {
		return
	}
	ops, fail = shrink(initial, ops, fail)
	t.Fatalf("the indexer differs from the model after operation %s: %v\nindexes at New: %s\n%s\nreplay: save as testdata/fuzz/FuzzIndexerMatchesModel/<name>\ngo test fuzz v1\n[]byte(%q)",
		fail.at, fail.err, strings.Join(names(selected(modelIndexes(), initial)), " "), formatOps("", ops), encode(initial, ops))
}

// A failure is the first difference between the Indexer and the model.
type failure struct {
	at  string // the label of the operation after which it showed
	err error
}

// runModel runs ops on a new Indexer and on the model and returns their
// first difference, or nil.
func runModel(initial uint8, ops []op) *failure {
	pool := modelIndexes()
	specs := selected(pool, initial)
	indexers := indexer.Indexers[*corev1.Pod]{}
	for _, s := range specs {
		indexers[s.name] = s.fn
	}
	r := &run{x: indexer.New(indexers), m: newModel(specs), pool: pool}
	r.step("0", r.check)
	for i, o := range ops {
		if r.fail != nil {
			break
		}
		r.op(fmt.Sprint(i+1), o)
	}
	return r.fail
}

// shrink removes operations, Replace items and operations made while
// AddIndexers computes, one at a time, as long as the sequence still fails.
func shrink(initial uint8, ops []op, fail *failure) ([]op, *failure) {
	for budget := 3000; budget > 0; {
		shrunk := false
		for _, c := range smaller(ops) {
			if budget--; budget <= 0 {
				break
			}
			if f := runModel(initial, c); f != nil {
				ops, fail, shrunk = c, f, true
				break
			}
		}
		if !shrunk {
			break
		}
	}
	return ops, fail
}

// smaller returns the sequences one removal away from ops.
func smaller(ops []op) [][]op {
	var out [][]op
	for i, o := range ops {
		out = append(out, slices.Delete(slices.Clone(ops), i, i+1))
		for j := range o.list {
			c := slices.Clone(ops)
			c[i].list = slices.Delete(slices.Clone(o.list), j, j+1)
			out = append(out, c)
		}
		for _, d := range smaller(o.during) {
			c := slices.Clone(ops)
			c[i].during = d
			out = append(out, c)
		}
	}
	return out
}

// A run is one sequence applied to an Indexer and to the model.
type run struct {
	x     *podIndexer
	m     *model
	pool  []indexSpec
	slots [4]prepared
	fail  *failure
}

// prepared is a Write in a slot, with what the model knows of it.
type prepared struct {
	w   indexer.Write[*corev1.Pod]
	obj *corev1.Pod
	ok  bool // Prepare succeeded: not the zero Write
	gen int  // the model's index set generation it was prepared with
	// addFailed: prepared while AddIndexers computed, and one of its index
	// functions failed on obj.
	addFailed bool
}

// step runs f, which applies an operation or checks the state, and records
// its error or panic as the run's failure.
func (r *run) step(label string, f func() error) {
	if r.fail != nil {
		return
	}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return f()
	}()
	if err != nil {
		r.fail = &failure{at: label, err: err}
	}
}

// op applies o to the Indexer and the model, compares what they return,
// then compares their whole state.
func (r *run) op(label string, o op) {
	r.step(label, func() error {
		if err := r.apply(label, o); err != nil {
			return fmt.Errorf("%s: %w", o.kind, err)
		}
		return nil
	})
	r.step(label, r.check)
}

func (r *run) apply(label string, o op) error {
	m, x := r.m, r.x
	switch o.kind {
	case opAdd, opUpdate:
		p := o.obj.pod(label)
		want := m.put(p)
		if o.kind == opUpdate {
			return want.match(x.Update(p))
		}
		return want.match(x.Add(p))
	case opDelete:
		return m.remove(o.obj.pod(label)).match(x.Delete(o.obj.pod(label)))
	case opReplace:
		list := make([]*corev1.Pod, len(o.list))
		for i, s := range o.list {
			list[i] = s.pod(fmt.Sprintf("%s[%d]", label, i))
		}
		return m.replace(list).match(x.Replace(list, label))
	case opPrepare:
		p := o.obj.pod(label)
		want, addFailed := m.prepare(p)
		w, err := x.Prepare(p)
		r.slots[o.slot] = prepared{w: w, obj: p, ok: want.kind == errNone, gen: m.prepGen(), addFailed: addFailed}
		if err := want.match(err); err != nil {
			return err
		}
		if want.kind == errNone && w.Key() != modelKey(p) {
			return fmt.Errorf("Write for key %q, want %q", w.Key(), modelKey(p))
		}
		return nil
	case opCommit:
		s := r.slots[o.slot]
		want := m.commit(s)
		if got := x.Commit(s.w); got != want {
			return fmt.Errorf("w%d of %s: %v, want %v", o.slot, describe(s.obj), got, want)
		}
		return nil
	default:
		return r.addIndexers(label, o)
	}
}

// addIndexers runs AddIndexers; the first of the added index functions, on
// its first call, which is AddIndexers' own on a stored object, runs the
// operations o.during. If AddIndexers does not compute (no object stored,
// or it refuses the indexes), they run after it.
func (r *run) addIndexers(label string, o op) error {
	m := r.m
	specs := selected(r.pool, o.add)
	if o.add>>7 == 0 { // only indexes not installed
		specs = slices.DeleteFunc(specs, func(s indexSpec) bool { return m.has(s.name) })
	}
	slices.SortFunc(specs, func(a, b indexSpec) int { return strings.Compare(a.name, b.name) })
	published := m.publish(specs)
	computes := published && len(m.objs) > 0
	snapshot := maps.Clone(m.objs)

	fired := false
	indexers := indexer.Indexers[*corev1.Pod]{}
	for i, s := range specs {
		fn := s.fn
		if i == 0 && fn != nil {
			inner := fn
			fn = func(p *corev1.Pod) ([]string, error) {
				if !fired {
					fired = true
					for j, d := range o.during {
						r.op(fmt.Sprintf("%s.%d", label, j+1), d)
					}
				}
				return inner(p)
			}
		}
		indexers[s.name] = fn
	}
	err := r.x.AddIndexers(indexers)
	called := fired
	fired = true // the writes below run the hooked function too: disarm it
	if r.fail != nil {
		return nil // an operation made meanwhile failed: it is reported
	}
	if called != computes {
		return fmt.Errorf("called the added index function on a stored object: %v, want %v", called, computes)
	}
	want := outcome{kind: errAny} // refused
	switch {
	case len(specs) == 0:
		want = outcome{}
	case published:
		want = m.install(snapshot)
	}
	if err := want.match(err); err != nil {
		return fmt.Errorf("%v: %w", names(specs), err)
	}
	if !computes {
		if err := r.check(); err != nil {
			return err
		}
		for j, d := range o.during {
			r.op(fmt.Sprintf("%s.%d", label, j+1), d)
		}
	}
	return nil
}

// check compares every query of the Indexer with the model's answer.
func (r *run) check() error {
	m, x := r.m, r.x
	if got, want := x.Len(), len(m.objs); got != want {
		return fmt.Errorf("Len: %d, want %d", got, want)
	}
	if err := sameObjects("List", x.List(), m.objs); err != nil {
		return err
	}
	if err := sameKeys("ListKeys", x.ListKeys(), m.objs); err != nil {
		return err
	}
	for ns := range specNamespaces {
		for name := range specNames {
			s := podSpec{ns: ns, name: name}
			probe := s.pod("probe")
			key := modelKey(probe)
			want, stored := m.objs[key]
			if got, ok := x.Get(probe); ok != stored || got != want {
				return fmt.Errorf("Get(%s): %s, %v; want %s, %v", s, describe(got), ok, describe(want), stored)
			}
			if key == "" {
				continue
			}
			if got, ok := x.GetByKey(key); ok != stored || got != want {
				return fmt.Errorf("GetByKey(%q): %s, %v; want %s, %v", key, describe(got), ok, describe(want), stored)
			}
		}
	}
	if got, ok := x.GetByKey(""); ok {
		return fmt.Errorf(`GetByKey(""): %s`, describe(got))
	}
	probes := []*corev1.Pod{
		podSpec{ns: 2, node: 1, vals: []int{0, 2}}.pod("probe"),
		podSpec{ns: 1, node: 2, fail: failError}.pod("probe"),
	}
	for _, p := range m.objs {
		probes = append(probes, p)
	}
	for _, s := range r.pool {
		if m.has(s.name) {
			if err := r.checkIndex(s, probes); err != nil {
				return err
			}
		} else if err := r.checkUnknownIndex(s.name); err != nil {
			return err
		}
	}
	return r.checkUnknownIndex("nope")
}

// checkIndex compares the queries of one installed index.
func (r *run) checkIndex(s indexSpec, probes []*corev1.Pod) error {
	m, x := r.m, r.x
	byValue := m.index(s)
	if got, want := slices.Sorted(slices.Values(x.ListIndexFuncValues(s.name))), slices.Sorted(maps.Keys(byValue)); !slices.Equal(got, want) {
		return fmt.Errorf("ListIndexFuncValues(%q): %q, want %q", s.name, got, want)
	}
	for _, v := range allValues {
		keys, err := x.IndexKeys(s.name, v)
		if err != nil {
			return fmt.Errorf("IndexKeys(%q, %q): %w", s.name, v, err)
		}
		if err := sameKeys(fmt.Sprintf("IndexKeys(%q, %q)", s.name, v), keys, byValue[v]); err != nil {
			return err
		}
		objs, err := x.ByIndex(s.name, v)
		if err != nil {
			return fmt.Errorf("ByIndex(%q, %q): %w", s.name, v, err)
		}
		if err := sameObjects(fmt.Sprintf("ByIndex(%q, %q)", s.name, v), objs, byValue[v]); err != nil {
			return err
		}
	}
	for _, p := range probes {
		objs, err := x.Index(s.name, p)
		what := fmt.Sprintf("Index(%q, %s)", s.name, describe(p))
		values, failed := callIndex(s.fn, p)
		if failed != nil {
			if (outcome{kind: errIndexFunc}).match(err) != nil {
				return fmt.Errorf("%s: error %v, want the index function's: %v", what, err, failed)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		want := map[string]*corev1.Pod{}
		for _, v := range values {
			maps.Copy(want, byValue[v])
		}
		if err := sameObjects(what, objs, want); err != nil {
			return err
		}
	}
	return nil
}

// checkUnknownIndex checks that every query of an index name not installed
// fails as unknown.
func (r *run) checkUnknownIndex(name string) error {
	x := r.x
	if _, err := x.ByIndex(name, "x"); !errors.Is(err, indexer.ErrUnknownIndex) {
		return fmt.Errorf("ByIndex(%q) of an index not installed: %v, want ErrUnknownIndex", name, err)
	}
	if _, err := x.IndexKeys(name, "x"); !errors.Is(err, indexer.ErrUnknownIndex) {
		return fmt.Errorf("IndexKeys(%q) of an index not installed: %v, want ErrUnknownIndex", name, err)
	}
	if _, err := x.Index(name, podSpec{}.pod("probe")); !errors.Is(err, indexer.ErrUnknownIndex) {
		return fmt.Errorf("Index(%q) of an index not installed: %v, want ErrUnknownIndex", name, err)
	}
	if got := x.ListIndexFuncValues(name); got != nil {
		return fmt.Errorf("ListIndexFuncValues(%q) of an index not installed: %q, want nil", name, got)
	}
	return nil
}

// sameObjects compares objects returned by the Indexer with the model's:
// the same objects, each once, in any order.
func sameObjects(what string, got []*corev1.Pod, want map[string]*corev1.Pod) error {
	seen := map[string]bool{}
	for _, p := range got {
		if p == nil {
			return fmt.Errorf("%s: a nil object", what)
		}
		key := modelKey(p)
		if seen[key] {
			return fmt.Errorf("%s: %s twice", what, describe(p))
		}
		seen[key] = true
		if want[key] != p {
			return fmt.Errorf("%s: %s, want %s (all: %s, want %s)", what, describe(p), describe(want[key]), describeAll(got), describeMap(want))
		}
	}
	if len(seen) != len(want) {
		return fmt.Errorf("%s: %s, want %s", what, describeAll(got), describeMap(want))
	}
	return nil
}

func sameKeys(what string, got []string, want map[string]*corev1.Pod) error {
	if g, w := sortedSet(got), slices.Sorted(maps.Keys(want)); len(got) != len(w) || !slices.Equal(g, w) {
		return fmt.Errorf("%s: %q, want %q", what, got, w)
	}
	return nil
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func describe(p *corev1.Pod) string {
	if p == nil {
		return "nil"
	}
	return modelKey(p) + "@" + p.ResourceVersion
}

func describeAll(ps []*corev1.Pod) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = describe(p)
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

func describeMap(m map[string]*corev1.Pod) string {
	return describeAll(slices.Collect(maps.Values(m)))
}
