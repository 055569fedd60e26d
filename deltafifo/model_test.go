package deltafifo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// TestFIFOMatchesModel runs random sequences of Add, Update, Delete,
// Replace, ReplaceKeeping, Resync, Pop and Close on a FIFO and on
// fifoModel, a model of its documented semantics, and checks that they
// agree: after every call, the queue (Len, ListKeys, GetByKey, HasSynced
// and Synced); at every Pop, the batch handed out (key, deltas with their
// objects, isInInitialList) and the error returned. The consumer applies
// each batch to a cache, the FIFO's known objects, as an informer does,
// sometimes only after other calls made from inside process while the key
// is being processed (another Pop among them: two batches in flight), and
// sometimes fails instead. Each sequence ends with a relist and a drain,
// after which the cache must hold the list.
//
// A failure prints the calls of the sequence, one a line, those made inside
// process indented under their Pop. Replay one with
//
//	go test -run 'TestFIFOMatchesModel/seed=N$' ./deltafifo
func TestFIFOMatchesModel(t *testing.T) {
	for seed := range uint64(250) {
		ops := 60
		if seed%10 == 9 {
			ops = 400 // long enough for the queue to wrap its slice
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runModel(t, &seededChoices{rand.New(rand.NewPCG(seed, 0)), ops})
		})
	}
}

// FuzzFIFOMatchesModel is TestFIFOMatchesModel with each choice read from a
// byte of the fuzzer's input. Run it with
//
//	go test -run '^$' -fuzz FuzzFIFOMatchesModel -parallel 1 ./deltafifo
//
// A failing input is saved under testdata/fuzz/FuzzFIFOMatchesModel; go test
// then replays it, and -run 'FuzzFIFOMatchesModel/NAME' replays it alone.
func FuzzFIFOMatchesModel(f *testing.F) {
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 1))
		data := make([]byte, 300)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, &byteChoices{data})
	})
}

// choices are where a run's random decisions come from.
type choices interface {
	// intn returns a number in [0, n).
	intn(n int) int
	// more reports whether to run another operation at the top level.
	more() bool
}

// seededChoices draws from r, for ops operations.
type seededChoices struct {
	r   *rand.Rand
	ops int
}

func (c *seededChoices) intn(n int) int { return c.r.IntN(n) }
func (c *seededChoices) more() bool     { c.ops--; return c.ops >= 0 }

// byteChoices reads each choice from a byte of data, until there are none:
// every choice is then 0, which the interpreter makes the quiet one.
type byteChoices struct{ data []byte }

func (c *byteChoices) intn(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func (c *byteChoices) more() bool { return len(c.data) > 0 }

// modelKeys are the objects a run writes: few, so that keys meet often.
var modelKeys = []struct{ namespace, name string }{
	{"ns1", "a"}, {"ns1", "b"}, {"ns1", "c"}, {"ns2", "a"}, {"ns2", "b"},
}

// modelCache is what the consumer holds: it applies the batches it pops as
// an informer does its indexer, and is the FIFO's known objects. It is not
// safe for concurrent use; a run has a single goroutine.
type modelCache map[string]*corev1.Pod

func (c modelCache) GetByKey(key string) (*corev1.Pod, bool) { p, ok := c[key]; return p, ok }

func (c modelCache) ListKeys() []string {
	keys := make([]string, 0, len(c))
	for key := range c {
		keys = append(keys, key)
	}
	slices.Sort(keys) // deterministic, for the model to follow
	return keys
}

// apply stores the object of every delta, or forgets key for a Deleted.
func (c modelCache) apply(key string, deltas []podDelta) {
	for _, d := range deltas {
		if d.Type == deltafifo.Deleted {
			delete(c, key)
		} else {
			c[key] = d.Object
		}
	}
}

// modelRun drives a FIFO and its model through one sequence of calls and
// fails its test at the first difference between them.
type modelRun struct {
	t      testing.TB
	choose choices
	ctx    context.Context
	f      *fifo
	m      *fifoModel
	cache  modelCache
	keys   int      // the run writes the first keys of modelKeys
	rv     int      // the last resourceVersion given out
	log    []string // the calls so far, for a failure
	// processing holds the keys whose process call the current call is
	// made in, the innermost last.
	processing []string
}

func runModel(t *testing.T, choose choices) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a Pop that waits fails, not hangs
	defer cancel()
	r := &modelRun{t: t, choose: choose, ctx: ctx, m: &fifoModel{}, cache: modelCache{}, keys: len(modelKeys)}
	if choose.intn(4) == 3 {
		// Two keys: a key popped is soon queued again, and popped
		// again while its previous batch is still being processed.
		r.keys = 2
		r.logf("write only %s/%s and %s/%s", modelKeys[0].namespace, modelKeys[0].name, modelKeys[1].namespace, modelKeys[1].name)
	}
	if choose.intn(8) == 7 {
		r.logf("New() without known objects")
		r.f = deltafifo.New[*corev1.Pod]()
	} else {
		r.m.known = r.cache
		r.f = deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](r.cache))
	}
	for choose.more() {
		r.step()
	}
	r.converge()
}

