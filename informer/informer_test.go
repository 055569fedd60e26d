package informer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func newSource() *fakelw.Source[*corev1.Pod] {
	return fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// view is a handler that keeps its own copy of the cache from the
// notifications it gets, and fails the test on any notification that does
// not follow from the ones before it.
type view struct {
	t    *testing.T
	mu   sync.Mutex
	objs map[string]*corev1.Pod
	log  []string
}

func newView(t *testing.T) *view { return &view{t: t, objs: map[string]*corev1.Pod{}} }

func (v *view) OnAdd(obj *corev1.Pod, isInInitialList bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := objkey.Key(obj)
	if old, ok := v.objs[k]; ok {
		v.t.Errorf("add of %s@%s, which the handler holds at %s", k, obj.ResourceVersion, old.ResourceVersion)
	}
	v.objs[k] = obj
	v.log = append(v.log, fmt.Sprintf("add %s@%s initial=%v", obj.Name, obj.ResourceVersion, isInInitialList))
}

func (v *view) OnUpdate(oldObj, newObj *corev1.Pod) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := objkey.Key(newObj)
	held, ok := v.objs[k]
	switch {
	case !ok:
		v.t.Errorf("update of %s, which the handler does not hold", k)
	case held.ResourceVersion != oldObj.ResourceVersion:
		v.t.Errorf("update of %s from %s, but the handler holds %s", k, oldObj.ResourceVersion, held.ResourceVersion)
	case rv(newObj) < rv(oldObj):
		v.t.Errorf("update of %s goes back from %s to %s", k, oldObj.ResourceVersion, newObj.ResourceVersion)
	}
	v.objs[k] = newObj
	v.log = append(v.log, fmt.Sprintf("update %s@%s->%s", newObj.Name, oldObj.ResourceVersion, newObj.ResourceVersion))
}

func (v *view) OnDelete(obj *corev1.Pod, finalStateUnknown bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := objkey.Key(obj)
	if _, ok := v.objs[k]; !ok {
		v.t.Errorf("delete of %s, which the handler does not hold", k)
	}
	delete(v.objs, k)
	v.log = append(v.log, fmt.Sprintf("delete %s unknown=%v", obj.Name, finalStateUnknown))
}

func (v *view) keys() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, p := range v.objs {
		out = append(out, objkey.Key(p)+"@"+p.ResourceVersion+"#"+string(p.UID))
	}
	sort.Strings(out)
	return out
}

func (v *view) calls() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.log...)
}

func rv(p *corev1.Pod) int { n, _ := strconv.Atoi(p.ResourceVersion); return n }

func sourceKeys(src *fakelw.Source[*corev1.Pod]) []string {
	var out []string
	for _, p := range src.Objects() {
		out = append(out, objkey.Key(p)+"@"+p.ResourceVersion+"#"+string(p.UID))
	}
	sort.Strings(out)
	return out
}

func cacheKeys(inf *informer.SharedIndexInformer[*corev1.Pod]) []string {
	var out []string
	for _, p := range inf.Indexer().List() {
		out = append(out, objkey.Key(p)+"@"+p.ResourceVersion+"#"+string(p.UID))
	}
	sort.Strings(out)
	return out
}

// start runs inf in the bubble; the returned func stops it and checks that
// Run returned.
func start[T reflector.Object](t *testing.T, inf *informer.SharedIndexInformer[T]) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestInformerConvergesUnderRandomChanges(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { randomRun(t, seed) })
		})
	}
}

func randomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	src := newSource()
	for i := range 10 {
		src.Create(pod("ns", fmt.Sprint("p", i)))
	}
	mode := []reflector.Mode{reflector.ListWatch, reflector.WatchList}[seed%2]
	inf := informer.New[*corev1.Pod](src, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](mode)))
	early := newView(t)
	inf.AddEventHandler(early)
	stop := start(t, inf)
	defer stop()

	var late *view
	for step := range 200 {
		name := fmt.Sprint("p", rng.IntN(15))
		switch op := rng.IntN(20); {
		case op < 6:
			src.Create(pod("ns", name))
		case op < 12:
			src.Update(pod("ns", name))
		case op < 16:
			src.Delete("ns/" + name)
		case op < 17:
			src.CloseWatches()
		case op < 18:
			// Disconnect, change things, compact: the informer must
			// relist and find the deletes and the recreations.
			src.CloseWatches()
			src.Delete("ns/" + name)
			src.Create(pod("ns", name))
			src.Delete("ns/p" + fmt.Sprint(rng.IntN(15)))
			src.Compact()
		case op < 19:
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
		default:
			synctest.Wait()
		}
		if step == 100 {
			late = newView(t)
			inf.AddEventHandler(late)
		}
	}
	time.Sleep(time.Minute) // past any backoff
	synctest.Wait()
	want := sourceKeys(src)
	assert.Equal(t, want, cacheKeys(inf), "cache")
	assert.Equal(t, want, early.keys(), "handler added before Run")
	assert.Equal(t, want, late.keys(), "handler added while running")
}

func TestLateHandlerGetsCacheThenChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		inf := informer.New[*corev1.Pod](src)
		defer start(t, inf)()
		synctest.Wait()
		require.True(t, inf.HasSynced())

		v := newView(t)
		reg := inf.AddEventHandler(v)
		src.Create(pod("ns", "c"))
		synctest.Wait()
		calls := v.calls()
		sort.Strings(calls[:2])
		assert.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=false"}, calls)
		assert.True(t, reg.HasSynced())
	})
}

// A handler added once the informer has stopped is never called: its
// registration is stopped at once, and never synced.
func TestHandlerAddedAfterStopIsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src)
		stop := start(t, inf)
		synctest.Wait()
		stop()

		v := newView(t)
		reg := inf.AddEventHandler(v)
		synctest.Wait()
		select {
		case <-reg.Stopped():
		default:
			t.Fatal("the registration of a handler added after stop is not stopped")
		}
		assert.False(t, reg.HasSynced())
		assert.Empty(t, v.calls())
	})
}

// With an empty cache too: a handler added after stop has nothing to be
// brought up to date with, and is still never synced.
func TestHandlerAddedAfterStopNeverSyncsWithAnEmptyCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := informer.New[*corev1.Pod](newSource())
		stop := start(t, inf)
		synctest.Wait()
		require.True(t, inf.HasSynced())
		stop()

		reg := inf.AddEventHandler(newView(t))
		synctest.Wait()
		<-reg.Stopped()
		assert.False(t, reg.HasSynced())
	})
}