// step makes one call, chosen at random, on the FIFO and the model.
func (r *modelRun) step() {
	pops := 16 // the weight of a Pop; inside two Pops there is no third
	switch len(r.processing) {
	case 1:
		pops = 10
	case 2:
		pops = 0
	}
	switch n := r.choose.intn(25 + pops); {
	case n < 4:
		r.write(deltafifo.Added)
	case n < 8:
		r.write(deltafifo.Updated)
	case n < 12:
		r.write(deltafifo.Deleted)
	case n < 15:
		r.replace(false)
	case n < 17:
		r.replace(true)
	case n < 20:
		r.resync()
	case n < 21:
		r.popDone()
	case n < 22:
		r.invalid()
	case n < 24:
		if r.choose.intn(8) == 7 {
			r.close()
		}
	case n < 25:
		if len(r.processing) == 0 {
			r.drain()
		}
	default:
		r.pop()
	}
}

func (r *modelRun) write(typ deltafifo.DeltaType) {
	p := r.newPod()
	if cached, ok := r.cache[podKey(p)]; ok && typ == deltafifo.Deleted && r.choose.intn(2) == 1 {
		p = cached // the state the consumer holds, not a newer one
	}
	var err error
	switch typ {
	case deltafifo.Added:
		r.logf("add %s", render(p))
		err = r.f.Add(p)
	case deltafifo.Updated:
		r.logf("update %s", render(p))
		err = r.f.Update(p)
	case deltafifo.Deleted:
		r.logf("delete %s", render(p))
		err = r.f.Delete(p)
	}
	r.checkErr(err, r.m.write(typ, p))
	r.check()
}

// replace relists some objects, in a random order: new states, the states
// the consumer holds, and now and then one object twice. keeping makes it
// a ReplaceKeeping, with some keys kept and now and then an object that
// keeps nothing.
func (r *modelRun) replace(keeping bool) {
	var list, later, keep []*corev1.Pod
	for _, i := range r.perm(r.keys) {
		p := r.newPodOf(i)
		switch r.choose.intn(6) {
		case 0, 1: // not listed
		case 2, 3:
			list = append(list, p)
		case 4:
			if cached, ok := r.cache[podKey(p)]; ok {
				p = cached
			}
			list = append(list, p)
		case 5: // twice, the newer first or last, maybe at the end
			q := r.newPodOf(i)
			if r.choose.intn(2) == 1 {
				p, q = q, p
			}
			list = append(list, p)
			if r.choose.intn(2) == 1 {
				later = append(later, q)
			} else {
				list = append(list, q)
			}
		}
		if keeping && r.choose.intn(3) == 2 {
			keep = append(keep, r.newPodOf(i))
		}
	}
	list = append(list, later...)
	if keeping && r.choose.intn(4) == 3 {
		// Objects a write refuses keep nothing: nil, and "a" of
		// namespace "ns1" named as a cluster-scoped "ns1/a".
		slash := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ns1/a", ResourceVersion: "1"}}
		keep = append(keep, nil, slash)
	}

	rv := strconv.Itoa(r.rv)
	var err error
	if keeping {
		r.logf("replaceKeeping %s keep %s", renderList(list), renderList(keep))
		err = r.f.ReplaceKeeping(list, keep, rv)
	} else {
		r.logf("replace %s", renderList(list))
		err = r.f.Replace(list, rv)
	}
	r.checkErr(err, r.m.replace(list, keep))
	r.check()
}

func (r *modelRun) resync() {
	r.logf("resync")
	r.checkErr(r.f.Resync(), r.m.resync())
	r.check()
}

func (r *modelRun) close() {
	r.logf("close")
	r.f.Close()
	r.m.close()
	r.check()
}