// The logger's handler is user code: one that blocks when a handler is
// added (in the "listener started" record) holds up that handler alone,
// not the others: AddEventHandler holds the informer's lock on changes
// while it registers the handler, and nothing may log under it. Outside
// a bubble, as the mutex the failure waits on is not durably blocking.
func TestBlockedLoggerInAddEventHandlerDelaysNoOtherHandler(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	var blocking atomic.Bool
	logger := slog.New(blockingLog{block: func(msg string) {
		if msg == "processor: listener started" && blocking.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
	}})
	src := newSource()
	src.Create(pod("ns", "a"))
	inf := informer.New[*corev1.Pod](src, informer.WithLogger[*corev1.Pod](logger))
	seen := make(chan string, 10)
	inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) { seen <- p.Name }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	defer close(release) // last in, first out: before Run is stopped
	wait := func(what string) string {
		t.Helper()
		select {
		case name := <-seen:
			return name
		case <-time.After(10 * time.Second):
			t.Fatalf("the first handler got no %s in 10s", what)
			return ""
		}
	}
	assert.Equal(t, "a", wait("initial add"))

	blocking.Store(true)
	go inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
	<-entered // the logger is blocked in the second handler's start
	src.Create(pod("ns", "b"))
	assert.Equal(t, "b", wait("add while the logger blocked"))
}

// blockingLog is a slog.Handler that calls block with every message.
type blockingLog struct{ block func(msg string) }

func (h blockingLog) Enabled(context.Context, slog.Level) bool { return true }
func (h blockingLog) Handle(_ context.Context, r slog.Record) error {
	h.block(r.Message)
	return nil
}
func (h blockingLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h blockingLog) WithGroup(string) slog.Handler      { return h }

// A one-shot handler removes itself from within its first call (client-go
// allows it; ours used to wait for itself for ever), and Stopped tells when
// it will not be called again.
func TestHandlerRemovesItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src)
		var reg *informer.Registration[*corev1.Pod]
		var seen []string
		reg = inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(p *corev1.Pod, _ bool) {
				seen = append(seen, p.Name)
				inf.RemoveEventHandler(reg)
			},
		})
		defer start(t, inf)()
		<-reg.Stopped() // in the bubble, a hang fails the test
		src.Create(pod("ns", "b"))
		synctest.Wait()
		assert.Equal(t, []string{"a"}, seen)
		assert.Equal(t, sourceKeys(src), cacheKeys(inf))
	})
}

// TestHandlerAddedDuringTheInitialList: a handler added while the informer
// applies its first list gets each object once, as an add from the initial
// list (the cached ones first, then the rest as they are applied), and
// syncs with the informer. The informer applies one key at a time; an
// index function (which runs outside the informer's delivery lock) holds
// p100 until the handler is added, so that it is added with half the list
// applied.
func TestHandlerAddedDuringTheInitialList(t *testing.T) {
	src := newSource()
	for i := range 200 {
		src.Create(pod("ns", fmt.Sprintf("p%03d", i)))
	}
	halfway, added := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(p *corev1.Pod) ([]string, error) {
		if p.Name == "p100" {
			once.Do(func() {
				close(halfway)
				select {
				case <-added:
				case <-time.After(time.Minute): // a guard, not a wait
					t.Error("AddEventHandler did not return while an index function ran")
				}
			})
		}
		return nil, nil
	}
	inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"hold": hold}))
	defer start(t, inf)()
	<-halfway
	assert.Equal(t, 100, inf.Indexer().Len(), "the handler comes with p000 to p099 applied")
	v := newView(t)
	reg := inf.AddEventHandler(v)
	close(added)
	select {
	case <-reg.Synced():
	case <-time.After(time.Minute): // a guard, not a wait
		t.Fatal("the handler added during the initial list never synced")
	}
	assert.True(t, inf.HasSynced())
	calls := v.calls()
	assert.Len(t, calls, 200)
	for _, c := range calls {
		assert.True(t, strings.HasSuffix(c, " initial=true") && strings.HasPrefix(c, "add "), c)
	}
	assert.Equal(t, sourceKeys(src), v.keys())
}

// A registration's Synced channel closes once the informer has synced and
// the handler has handled its initial list: for a handler added before Run
// and for one added later, whose initial list is the cache.
func TestRegistrationSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		inf := informer.New[*corev1.Pod](src)
		early := inf.AddEventHandler(newView(t))
		select {
		case <-early.Synced():
			t.Fatal("closed before Run")
		default:
		}
		defer start(t, inf)()
		<-early.Synced() // a deadlock here fails the bubble
		assert.True(t, early.HasSynced())

		release := make(chan struct{})
		late := inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { <-release }})
		synctest.Wait()
		select {
		case <-late.Synced():
			t.Fatal("late handler's registration closed before it handled the cache")
		default:
		}
		close(release)
		<-late.Synced()
	})
}

func TestRelistDeliversOnlyRealChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for i := range 5 {
			src.Create(pod("ns", fmt.Sprint("p", i)))
		}
		inf := informer.New[*corev1.Pod](src, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait()
		// Away, one object changes; then the history is compacted so the
		// informer must relist all five.
		src.CloseWatches()
		src.Update(pod("ns", "p3"))
		src.Compact()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 2, src.Lists.Load())
		calls := v.calls()
		assert.Len(t, calls, 6, "five adds and one update, no no-change updates: %v", calls)
		assert.Equal(t, "update p3@4->6", calls[5])
	})
}

// A resource whose list has no resourceVersion (componentstatuses) is
// listed again every 30 s, not watched: a relist tells the handlers what
// changed, found by content as there is no resourceVersion to go by, and
// nothing else.
func TestUnversionedRelistDeliversOnlyRealChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &unversionedLW{phases: map[string]corev1.PodPhase{"a": corev1.PodPending, "b": corev1.PodPending}}
		inf := informer.New[*corev1.Pod](lw, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait()
		require.True(t, inf.HasSynced())
		assert.Len(t, v.calls(), 2)

		time.Sleep(34 * time.Second) // a relist: 30 s and up to a tenth more
		synctest.Wait()
		assert.EqualValues(t, 2, lw.lists.Load())
		assert.Len(t, v.calls(), 2, "nothing changed, nothing to tell")

		lw.set("a", corev1.PodRunning)
		lw.set("c", corev1.PodPending)
		time.Sleep(34 * time.Second)
		synctest.Wait()
		assert.EqualValues(t, 3, lw.lists.Load())
		assert.Equal(t, []string{"update a@->", "add c@ initial=false"}, v.calls()[2:])
		got, ok := inf.Indexer().GetByKey("ns/a")
		require.True(t, ok)
		assert.Equal(t, corev1.PodRunning, got.Status.Phase)
		assert.Zero(t, lw.watches.Load())
	})
}

// The content of a relisted object without a resourceVersion is compared
// as the mutation detector compares it: a type with an unexported field,
// on which equality.Semantic.DeepEqual panics, no longer crashes the
// process at its first relist.
func TestUnversionedRelistOfATypeWithAnUnexportedField(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := hiddenUnversionedLW{&unversionedLW{phases: map[string]corev1.PodPhase{"a": corev1.PodPending, "b": corev1.PodPending}}}
		inf := informer.New[*hiddenPod](lw, informer.WithReflectorOptions(reflector.WithMode[*hiddenPod](reflector.ListWatch)))
		var calls []string
		inf.AddEventHandler(processor.HandlerFuncs[*hiddenPod]{
			AddFunc:    func(p *hiddenPod, _ bool) { calls = append(calls, "add "+p.Name) },
			UpdateFunc: func(_, p *hiddenPod) { calls = append(calls, "update "+p.Name+" "+string(p.Status.Phase)) },
		})
		defer start(t, inf)()
		synctest.Wait()
		time.Sleep(34 * time.Second) // a relist: 30 s and up to a tenth more
		synctest.Wait()
		lw.set("b", corev1.PodRunning)
		time.Sleep(34 * time.Second)
		synctest.Wait()
		assert.EqualValues(t, 3, lw.lists.Load())
		assert.Equal(t, []string{"add a", "add b", "update b Running"}, calls)
	})
}

// hiddenUnversionedLW is unversionedLW for hiddenPods.
type hiddenUnversionedLW struct{ *unversionedLW }

func (l hiddenUnversionedLW) List(ctx context.Context, opts reflector.ListOptions, add func(*hiddenPod) error) (reflector.ListMeta, error) {
	return l.unversionedLW.List(ctx, opts, func(p *corev1.Pod) error { return add(&hiddenPod{Pod: *p, cache: "c"}) })
}

func (l hiddenUnversionedLW) Watch(context.Context, reflector.WatchOptions) (reflector.Watcher[*hiddenPod], error) {
	l.watches.Add(1)
	return nil, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods"}, "watch")
}

// unversionedLW lists pods without resourceVersions, as kube-apiserver lists
// componentstatuses, and cannot watch them. Its first fail lists fail.
type unversionedLW struct {
	mu             sync.Mutex
	phases         map[string]corev1.PodPhase
	fail           atomic.Int64
	lists, watches atomic.Int64
}

func (l *unversionedLW) set(name string, phase corev1.PodPhase) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phases[name] = phase
}

func (l *unversionedLW) List(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if l.lists.Add(1) <= l.fail.Load() {
		return reflector.ListMeta{}, apierrors.NewServiceUnavailable("busy")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(l.phases)) {
		p := pod("ns", name)
		p.Status.Phase = l.phases[name]
		if err := add(p); err != nil {
			return reflector.ListMeta{}, err
		}
	}
	return reflector.ListMeta{}, nil
}

func (l *unversionedLW) Watch(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.watches.Add(1)
	return nil, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods"}, "watch")
}

func TestRecreatedWhileAwayIsDeleteThenAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait()
		src.CloseWatches()
		src.Delete("ns/a")
		src.Create(pod("ns", "a")) // same name, new UID
		src.Compact()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"add a@1 initial=true", "delete a unknown=true", "add a@3 initial=false"}, v.calls())
		assert.Equal(t, sourceKeys(src), cacheKeys(inf))
	})
}

// A UID tells a recreated object from an updated one only when both
// states have one: a state without a UID (a transform dropped it, as
// reflector.WithTransform warns) is an update, whichever of the two lacks
// it; only two different UIDs are a delete and an add.
func TestAStateWithoutAUIDIsAnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		withUID := func(rv string, uid types.UID) *corev1.Pod {
			p := podRV("a", rv)
			p.UID = uid
			return p
		}
		lw := &scriptLW{list: []*corev1.Pod{withUID("1", "")}, rv: "1", events: make(chan reflector.Event[*corev1.Pod])}
		inf := informer.New[*corev1.Pod](lw, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait()
		for _, p := range []*corev1.Pod{
			withUID("2", "u1"), // cached without a UID
			withUID("3", ""),   // cached with one
			withUID("4", "u2"), // cached without a UID again
			withUID("5", "u3"), // another UID: recreated
		} {
			lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Modified, Object: p}
		}
		synctest.Wait()
		assert.Equal(t, []string{
			"add a@1 initial=true",
			"update a@1->2", "update a@2->3", "update a@3->4",
			"delete a unknown=true", "add a@5 initial=false",
		}, v.calls())
	})
}

func TestResyncRedeliversToDueHandlersOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src)
		fast, never := newView(t), newView(t)
		inf.AddEventHandler(fast, informer.WithHandlerResync(10*time.Second))
		inf.AddEventHandler(never)
		defer start(t, inf)()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"add a@1 initial=true", "update a@1->1", "update a@1->1"}, fast.calls())
		assert.Equal(t, []string{"add a@1 initial=true"}, never.calls())
	})
}