// invalid writes an object without a name, alone or in a list: the call
// fails with ErrInvalidObject, even after Close, and changes nothing.
func (r *modelRun) invalid() {
	noName := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", ResourceVersion: "1"}}
	var err error
	if r.choose.intn(2) == 1 {
		r.logf("add a pod without a name")
		err = r.f.Add(noName)
	} else {
		p := r.newPod()
		r.logf("replace [%s, a pod without a name]", render(p))
		err = r.f.Replace([]*corev1.Pod{p, noName}, "1")
	}
	if !errors.Is(err, deltafifo.ErrInvalidObject) {
		r.fail("the call returned %v, want ErrInvalidObject", err)
	}
	r.check()
}

// popDone pops with a done context: Pop returns its error, popping nothing.
func (r *modelRun) popDone() {
	r.logf("pop with a done context")
	ctx, cancel := context.WithCancel(r.ctx)
	cancel()
	err := r.f.Pop(ctx, func(key string, _ []podDelta, _ bool) error {
		r.fail("process called for %s with a done context", key)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		r.fail("Pop returned %v, want context.Canceled", err)
	}
	r.check()
}

// pop pops a key, if the model says one is queued (or the FIFO is closed).
// Its process function checks the batch against the model, then makes a
// few more calls, with the consumer's cache updated before, between or
// after them, or not at all if process fails.
func (r *modelRun) pop() {
	if len(r.m.queue) == 0 {
		if r.m.closed {
			r.logf("pop (closed and drained)")
			err := r.f.Pop(r.ctx, func(key string, _ []podDelta, _ bool) error {
				r.fail("process called for %s by a closed FIFO the model says is drained", key)
				return nil
			})
			if !errors.Is(err, deltafifo.ErrClosed) {
				r.fail("Pop returned %v, want ErrClosed", err)
			}
		}
		return // Pop would wait for a key
	}
	var errProcess error
	if r.choose.intn(6) == 5 {
		errProcess = fmt.Errorf("process of call %d failed", len(r.log)+1)
	}
	r.logf("pop")
	var b *modelBatch
	err := r.f.Pop(r.ctx, func(key string, deltas []podDelta, initial bool) error {
		b = r.popped(key, deltas, initial)
		r.processing = append(r.processing, key)
		defer func() { r.processing = r.processing[:len(r.processing)-1] }()
		more := max(0, r.choose.intn(8)-3)
		applyAt := r.choose.intn(more + 1)
		for i := range more + 1 {
			if i == applyAt && errProcess == nil {
				r.logf("apply to the cache")
				r.cache.apply(key, deltas)
			}
			if i < more {
				r.step()
			}
		}
		if errProcess != nil {
			r.logf("fail (the cache unchanged)")
		}
		return errProcess
	})
	if b == nil {
		r.fail("Pop returned %v without calling process, with %d keys queued", err, r.f.Len())
	}
	r.m.finish(b)
	if err != errProcess {
		r.fail("Pop returned %v, want the error of process, %v", err, errProcess)
	}
	r.check()
}

// drain pops until the queue is empty, or for at most a few keys, which
// may be queued again meanwhile: a key popped from a short queue is popped
// again soon, maybe while its previous batch is still being processed.
func (r *modelRun) drain() {
	for range 8 {
		if len(r.m.queue) == 0 {
			return
		}
		r.pop()
	}
}

// popped checks the batch a Pop handed out against the model's, which it
// returns, being processed.
func (r *modelRun) popped(key string, deltas []podDelta, initial bool) *modelBatch {
	b := r.m.pop()
	r.log[len(r.log)-1] += " → " + renderBatch(key, deltas, initial)
	if key != b.key || !slices.Equal(deltas, b.deltas) || initial != b.initial {
		r.fail("Pop handed out %s, model %s", renderBatch(key, deltas, initial), renderBatch(b.key, b.deltas, b.initial))
	}
	r.check()
	return b
}

// converge relists and drains the FIFO, applying every batch: whatever
// came before, the cache must then hold the objects listed.
func (r *modelRun) converge() {
	if r.m.closed || r.m.known == nil {
		return // nothing to relist; without known objects the cache keeps what the FIFO forgot
	}
	var list []*corev1.Pod
	for i := range r.keys {
		if r.choose.intn(2) == 1 {
			list = append(list, r.newPodOf(i))
		}
	}
	r.logf("replace %s, then pop all", renderList(list))
	r.checkErr(r.f.Replace(list, strconv.Itoa(r.rv)), r.m.replace(list, nil))
	r.check()
	for len(r.m.queue) > 0 {
		r.logf("pop")
		var b *modelBatch
		err := r.f.Pop(r.ctx, func(key string, deltas []podDelta, initial bool) error {
			b = r.popped(key, deltas, initial)
			r.cache.apply(key, deltas)
			return nil
		})
		if b == nil {
			r.fail("Pop returned %v without calling process", err)
		}
		r.m.finish(b)
		r.check()
	}
	want := modelCache{}
	for _, p := range list {
		want[podKey(p)] = p
	}
	if got := renderList(r.cacheList(r.cache)); got != renderList(r.cacheList(want)) {
		r.fail("after a relist and a drain the cache holds %s, want %s", got, renderList(r.cacheList(want)))
	}
}

func (r *modelRun) cacheList(c modelCache) []*corev1.Pod {
	var list []*corev1.Pod
	for _, key := range c.ListKeys() {
		list = append(list, c[key])
	}
	return list
}

// check fails the test if the FIFO's queue is not the model's.
func (r *modelRun) check() {
	r.t.Helper()
	if got, want := r.f.ListKeys(), r.m.keys(); !slices.Equal(got, want) {
		r.fail("ListKeys() = %q, model %q", got, want)
	}
	if got, want := r.f.Len(), len(r.m.queue); got != want {
		r.fail("Len() = %d, model %d", got, want)
	}
	for i := range modelKeys {
		key := modelKeys[i].namespace + "/" + modelKeys[i].name
		got, gotOK := r.f.GetByKey(key)
		want, wantOK := r.m.get(key)
		if gotOK != wantOK || !slices.Equal(got, want) {
			r.fail("GetByKey(%q) = %s, %v; model %s, %v", key, describe(got), gotOK, describe(want), wantOK)
		}
	}
	want := r.m.hasSynced()
	if got := r.f.HasSynced(); got != want {
		r.fail("HasSynced() = %v, model %v", got, want)
	}
	if got := closed(r.f.Synced()); got != want {
		r.fail("Synced() closed: %v, model %v", got, want)
	}
}

// checkErr fails the test if a call's error is not the model's.
func (r *modelRun) checkErr(got, want error) {
	r.t.Helper()
	if (got == nil) != (want == nil) || !errors.Is(got, want) {
		r.fail("the call returned %v, model %v", got, want)
	}
}

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nafter these calls (indented: made inside process):\n%s", fmt.Sprintf(format, args...), strings.Join(r.log, "\n"))
}