// A handler slower than its resync period: a pass over the cache takes it
// 2 s (200 pods, 10 ms each) against a period of 1 s. A resync that falls
// due while it is still behind waits until it has caught up, so a real
// change reaches it after at most about one pass. Before (and in
// client-go) one more pass was queued every second: after a minute, 30
// passes of backlog, and a change waited a minute behind them (151,000
// pending after 5 minutes for 1,000 pods).
func TestResyncDoesNotPileUpBehindASlowHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for i := range 200 {
			src.Create(pod("ns", fmt.Sprint("p", i)))
		}
		inf := informer.New[*corev1.Pod](src)
		var updates atomic.Int64
		lateSeen := make(chan time.Time, 1)
		slow := processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(p *corev1.Pod, _ bool) {
				if p.Name == "late" {
					lateSeen <- time.Now()
				}
				time.Sleep(10 * time.Millisecond)
			},
			UpdateFunc: func(_, _ *corev1.Pod) { updates.Add(1); time.Sleep(10 * time.Millisecond) },
		}
		inf.AddEventHandler(slow, informer.WithHandlerResync(time.Second))
		defer start(t, inf)()
		time.Sleep(time.Minute)
		created := time.Now()
		src.Create(pod("ns", "late"))
		seen := <-lateSeen
		assert.Less(t, seen.Sub(created), 3*time.Second, "a change waited behind resyncs")
		t.Logf("%d resync updates handled in a minute; a change reached the handler after %v", updates.Load(), seen.Sub(created))
	})
}

// The informer checks for due resyncs only while some handler has a
// resync period; a handler with one, added to an informer that has run for
// a while without any, is resynced all the same.
func TestResyncOfAHandlerAddedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src)
		plain := newView(t)
		inf.AddEventHandler(plain)
		defer start(t, inf)()
		time.Sleep(time.Minute)
		late := newView(t)
		reg := inf.AddEventHandler(late, informer.WithHandlerResync(10*time.Second))
		time.Sleep(25 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"add a@1 initial=true", "update a@1->1", "update a@1->1"}, late.calls())
		assert.Equal(t, []string{"add a@1 initial=true"}, plain.calls())
		inf.RemoveEventHandler(reg)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, late.calls(), 3, "a removed handler is not resynced")
	})
}

// WithResyncPeriod is the resync period of handlers added without their
// own; one added with its own keeps it.
func TestResyncPeriodIsTheHandlersDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src, informer.WithResyncPeriod[*corev1.Pod](10*time.Second))
		byDefault, own := newView(t), newView(t)
		inf.AddEventHandler(byDefault)
		inf.AddEventHandler(own, informer.WithHandlerResync(20*time.Second))
		defer start(t, inf)()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"add a@1 initial=true", "update a@1->1", "update a@1->1"}, byDefault.calls())
		assert.Equal(t, []string{"add a@1 initial=true", "update a@1->1"}, own.calls())
	})
}

// TestResyncReachesEveryObjectWhenDrainingIsSlow: a resync's Syncs reach the
// due handler however long the informer takes to pop them. Here every
// object takes a second to index, so the resync drains over three seconds,
// past the informer's one-second check for due handlers: a check that
// found no handler due used to end the resync, and the handler got one
// object of three.
func TestResyncReachesEveryObjectWhenDrainingIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for _, name := range []string{"a", "b", "c"} {
			src.Create(pod("ns", name))
		}
		slow := func(p *corev1.Pod) ([]string, error) {
			time.Sleep(time.Second)
			return []string{p.Namespace}, nil
		}
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"slow": slow}))
		v := newView(t)
		inf.AddEventHandler(v, informer.WithHandlerResync(30*time.Second))
		defer start(t, inf)()
		time.Sleep(45 * time.Second)
		synctest.Wait()
		var syncs []string
		for _, c := range v.calls() {
			if strings.HasPrefix(c, "update ") {
				syncs = append(syncs, c)
			}
		}
		assert.ElementsMatch(t, []string{"update a@1->1", "update b@2->2", "update c@3->3"}, syncs)
	})
}

func TestTransformAppliesBeforeCaching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		p := pod("ns", "a")
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		src.Create(p)
		inf := informer.New[*corev1.Pod](src)
		require.NoError(t, inf.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
			q := p.DeepCopy()
			q.ManagedFields = nil
			return q, nil
		}))
		defer start(t, inf)()
		synctest.Wait()
		got, ok := inf.Lister().Get("ns", "a")
		require.True(t, ok)
		assert.Nil(t, got.ManagedFields)
		assert.ErrorIs(t, inf.SetTransform(nil), informer.ErrStarted)
	})
}

// TestNilOptionsAndRegistrationsAreIgnored: a nil option or a nil
// registration is no reason to panic.
func TestNilOptionsAndRegistrationsAreIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src, nil)
		v := newView(t)
		reg := inf.AddEventHandler(v, nil)
		inf.RemoveEventHandler(nil)
		defer start(t, inf)()
		synctest.Wait()
		assert.True(t, reg.HasSynced())
		assert.Equal(t, []string{"add a@1 initial=true"}, v.calls())
		_, err := informer.NewFactory(&reflector.Config{Host: "http://127.0.0.1:1"}, nil)
		assert.NoError(t, err)
	})
}

func TestPanickingHandlerDoesNotStopOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		var mu sync.Mutex
		var panics []error
		inf := informer.New[*corev1.Pod](src, informer.WithHandlerErrorHandler[*corev1.Pod](func(err error) {
			mu.Lock()
			panics = append(panics, err)
			mu.Unlock()
		}))
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) { panic("boom") },
		})
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		synctest.Wait()
		assert.Len(t, v.calls(), 2)
		mu.Lock()
		defer mu.Unlock()
		assert.Len(t, panics, 2)
	})
}

// With no error handler and no logger set, a handler's panic is logged to
// slog.Default(): it was logged to a logger that discarded it, although the
// docs said it was reported. (Not parallel: it sets the default logger.)
func TestHandlerPanicIsLoggedByDefault(t *testing.T) {
	var logs syncBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		inf := informer.New[*corev1.Pod](src)
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) { panic("boom") },
		})
		defer start(t, inf)()
		src.Create(pod("ns", "a"))
		synctest.Wait()
	})
	assert.Contains(t, logs.String(), "handler panicked")
	assert.Contains(t, logs.String(), "boom")
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestNamespaceIndexAndLister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("a", "x"))
		src.Create(pod("a", "y"))
		src.Create(pod("b", "z"))
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
			indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
		}))
		defer start(t, inf)()
		synctest.Wait()
		inA, err := inf.Indexer().ByIndex(indexer.NamespaceIndex, "a")
		require.NoError(t, err)
		assert.Len(t, inA, 2)
		assert.Len(t, inf.Lister().ByNamespace("b", nil), 1)
		// "" is every namespace, as client-go's NamespaceAll (it matched
		// no pod), with the index and without.
		assert.Len(t, inf.Lister().ByNamespace(metav1.NamespaceAll, nil), 3)
		noIndex := informer.New[*corev1.Pod](src)
		defer start(t, noIndex)()
		synctest.Wait()
		assert.Len(t, noIndex.Lister().ByNamespace(metav1.NamespaceAll, nil), 3)
	})
}

// What a Lister returns for a selector holds the matches only: a slice
// filtered in place kept every other cached object reachable through its
// backing array, for as long as the caller held the result.
func TestListerSelectionsHoldOnlyTheirMatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for i := range 1000 {
			p := pod(fmt.Sprint("ns", i%10), fmt.Sprint("p", i))
			p.Labels = map[string]string{"i": fmt.Sprint(i % 100)}
			src.Create(p)
		}
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
			indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
		}))
		defer start(t, inf)()
		synctest.Wait()
		sel := labels.SelectorFromSet(labels.Set{"i": "7"})
		all := inf.Lister().List(sel)
		assert.Len(t, all, 10)
		inNS := inf.Lister().ByNamespace("ns7", sel)
		assert.Len(t, inNS, 10)
		for what, got := range map[string][]*corev1.Pod{"List": all, "ByNamespace": inNS} {
			assert.LessOrEqual(t, cap(got), 16, "%s: room for %d objects behind 10 matches", what, cap(got))
			for _, p := range got[len(got):cap(got)] {
				assert.Nil(t, p, "%s: an object left out is still referenced", what)
			}
		}
	})
}

// Get of a name holding a "/" finds nothing: its key must not pass for
// the key of an object of another namespace.
func TestListerGetOfANameWithASlash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("b", "z"))
		inf := informer.New[*corev1.Pod](src)
		defer start(t, inf)()
		synctest.Wait()
		got, ok := inf.Lister().Get("b", "z")
		require.True(t, ok)
		assert.Equal(t, "z", got.Name)
		for _, nn := range [][2]string{{"", "b/z"}, {"b/", "z"}, {"", "/b/z"}} {
			got, ok := inf.Lister().Get(nn[0], nn[1])
			assert.False(t, ok, "Get(%q, %q)", nn[0], nn[1])
			assert.Nil(t, got, "Get(%q, %q)", nn[0], nn[1])
		}
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := informer.New[*corev1.Pod](newSource())
		stop := start(t, inf)
		synctest.Wait()
		assert.ErrorIs(t, inf.Run(t.Context()), informer.ErrStarted)
		stop()
	})
}

// scriptLW lists list at rv and then delivers what the test sends on
// events, on one watch after another.
type scriptLW struct {
	list   []*corev1.Pod
	rv     string
	events chan reflector.Event[*corev1.Pod]
	spin   fakelw.SpinGuard
}

func (s *scriptLW) List(ctx context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	s.spin.Asked(ctx)
	for _, p := range s.list {
		if err := add(p); err != nil {
			return reflector.ListMeta{}, err
		}
	}
	return reflector.ListMeta{ResourceVersion: s.rv}, nil
}

func (s *scriptLW) Watch(ctx context.Context, _ reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	s.spin.Asked(ctx)
	return &scriptWatcher{ctx: ctx, events: s.events, done: make(chan struct{})}, nil
}

type scriptWatcher struct {
	ctx    context.Context
	events chan reflector.Event[*corev1.Pod]
	done   chan struct{}
	once   sync.Once
}

func (w *scriptWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	select {
	case ev := <-w.events:
		return ev, nil
	case <-w.done:
	case <-w.ctx.Done():
	}
	return reflector.Event[*corev1.Pod]{}, io.EOF
}

func (w *scriptWatcher) Close() error { w.once.Do(func() { close(w.done) }); return nil }

func podRV(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, UID: "u1"}}
}

// The apiserver reports the deletion of a twice (say, a replaying server or
// proxy) while the informer is still applying the batch that ends in the
// first deletion. The handlers must be told once: an OnDelete for an object
// they no longer hold is a second delete.
func TestDeleteReplayedWhileTheDeleteIsApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{list: []*corev1.Pod{podRV("a", "1")}, rv: "1", events: make(chan reflector.Event[*corev1.Pod])}
		gate := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{})}
		inf := informer.New[*corev1.Pod](lw,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"block": func(p *corev1.Pod) ([]string, error) {
				if ch, ok := gate[p.ResourceVersion]; ok {
					<-ch
				}
				return nil, nil
			}}))
		v := newView(t)
		inf.AddEventHandler(v)
		stop := start(t, inf)
		defer stop()

		synctest.Wait() // the informer is applying a@1 (blocked in the index function)
		lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Modified, Object: podRV("a", "2")}
		lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Deleted, Object: podRV("a", "3")}
		synctest.Wait() // both queued as one batch
		close(gate["1"])
		synctest.Wait() // batch [Updated@2 Deleted@3] in flight, blocked on a@2
		lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Deleted, Object: podRV("a", "4")}
		synctest.Wait()
		close(gate["2"])
		synctest.Wait()
		assert.Equal(t, []string{"add a@1 initial=true", "update a@1->2", "delete a unknown=false"}, v.calls())
	})
}

// An object whose add failed to apply (its index function failed) was never
// told to the handlers: its delete, queued while the add was applied, is
// not told either (OnDelete came for an object never added).
func TestDeleteOfAnObjectNeverAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptLW{rv: "1", events: make(chan reflector.Event[*corev1.Pod])}
		gate := make(chan struct{})
		var errs errorList
		inf := informer.New[*corev1.Pod](lw,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"fails": func(p *corev1.Pod) ([]string, error) {
				if p.ResourceVersion == "2" {
					<-gate
					return nil, errors.New("index function failed")
				}
				return nil, nil
			}}))
		require.NoError(t, inf.SetWatchErrorHandler(errs.add))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait()
		lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: podRV("a", "2")}
		synctest.Wait() // the add is being applied
		lw.events <- reflector.Event[*corev1.Pod]{Type: reflector.Deleted, Object: podRV("a", "3")}
		synctest.Wait()
		close(gate)
		synctest.Wait()
		assert.Empty(t, v.calls())
		assert.Len(t, errs.all(), 1, "the failed add is reported")
	})
}

// errorList collects errors reported from several goroutines.
type errorList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorList) add(err error) { l.mu.Lock(); defer l.mu.Unlock(); l.errs = append(l.errs, err) }

func (l *errorList) all() []error { l.mu.Lock(); defer l.mu.Unlock(); return slices.Clone(l.errs) }