func (r *modelRun) logf(format string, args ...any) {
	indent := strings.Repeat("    ", len(r.processing))
	r.log = append(r.log, fmt.Sprintf("%3d %s", len(r.log)+1, indent)+fmt.Sprintf(format, args...))
}

// newPod returns a new state of a random object, with the next
// resourceVersion: inside process, as often as not the object whose key is
// being processed.
func (r *modelRun) newPod() *corev1.Pod {
	if len(r.processing) > 0 && r.choose.intn(2) == 1 {
		key := r.processing[len(r.processing)-1]
		for i := range modelKeys {
			if modelKeys[i].namespace+"/"+modelKeys[i].name == key {
				return r.newPodOf(i)
			}
		}
	}
	return r.newPodOf(r.choose.intn(r.keys))
}

// newPodOf returns a new state of modelKeys[i], with the next
// resourceVersion.
func (r *modelRun) newPodOf(i int) *corev1.Pod {
	r.rv++
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: modelKeys[i].namespace, Name: modelKeys[i].name, ResourceVersion: strconv.Itoa(r.rv),
	}}
}

// perm returns a random permutation of [0, n).
func (r *modelRun) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		j := r.choose.intn(i + 1)
		p[i], p[j] = p[j], i
	}
	return p
}

// render writes an object as "ns1/a@7": key and resourceVersion, which no
// two objects of a run share.
func render(p *corev1.Pod) string {
	switch {
	case p == nil:
		return "nil"
	case p.Namespace == "":
		return "cluster-scoped " + strconv.Quote(p.Name)
	}
	return podKey(p) + "@" + p.ResourceVersion
}

func renderList(list []*corev1.Pod) string {
	s := make([]string, len(list))
	for i, p := range list {
		s[i] = render(p)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func renderBatch(key string, deltas []podDelta, initial bool) string {
	s := key + ": " + describe(deltas)
	if initial {
		s += " (initial)"
	}
	return s
}