// Without SetWatchErrorHandler, a list error is logged as a warning, as
// the docs say (it went to the reflector's debug log only: a cache that
// never synced said nothing at the default level).
func TestListErrorLoggedWithoutHandler(t *testing.T) {
	var logs syncBuffer
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.FailList(errors.New("403 Forbidden"))
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithLogger[*corev1.Pod](slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		defer start(t, inf)()
		<-inf.Synced() // listed after the failure and a backoff
	})
	assert.Contains(t, logs.String(), "403 Forbidden", "the list error, at warning level")
}

// What Run cannot run with is an error from Run, before the informer counts
// as started: a nil context, no ListerWatcher, an index without a function
// (every write would fail, and the informer would sync with nothing cached).
func TestRunRefusesWhatItCannotRunWith(t *testing.T) {
	var nilSource *fakelw.Source[*corev1.Pod]
	for name, inf := range map[string]*informer.SharedIndexInformer[*corev1.Pod]{
		"nil ListerWatcher":  informer.New[*corev1.Pod](nil),
		"typed nil":          informer.New[*corev1.Pod](nilSource),
		"nil index function": informer.New[*corev1.Pod](newSource(), informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"byNode": nil})),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
				assert.ErrorContains(t, inf.Run(t.Context()), "nil")
				// Its registrations stop too: nothing waits for them.
				<-reg.Stopped()
				err := informer.WaitForSync(t.Context(), reg)
				assert.ErrorContains(t, err, "stopped")
			})
		})
	}
	inf := informer.New[*corev1.Pod](newSource())
	var nilCtx context.Context // a nil context is what is tested
	assert.ErrorContains(t, inf.Run(nilCtx), "nil context")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.NoError(t, inf.Run(ctx), "a nil context does not leave the informer started")
	zero := new(informer.SharedIndexInformer[*corev1.Pod])
	assert.ErrorContains(t, zero.Run(t.Context()), "without New")
	// One not made by New has not synced, and WaitForSync says so: it
	// panicked, where Run refused it.
	assert.False(t, zero.HasSynced())
	assert.ErrorContains(t, informer.WaitForSync(t.Context(), zero), "nil")
	// Nor does the rest of it panic: a handler is refused, indexes are
	// refused, and the cache is empty.
	reg := zero.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
	assert.ErrorContains(t, informer.WaitForSync(t.Context(), reg), "nil")
	zero.RemoveEventHandler(reg)
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	assert.ErrorContains(t, zero.AddIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName}), "without New")
	assert.Empty(t, zero.Indexer().List())
	assert.Empty(t, zero.Lister().List(labels.Everything()))
}

// An index named by two WithIndexers is an error from Run, which
// LastError says too.
func TestRunRefusesAnIndexNamedTwice(t *testing.T) {
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	inf := informer.New[*corev1.Pod](newSource(),
		informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName}),
		informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // an informer that ran would return nil at once
	want := `informer: index "byName" is given twice (WithIndexers)`
	assert.EqualError(t, inf.Run(ctx), want)
	assert.EqualError(t, inf.LastError(), want)
}

// An informer whose reflector refuses to run (a Mode that is none of
// reflector's) stops and returns why, rather than wait with an empty cache
// until its context ends.
func TestRunReturnsWhenTheReflectorRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := informer.New[*corev1.Pod](newSource(), informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](42)))
		reg := inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
		err := inf.Run(t.Context())
		assert.ErrorContains(t, err, "Mode(42)")
		<-reg.Stopped()
		<-inf.Stopped()
	})
}

// The indexes of several WithIndexers are all in the cache.
func TestWithIndexersAddsUp(t *testing.T) {
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	inf := informer.New[*corev1.Pod](newSource(),
		informer.WithIndexers(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod]}),
		informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName}))
	require.NoError(t, inf.Indexer().Add(pod("ns", "a")))
	for index, value := range map[string]string{indexer.NamespaceIndex: "ns", "byName": "a"} {
		got, err := inf.Indexer().ByIndex(index, value)
		require.NoError(t, err, index)
		assert.Len(t, got, 1, index)
	}
}

// A panicking index function fails the write it was called for, which is
// reported and skipped: it must not take Run (and the process) down.
func TestPanickingIndexFunctionIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "good"))
		src.Create(pod("ns", "boom"))
		var reported errorList
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
			"byName": func(p *corev1.Pod) ([]string, error) {
				if p.Name == "boom" {
					panic("index function bug")
				}
				return []string{p.Name}, nil
			},
		}))
		require.NoError(t, inf.SetWatchErrorHandler(reported.add))
		defer start(t, inf)()
		<-inf.Synced()
		synctest.Wait()
		assert.Equal(t, 1, inf.Indexer().Len())
		require.NotEmpty(t, reported.all())
		assert.ErrorContains(t, reported.all()[0], "index function bug")
	})
}

// A watch error handler that panics is logged; the informer goes on.
func TestPanickingWatchErrorHandlerIsLogged(t *testing.T) {
	var logs syncBuffer
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.FailList(errors.New("403 Forbidden"))
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithLogger[*corev1.Pod](slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, inf.SetWatchErrorHandler(func(error) { panic("handler bug") }))
		defer start(t, inf)()
		<-inf.Synced() // listed after the failure and a backoff
	})
	assert.Contains(t, logs.String(), "handler bug")
}

// A relist that finds an object gone while its update is being applied,
// and the update then fails (an index error): the handlers are told of the
// delete with the state they last saw, not with the update they never got.
func TestInferredDeleteCarriesTheStateHandlersSaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a")) // resourceVersion 1
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"refuses-v2": func(p *corev1.Pod) ([]string, error) {
				if p.Labels["v"] != "2" {
					return nil, nil
				}
				once.Do(func() { close(entered) })
				<-release
				return nil, errors.New("index refuses v2")
			}}))
		var errs errorList
		require.NoError(t, inf.SetWatchErrorHandler(errs.add))
		var deleted []string
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{DeleteFunc: func(p *corev1.Pod, unknown bool) {
			deleted = append(deleted, fmt.Sprintf("%s@%s unknown=%v", p.Name, p.ResourceVersion, unknown))
		}})
		defer start(t, inf)()
		<-inf.Synced()

		v2 := pod("ns", "a")
		v2.Labels = map[string]string{"v": "2"}
		src.Update(v2) // resourceVersion 2: applying it blocks in the index function
		<-entered
		// a is deleted where the watch does not see it: the watch resumed
		// gets 410, and the relist (after one that fails, so that the
		// delete comes first) lacks a.
		src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		src.FailList(errors.New("busy"))
		src.CloseWatches()
		src.Delete("ns/a")
		time.Sleep(time.Minute)
		synctest.Wait() // relisted: a delete queued while the update is in flight
		close(release)  // the update fails
		synctest.Wait()
		assert.Equal(t, []string{"a@1 unknown=true"}, deleted)
		assert.True(t, slices.ContainsFunc(errs.all(), func(err error) bool { return strings.Contains(err.Error(), "index refuses v2") }),
			"the failed update is reported: %v", errs.all())
	})
}

// No user code runs under the lock that delivery and AddEventHandler share:
// an index function may add a handler (it deadlocked the informer when
// index functions ran under that lock), and the handler it adds gets the
// cache as usual.
func TestIndexFunctionMayAddAHandler(t *testing.T) {
	src := newSource()
	src.Create(pod("ns", "a"))
	src.Create(pod("ns", "b"))
	var inf *informer.SharedIndexInformer[*corev1.Pod]
	v := newView(t)
	added := make(chan *informer.Registration[*corev1.Pod], 1)
	var once sync.Once
	inf = informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
		"by-name": func(p *corev1.Pod) ([]string, error) {
			once.Do(func() { added <- inf.AddEventHandler(v) })
			return []string{p.Name}, nil
		},
	}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	// A deadline, not a wait: on a deadlock nothing else would end the test.
	deadline := time.After(30 * time.Second)
	select {
	case reg := <-added:
		select {
		case <-reg.Synced():
		case <-deadline:
			t.Fatal("the handler added by an index function never synced: the informer is deadlocked")
		}
	case <-deadline:
		t.Fatal("AddEventHandler from an index function never returned: the informer is deadlocked")
	}
	assert.Equal(t, []string{"ns/a@1#uid-1", "ns/b@2#uid-2"}, v.keys(), "the handler synced with the initial list")
	cancel()
	require.NoError(t, <-done)
}

// Events the reflector still holds when the informer stops are dropped
// quietly: the error handler and LastError hear nothing of the stop (they
// heard "queue is closed" for each when the queue closed before the
// reflector had returned).
func TestStoppingReportsNoErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src)
		var errs errorList
		require.NoError(t, inf.SetWatchErrorHandler(errs.add))
		gate := make(chan struct{})
		var hold atomic.Bool
		require.NoError(t, inf.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
			if hold.Load() && p.Name == "b" {
				<-gate
			}
			return p, nil
		}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()
		require.True(t, inf.HasSynced())
		hold.Store(true)
		src.Create(pod("ns", "b"))
		src.Create(pod("ns", "c"))
		synctest.Wait() // the reflector waits in the transform of b
		cancel()
		synctest.Wait() // Run waits for the reflector
		close(gate)
		require.NoError(t, <-done)
		assert.Empty(t, errs.all())
		assert.NoError(t, inf.LastError())
	})
}

// A change the cache could not apply is reported even when Run's context
// ends while it is being applied.
func TestApplyErrorAsRunStopsIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		ctx, cancel := context.WithCancel(t.Context())
		inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
			"byName": func(p *corev1.Pod) ([]string, error) {
				if p.Name == "b" {
					cancel()
					return nil, errors.New("index function failed on b")
				}
				return []string{p.Name}, nil
			},
		}))
		var reported errorList
		require.NoError(t, inf.SetWatchErrorHandler(reported.add))
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		<-inf.Synced()
		src.Create(pod("ns", "b"))
		require.NoError(t, <-done)
		errs := reported.all()
		require.NotEmpty(t, errs, "the failed apply of b was not reported")
		assert.ErrorContains(t, errs[len(errs)-1], "index function failed on b")
	})
}

// A resync that comes due while a relist is being applied still reaches
// every object. The FIFO skips the keys it holds, whose deltas reach the
// handlers anyway; but the relist's deltas of unchanged objects tell the
// handlers nothing, so the resync round was lost for them.
func TestResyncDuringARelistReachesEveryObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for _, n := range []string{"a", "b", "c"} {
			src.Create(pod("ns", n))
		}
		var blocking atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"gate": func(p *corev1.Pod) ([]string, error) {
				if p.Name == "a" && blocking.CompareAndSwap(true, false) {
					close(entered)
					<-release
				}
				return nil, nil
			}}))
		v := newView(t)
		inf.AddEventHandler(v, informer.WithHandlerResync(30*time.Second))
		defer start(t, inf)()
		synctest.Wait()
		require.True(t, inf.HasSynced())

		// A relist of the unchanged objects, held on a while the resync
		// comes due.
		blocking.Store(true)
		src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		src.Compact()
		<-entered // applying the relist's a; b and c queued
		time.Sleep(40 * time.Second)
		synctest.Wait() // the resync due at 30 s was queued
		close(release)
		synctest.Wait()
		var syncs []string
		for _, c := range v.calls() {
			if strings.HasPrefix(c, "update ") {
				syncs = append(syncs, c)
			}
		}
		assert.ElementsMatch(t, []string{"update a@1->1", "update b@2->2", "update c@3->3"}, syncs,
			"the resync due at 30 s reaches every object (calls: %v)", v.calls())
	})
}

// A resync's Sync that carries a state the cache does not hold is a
// change, told to every handler. It happens when a relist's Replaced
// failed to apply (an index function's transient error) and a resync
// came due while it was queued: the Sync, which carries the newest queued
// state, brings the relisted state. It used to reach only the handlers
// due for a resync; the others kept the old state until the next change.
func TestSyncBringingANewStateReachesEveryHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		release := make(chan struct{})
		var holdOnce, failOnce sync.Once
		var failed atomic.Bool
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"gate": func(p *corev1.Pod) ([]string, error) {
				if p.Labels["phase"] != "2" {
					return nil, nil
				}
				var err error
				switch p.Name {
				case "a": // holds the loop while the resync comes due
					holdOnce.Do(func() { <-release })
				case "b":
					failOnce.Do(func() { failed.Store(true); err = errors.New("transient") })
				}
				return nil, err
			}}))
		_ = inf.SetWatchErrorHandler(func(error) {})
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{}, informer.WithHandlerResync(time.Second))
		plain := newView(t) // no resync period
		inf.AddEventHandler(plain)
		defer start(t, inf)()
		synctest.Wait()

		// Both change while the informer is away, and a relist finds them.
		src.FailWatch(apierrors.NewInternalError(errors.New("down")))
		src.CloseWatches()
		synctest.Wait()
		for _, name := range []string{"a", "b"} {
			p := pod("ns", name)
			p.Labels = map[string]string{"phase": "2"}
			src.Update(p)
		}
		src.Compact()
		time.Sleep(5 * time.Second) // the relist is applied up to a; resyncs come due
		close(release)
		time.Sleep(5 * time.Second)
		synctest.Wait()

		require.True(t, failed.Load(), "setup: b's index function never failed")
		assert.Equal(t, cacheKeys(inf), plain.keys(),
			"the handler without a resync period holds what the cache holds")
	})
}

// An object the transform fails on in a relist stays cached as it was,
// with no delete told to the handlers: it was listed, so it exists. (It
// used to be left out of the list, which took it for deleted, until it
// changed again.)
func TestTransformFailureInARelistKeepsTheObject(t *testing.T) {
	for name, mode := range map[string]reflector.Mode{"list": reflector.ListWatch, "streaming": reflector.WatchList} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource()
				src.Create(pod("ns", "a"))
				src.Create(pod("ns", "b"))
				inf := informer.New[*corev1.Pod](src, informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](mode)))
				var failB atomic.Bool
				require.NoError(t, inf.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
					if failB.Load() && p.Name == "b" {
						p.Labels = map[string]string{"half": "done"} // and then it fails
						return nil, errors.New("transient failure")
					}
					return p, nil
				}))
				var errs errorList
				require.NoError(t, inf.SetWatchErrorHandler(errs.add))
				v := newView(t)
				inf.AddEventHandler(v)
				defer start(t, inf)()
				synctest.Wait()
				before := cacheKeys(inf)

				failB.Store(true)
				src.CloseWatches()
				src.Update(pod("ns", "a"))
				src.Compact() // the watch cannot resume: a relist
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "update a@1->3"}, v.calls())
				assert.Contains(t, cacheKeys(inf), before[1], "b, listed, is still cached as it was")
				assert.NotEmpty(t, errs.all(), "the failure is reported")

				failB.Store(false)
				src.Update(pod("ns", "b"))
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), cacheKeys(inf))
				assert.Equal(t, sourceKeys(src), v.keys())
			})
		})
	}
}

// An informer of a k8s.io/api type made without WithName calls its
// resource by its name in errors and logs ("objects" before), and says
// what to do when a transform comes too late.
func TestDefaultNameIsTheResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.FailWatch(errors.New("boom")) // the streaming list
		inf := informer.New[*corev1.Pod](src, informer.WithLogger[*corev1.Pod](slog.New(slog.DiscardHandler)))
		defer start(t, inf)()
		synctest.Wait()
		require.Error(t, inf.LastError())
		assert.Contains(t, inf.LastError().Error(), "pods")
		err := inf.SetTransform(nil)
		assert.ErrorIs(t, err, informer.ErrStarted)
		assert.ErrorContains(t, err, "before Run")
	})
}

// Only the initial list's own delta of an object is in the initial list.
// An object of the first list deleted and created again while its key
// waited in the FIFO came to the handlers as Delete, then an Add said to be
// in the initial list, though the watch had brought it: a handler that
// skips what already existed skipped a new object. client-go's flags it
// false.
func TestAnObjectCreatedDuringTheInitialSyncIsNotInTheInitialList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		for _, name := range []string{"a", "b"} {
			src.Create(pod("ns", name))
		}
		gate := make(chan struct{})
		var held sync.Once
		hold := func(*corev1.Pod) ([]string, error) { held.Do(func() { <-gate }); return nil, nil }
		inf := informer.New[*corev1.Pod](src,
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"hold": hold}))
		v := newView(t)
		inf.AddEventHandler(v)
		defer start(t, inf)()
		synctest.Wait() // listed, watching, and held at the first object
		src.Delete("ns/b")
		src.Create(pod("ns", "b"))
		synctest.Wait() // the watch's DELETED and ADDED wait behind b's Replaced
		close(gate)
		synctest.Wait()
		calls := v.calls()
		require.Len(t, calls, 4, "%q", calls)
		assert.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "delete b unknown=false", "add b@4 initial=false"}, calls)
	})
}

// prunedLW lists src's objects without their labels once pruned is set:
// a server that now serves the objects otherwise under the same
// resourceVersions, as kube-apiserver does after a CRD's new schema
// prunes a field.
type prunedLW struct {
	*fakelw.Source[*corev1.Pod]
	pruned *atomic.Bool
}

func (l prunedLW) List(ctx context.Context, o reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	return l.Source.List(ctx, o, func(p *corev1.Pod) error {
		if l.pruned.Load() {
			p = p.DeepCopy() // the Source's own is the cached one
			p.Labels = nil
		}
		return add(p)
	})
}

// A relist that finds an object served otherwise under the same
// resourceVersion changes the cache, and the handlers hear of it: they
// heard nothing, and kept the state the cache no longer held (found by a
// review helper against kube-apiserver, after a CRD's schema dropped a
// field).
func TestRelistOfAnObjectServedOtherwiseIsAnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		a := pod("ns", "a")
		a.Labels = map[string]string{"app": "web"}
		src.Create(a)
		src.Create(pod("ns", "b"))
		pruned := new(atomic.Bool)
		inf := informer.New[*corev1.Pod](prunedLW{src, pruned},
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		var mu sync.Mutex
		var updates []string
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			UpdateFunc: func(old, cur *corev1.Pod) {
				mu.Lock()
				defer mu.Unlock()
				updates = append(updates, fmt.Sprintf("%s %v->%v", cur.Name, old.Labels, cur.Labels))
			},
		})
		defer start(t, inf)()
		synctest.Wait()
		require.True(t, inf.HasSynced())

		pruned.Store(true)
		src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		src.Compact()
		time.Sleep(time.Minute)
		synctest.Wait()
		cached, _ := inf.Indexer().GetByKey("ns/a")
		assert.Empty(t, cached.Labels, "the cache holds what the server serves")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{"a map[app:web]->map[]"}, updates, "b is unchanged: nothing told")
	})
}
