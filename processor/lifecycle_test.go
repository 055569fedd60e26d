// Tests of the life of listeners and of the Processor: added before and
// during Run, removed, stopped with Run, used concurrently.

package processor_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/processor"
)

func TestRemoveListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		var inHandler, handlerReturned atomic.Bool
		removed := &recorder{before: func(line string) {
			if line == "Add ns/a 1" {
				inHandler.Store(true)
				defer handlerReturned.Store(true)
				release.wait()
			}
		}}
		stays := &recorder{}
		l := p.AddListener(removed, processor.ListenerOptions{})
		p.AddListener(stays, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("a", "1", false), false)
		p.Distribute(addOf("b", "1", false), false) // still pending when removed
		synctest.Wait()
		if !inHandler.Load() {
			t.Fatal("handler not called")
		}

		p.RemoveListener(l) // returns at once; the call in progress goes on
		synctest.Wait()
		if closed(l.Stopped()) {
			t.Fatal("Stopped closed while the handler was still running")
		}
		release.open()
		<-l.Stopped()
		if !handlerReturned.Load() {
			t.Fatal("Stopped closed before the handler returned")
		}

		p.Distribute(addOf("c", "1", false), false)
		l.Add(addOf("d", "1", false)) // does nothing, does not block
		synctest.Wait()
		checkLines(t, "removed listener", removed, []string{"Add ns/a 1"})
		checkLines(t, "remaining listener", stays, []string{"Add ns/a 1", "Add ns/b 1", "Add ns/c 1"})
		if got := l.Pending(); got != 0 {
			t.Errorf("removed listener has %d pending, want 0", got)
		}

		p.RemoveListener(l) // idempotent
		processor.New[*corev1.Pod]().RemoveListener(l)
		p.RemoveListener(nil)
	})
}

// A handler may remove its own listener, two handlers may remove each
// other, and the error handler may remove the listener whose handler
// panicked: RemoveListener does not wait, so none of them waits for itself
// (each used to hang).
func TestRemoveListenerFromHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *processor.Processor[*corev1.Pod]
		var panicky *processor.Listener[*corev1.Pod]
		p = processor.New[*corev1.Pod](processor.WithErrorHandler(func(error) { p.RemoveListener(panicky) }))
		stop := run(p)
		defer stop()

		var self, a, b *processor.Listener[*corev1.Pod]
		selfR := &recorder{before: func(string) { p.RemoveListener(self) }}
		var bothIn sync.WaitGroup // a and b each remove the other while both are in a call
		bothIn.Add(2)
		aR := &recorder{before: func(string) { bothIn.Done(); bothIn.Wait(); p.RemoveListener(b) }}
		bR := &recorder{before: func(string) { bothIn.Done(); bothIn.Wait(); p.RemoveListener(a) }}
		panickyR := &recorder{before: func(string) { panic("oops") }}
		self = p.AddListener(selfR, processor.ListenerOptions{})
		a = p.AddListener(aR, processor.ListenerOptions{})
		b = p.AddListener(bR, processor.ListenerOptions{})
		panicky = p.AddListener(panickyR, processor.ListenerOptions{})
		stays := &recorder{}
		p.AddListener(stays, processor.ListenerOptions{})

		p.Distribute(addOf("a", "1", false), false)
		for _, l := range []*processor.Listener[*corev1.Pod]{self, a, b, panicky} {
			<-l.Stopped() // in the bubble, a hang fails the test
		}
		p.Distribute(addOf("b", "1", false), false)
		synctest.Wait()
		checkLines(t, "a handler that removed itself", selfR, []string{"Add ns/a 1"})
		checkLines(t, "a handler that removed another", aR, []string{"Add ns/a 1"})
		checkLines(t, "the handler it removed, which removed it", bR, []string{"Add ns/a 1"})
		checkLines(t, "the panicking handler", panickyR, nil)
		checkLines(t, "the listener that stays", stays, []string{"Add ns/a 1", "Add ns/b 1"})
	})
}

// Stopped closes for every listener when Run returns, and at once for a
// listener that never started.
func TestStoppedWhenRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		neverRun := p.AddListener(&recorder{}, processor.ListenerOptions{})
		p.RemoveListener(neverRun)
		if !closed(neverRun.Stopped()) {
			t.Error("a listener removed before Run: Stopped not closed")
		}
		release := make(gate)
		busy := p.AddListener(&recorder{before: func(string) { release.wait() }}, processor.ListenerOptions{})
		stop := run(p)
		idle := p.AddListener(&recorder{}, processor.ListenerOptions{})
		p.Distribute(addOf("a", "1", false), false)
		synctest.Wait()
		if closed(busy.Stopped()) || closed(idle.Stopped()) {
			t.Fatal("Stopped closed while Run is going")
		}
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			stop()
		}()
		synctest.Wait()
		if !closed(idle.Stopped()) {
			t.Error("a listener with nothing to handle: Stopped not closed once Run stopped it")
		}
		if closed(busy.Stopped()) {
			t.Error("Stopped closed while the handler was still running")
		}
		release.open()
		<-stopped
		if !closed(busy.Stopped()) {
			t.Error("Stopped not closed after Run returned")
		}
		late := p.AddListener(&recorder{}, processor.ListenerOptions{})
		if !closed(late.Stopped()) {
			t.Error("a listener added after Run returned: Stopped not closed")
		}
	})
}

// Run with a context that has ended already starts nothing: its listeners
// are stopped without a call to their handlers.
func TestRunWithAnEndedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{}, addOf("a", "1", true))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		p.Run(ctx)
		if !closed(l.Stopped()) {
			t.Error("Stopped not closed")
		}
		checkLines(t, "listener of a Processor run with an ended context", r, nil)
	})
}

func TestRemoveListenerBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		p.Distribute(addOf("a", "1", false), false)
		p.RemoveListener(l)
		stop := run(p)
		p.Distribute(addOf("b", "1", false), false)
		synctest.Wait()
		stop()
		checkLines(t, "listener removed before Run", r, nil)
	})
}

func TestListenersAddedBeforeAndDuringRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		early, late := &recorder{}, &recorder{}
		p.AddListener(early, processor.ListenerOptions{})
		p.Distribute(addOf("a", "1", true), false) // buffered until Run
		synctest.Wait()
		checkLines(t, "listener before Run", early, nil)

		stop := run(p)
		defer stop()
		p.Distribute(updateOf("a", "1", "2"), false)
		ll := p.AddListener(late, processor.ListenerOptions{})
		ll.Add(addOf("a", "2", true)) // replay of the cache, to this listener only
		p.Distribute(updateOf("a", "2", "3"), false)
		synctest.Wait()
		checkLines(t, "listener added before Run", early, []string{"Add ns/a 1 initial", "Update ns/a 1->2", "Update ns/a 2->3"})
		checkLines(t, "listener added during Run", late, []string{"Add ns/a 2 initial", "Update ns/a 2->3"})
	})
}

func TestRunWaitsForEveryGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		var handlerReturned atomic.Bool
		p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) {
				defer handlerReturned.Store(true)
				release.wait()
			},
		}, processor.ListenerOptions{})
		p.AddListener(&recorder{}, processor.ListenerOptions{})

		ctx, cancel := context.WithCancel(context.Background())
		runDone := make(chan struct{})
		go func() {
			defer close(runDone)
			p.Run(ctx)
		}()
		p.Distribute(addOf("a", "1", false), false)
		p.Distribute(addOf("b", "1", false), false) // pending, to be dropped
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-runDone:
			t.Fatal("Run returned while a handler was still running")
		default:
		}
		release.open()
		<-runDone
		if !handlerReturned.Load() {
			t.Fatal("Run returned before the handler")
		}
		// The pop and run goroutines of both listeners must have exited
		// too: synctest.Test fails if any goroutine of the bubble is left.
	})
}

func TestAfterRunNothingBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		stop()

		// In the bubble, blocking here for ever would fail the test.
		p.Distribute(addOf("a", "1", false), false)
		l.Add(addOf("b", "1", false))
		late := &recorder{}
		ll := p.AddListener(late, processor.ListenerOptions{})
		ll.Add(addOf("c", "1", false))
		p.Distribute(addOf("d", "1", false), false)
		p.Run(context.Background()) // a second Run returns at once
		synctest.Wait()
		checkLines(t, "listener after Run", r, nil)
		checkLines(t, "listener added after Run", late, nil)
		if l.Pending() != 0 || ll.Pending() != 0 {
			t.Errorf("Pending after Run = %d, %d; want 0, 0", l.Pending(), ll.Pending())
		}
		p.RemoveListener(ll)
	})
}

// A listener added after Run has returned never syncs, even with no
// initial notifications and the upstream synced: it never handles
// anything, so the answer must not depend on whether there was anything
// to handle.
func TestListenerAddedAfterRunNeverSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool { return true }))
		stop := run(p)
		stop()

		l := p.AddListener(&recorder{}, processor.ListenerOptions{})
		synctest.Wait()
		if l.HasSynced() {
			t.Error("a listener added after Run has returned reports synced")
		}
		<-l.Stopped()
		select {
		case <-l.Synced():
			t.Error("the Synced of a listener added after Run has returned is closed")
		default:
		}
	})
}

func TestInvalidInputIsHarmless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs errorLog
		p := processor.New[*corev1.Pod](processor.WithErrorHandler(errs.report), nil) // a nil Option is skipped
		nilHandler := p.AddListener(nil, processor.ListenerOptions{MaxPending: -1})
		emptyFuncs := p.AddListener(processor.HandlerFuncs[*corev1.Pod]{}, processor.ListenerOptions{})
		// Nil pointers ignore everything too, as a nil Handler does.
		nilFuncs := p.AddListener((*processor.HandlerFuncs[*corev1.Pod])(nil), processor.ListenerOptions{})
		nilRecorder := p.AddListener((*recorder)(nil), processor.ListenerOptions{})
		filteringNil := p.AddListener(processor.FilteringHandler[*corev1.Pod]{Handler: (*recorder)(nil)}, processor.ListenerOptions{})
		r := &recorder{}
		rl := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(note{}, false)                      // no Kind: dropped
		p.Distribute(note{Kind: 42, Key: "ns/a"}, false) // unknown Kind: dropped
		p.Distribute(addOf("a", "1", false), false)      // fine
		p.Distribute(updateOf("a", "1", "2"), false)     // fine
		p.Distribute(deleteOf("a", "2", false), false)   // fine
		synctest.Wait()
		if got := errs.all(); len(got) != 0 {
			t.Errorf("errors: %v", got)
		}
		checkLines(t, "recorder", r, []string{"Add ns/a 1", "Update ns/a 1->2", "Delete ns/a 2"})
		for _, l := range []*processor.Listener[*corev1.Pod]{nilHandler, emptyFuncs, nilFuncs, nilRecorder, filteringNil, rl} {
			if l.Pending() != 0 {
				t.Errorf("%d pending", l.Pending())
			}
		}
	})
}

func TestZeroProcessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p processor.Processor[*corev1.Pod]
		r := &recorder{}
		p.AddListener(r, processor.ListenerOptions{})
		stop := run(&p)
		p.Distribute(addOf("a", "1", false), false)
		synctest.Wait()
		stop()
		checkLines(t, "listener of a zero Processor", r, []string{"Add ns/a 1"})
	})
}

// TestConcurrentUse distributes from several goroutines while listeners
// come and go. It checks, with -race, that nothing races or deadlocks, that
// each listener sees each distributor's notifications in order, and that a
// listener there from the start (unbounded) gets every one of them.
func TestConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		stop := run(p)
		defer stop()
		always := &checker{t: t, last: map[string]int{}, count: map[string]int{}}
		p.AddListener(always, processor.ListenerOptions{})
		const distributors, each = 4, 500
		var wg sync.WaitGroup
		for d := range distributors {
			wg.Go(func() {
				for i := range each {
					p.Distribute(updateOf(fmt.Sprint("d", d), fmt.Sprint(i), fmt.Sprint(i+1)), false)
				}
			})
		}
		wg.Go(func() {
			for i := range 50 {
				r := &checker{t: t, last: map[string]int{}, count: map[string]int{}}
				l := p.AddListener(r, processor.ListenerOptions{MaxPending: i % 3})
				p.ShouldResync(time.Now())
				p.Distribute(updateOf("resync", "0", "0"), true)
				_ = l.HasSynced()
				_ = l.Pending()
				_ = p.MinResyncPeriod()
				p.RemoveListener(l)
			}
		})
		wg.Wait()
		synctest.Wait() // every notification handled
		always.mu.Lock()
		defer always.mu.Unlock()
		for d := range distributors {
			name := fmt.Sprint("d", d)
			if got, n := always.last[name], always.count[name]; got != each || n != each {
				t.Errorf("%s: the listener there from the start got %d updates, the last to %d; want %d, to %d", name, n, got, each, each)
			}
		}
	})
}

// checker is a Handler that fails the test if the updates of one key do not
// come in order of their new resourceVersion.
type checker struct {
	t     *testing.T
	mu    sync.Mutex
	last  map[string]int
	count map[string]int // updates per name
}

func (c *checker) OnAdd(*corev1.Pod, bool)    {}
func (c *checker) OnDelete(*corev1.Pod, bool) {}
func (c *checker) OnUpdate(_, n *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rv int
	fmt.Sscan(n.ResourceVersion, &rv)
	if prev, ok := c.last[n.Name]; ok && rv <= prev && n.Name != "resync" {
		c.t.Errorf("%s: update to %d after %d", n.Name, rv, prev)
	}
	c.last[n.Name] = rv
	c.count[n.Name]++
}

// A listener that has handled its initial list, with the upstream synced,
// reports HasSynced == true; removed before its own goroutine got round to
// closing Synced, it must stay synced and close Synced (HasSynced turned
// false again, and Synced never closed).
func TestListenerRemovedJustAfterItSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		hookIn, hookRelease := make(chan struct{}), make(chan struct{})
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
			if armed.CompareAndSwap(true, false) { // the listener's own check after its last initial Add
				close(hookIn)
				<-hookRelease
			}
			return true
		}))
		h := processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { armed.Store(true) }}
		l := p.AddListener(h, processor.ListenerOptions{}, addOf("a", "1", true))
		stop := run(p)
		defer stop()

		<-hookIn // the handler returned; the listener is about to close Synced
		if !l.HasSynced() {
			t.Fatal("HasSynced false after the initial list was handled")
		}
		p.RemoveListener(l)
		close(hookRelease)
		<-l.Stopped()
		if !l.HasSynced() {
			t.Error("HasSynced went from true back to false")
		}
		select {
		case <-l.Synced():
		default:
			t.Error("HasSynced was true, but Synced never closes")
		}
	})
}

// An error handler that ends its goroutine (runtime.Goexit, as t.Fatal
// does) while reporting a handler panic: another goroutine takes over, as
// for the handler's own Goexit (nothing more was delivered, and Stopped
// never closed).
func TestErrorHandlerGoexitDoesNotStopTheListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod](processor.WithErrorHandler(func(error) { runtime.Goexit() }))
		r := &recorder{before: func(line string) {
			if line == "Add ns/a 1" {
				panic("boom")
			}
		}}
		l := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		defer stop()
		p.Distribute(addOf("a", "1", false), false)
		p.Distribute(addOf("b", "1", false), false)
		synctest.Wait()
		checkLines(t, "listener", r, []string{"Add ns/b 1"})
		p.RemoveListener(l)
		synctest.Wait()
		select {
		case <-l.Stopped():
		default:
			t.Error("Stopped never closes")
		}
	})
}

// The other order of TestListenerRemovedJustAfterItSynced: the upstream
// syncs while RemoveListener asks it, and someone calls HasSynced in
// between. The listener was not known to be synced before it began to
// stop, so it never syncs: HasSynced says false in between and after, and
// Synced never closes.
func TestListenerRemovedWhileTheUpstreamSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream, armed atomic.Bool
		hookIn, hookRelease := make(chan struct{}), make(chan struct{})
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
			v := upstream.Load()
			if armed.CompareAndSwap(true, false) { // RemoveListener's call
				close(hookIn)
				<-hookRelease
			}
			return v
		}))
		l := p.AddListener(&recorder{}, processor.ListenerOptions{}) // no initial list
		stop := run(p)
		defer stop()
		synctest.Wait()

		armed.Store(true)
		removed := make(chan struct{})
		go func() { defer close(removed); p.RemoveListener(l) }()
		<-hookIn
		upstream.Store(true) // the upstream syncs now
		p.CheckSynced()      // as the informer does
		if l.HasSynced() {
			t.Error("HasSynced true while stop has still to decide")
		}
		close(hookRelease)
		<-removed
		<-l.Stopped()
		if l.HasSynced() || closed(l.Synced()) {
			t.Error("a listener that began to stop before its upstream synced synced")
		}
	})
}

// A listener removed while its upstream hands out the last notification
// of the initial list syncs only if its handler got the whole list.
// (The upstream here plays the informer's loop, which goes on while
// RemoveListener runs: when asked, it has just distributed the list's
// last Add and synced. Asked only once the listener no longer received,
// as it was, the listener synced on a list whose last Add passed it by.)
func TestListenerRemovedBeforeTheLastInitialAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, arm := syncingWhenAsked()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		defer stop()
		p.Distribute(addOf("a", "1", true), false)
		synctest.Wait()
		arm()
		p.RemoveListener(l)
		<-l.Stopped()
		checkSyncedOnlyWithAll(t, l, r, 2)
	})
}

// The same when the Processor stops (asked only once it had stopped, the
// upstream synced on a list whose last Add the Processor dropped).
func TestProcessorStoppedBeforeTheLastInitialAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, arm := syncingWhenAsked()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { defer close(ran); p.Run(ctx) }()
		p.Distribute(addOf("a", "1", true), false)
		synctest.Wait()
		arm()
		cancel()
		<-ran
		checkSyncedOnlyWithAll(t, l, r, 2)
	})
}

// syncingWhenAsked returns a Processor whose upstream, once armed, answers
// the first time it is asked by distributing the initial list's last Add
// ("b") and syncing; unarmed, it has not synced.
func syncingWhenAsked() (p *processor.Processor[*corev1.Pod], arm func()) {
	var armed, upstream atomic.Bool
	var once sync.Once
	p = processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
		if armed.Load() {
			once.Do(func() {
				p.Distribute(addOf("b", "1", true), false)
				upstream.Store(true)
			})
		}
		return upstream.Load()
	}))
	return p, func() { armed.Store(true) }
}

// checkSyncedOnlyWithAll checks a stopped listener: synced only if its
// handler handled all n notifications of the initial list (whether it
// got the last ones before it stopped is a race), and Synced closed if
// and only if it synced.
func checkSyncedOnlyWithAll(t *testing.T, l *processor.Listener[*corev1.Pod], r *recorder, n int) {
	t.Helper()
	synced := l.HasSynced()
	if synced != closed(l.Synced()) {
		t.Errorf("HasSynced %v, Synced closed %v", synced, closed(l.Synced()))
	}
	if synced && len(r.lines()) < n {
		t.Errorf("synced after handling %q of an initial list of %d", r.lines(), n)
	}
}

// A listener removed just as its upstream syncs settles Synced before it
// closes Stopped, so a waiter that sees Stopped closed (informer.WaitForSync)
// does not report "stopped before it synced" for a listener whose
// HasSynced then turns true.
func TestStoppedClosesAfterSyncedIsSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream, armed atomic.Bool
		hookIn, hookRelease := make(chan struct{}), make(chan struct{})
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
			v := upstream.Load()
			if armed.CompareAndSwap(true, false) { // stop's call
				close(hookIn)
				<-hookRelease
			}
			return v
		}))
		l := p.AddListener(&recorder{}, processor.ListenerOptions{}) // no initial list
		stop := run(p)
		defer stop()
		synctest.Wait()

		upstream.Store(true) // synced, and nobody has asked the listener since
		armed.Store(true)
		removed := make(chan struct{})
		go func() { defer close(removed); p.RemoveListener(l) }()
		<-hookIn // stop is asking the upstream
		synctest.Wait()
		if closed(l.Stopped()) && !closed(l.Synced()) {
			t.Error("Stopped closed while Synced was still to be decided")
		}
		close(hookRelease)
		<-removed
		<-l.Stopped()
		if !closed(l.Synced()) || !l.HasSynced() {
			t.Error("a listener whose upstream had synced, with no initial list: not synced")
		}
	})
}

// A second RemoveListener, while the first is still asking the upstream
// whether the listener synced, returns with the backlog dropped as the
// first's will be: the handler is not called for it.
func TestSecondRemoveDropsTheBacklogToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		hookIn, hookRelease := make(chan struct{}), make(chan struct{})
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
			if armed.CompareAndSwap(true, false) { // the first stop's call
				close(hookIn)
				<-hookRelease
			}
			return true
		}))
		release := make(gate)
		first := true
		r := &recorder{before: func(string) {
			if first {
				first = false
				release.wait()
			}
		}}
		l := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		defer stop()
		synctest.Wait()
		for i := range 10 {
			p.Distribute(addOf(fmt.Sprint("p", i), "1", false), false)
		}
		synctest.Wait() // the handler is in its first call, 9 more wait
		armed.Store(true)
		go p.RemoveListener(l)
		<-hookIn
		p.RemoveListener(l) // returns at once
		release.open()
		synctest.Wait()
		if n := len(r.lines()); n != 1 {
			t.Errorf("handler called %d times, want only the call in progress", n)
		}
		close(hookRelease)
		<-l.Stopped()
	})
}

// An upstream that panics when a listener stops does not leave the
// listener running, nor end Run with others running: the panic is logged
// and the listener counts as not synced. Here one listener removes itself
// from its handler, and the other is stopped by Run.
func TestUpstreamPanickingInStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer // slog's handler writes under its own lock
		var armed atomic.Int32
		p := processor.New[*corev1.Pod](processor.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			processor.WithUpstreamSynced(func() bool {
				if armed.Load() > 0 {
					armed.Add(-1)
					panic("upstream bug")
				}
				return false
			}))
		var l *processor.Listener[*corev1.Pod]
		l = p.AddListener(&recorder{before: func(string) { armed.Store(1); p.RemoveListener(l) }}, processor.ListenerOptions{})
		other := p.AddListener(&recorder{}, processor.ListenerOptions{})
		stop := run(p)
		synctest.Wait()
		p.Distribute(addOf("a", "1", false), false)
		<-l.Stopped()
		armed.Store(1)
		stop() // returns: every listener's goroutines have exited
		<-other.Stopped()
		if l.HasSynced() || other.HasSynced() {
			t.Error("a listener stopped on an upstream that panicked counts as synced")
		}
		if got := strings.Count(logs.String(), "upstream bug"); got != 2 {
			t.Errorf("the upstream's panics logged %d times, want 2:\n%s", got, logs.String())
		}
	})
}

// An upstream that ends the goroutine (runtime.Goexit, as t.FailNow does)
// while Run stops a listener leaves no other listener running, and the
// listener whose upstream never answered counts as not synced for good.
func TestUpstreamEndingTheGoroutineInStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream, armed atomic.Bool
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
			if armed.CompareAndSwap(true, false) {
				runtime.Goexit()
			}
			return upstream.Load()
		}))
		first := p.AddListener(&recorder{}, processor.ListenerOptions{})
		second := p.AddListener(&recorder{}, processor.ListenerOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			p.Run(ctx)
		}()
		synctest.Wait()
		armed.Store(true)
		cancel()
		<-exited // Run's goroutine, ended in the first listener's stop
		<-first.Stopped()
		<-second.Stopped()
		upstream.Store(true)
		if first.HasSynced() || closed(first.Synced()) {
			t.Error("a listener stopped without an answer from its upstream synced afterwards")
		}
	})
}

// A logger that ends the goroutine (runtime.Goexit, as t.FailNow does) as
// Run starts its listeners leaves none of them running once Run's
// goroutine has ended: they stop, and their handlers get nothing more.
// The log call came before Run deferred their stop, and they ran on.
func TestLoggerEndingRunsGoroutineStopsTheListeners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod](processor.WithLogger(slog.New(blockingLog{block: func(msg string) {
			if msg == "processor: running" {
				runtime.Goexit()
			}
		}})))
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			p.Run(t.Context())
		}()
		<-exited
		synctest.Wait()
		if !closed(l.Stopped()) {
			t.Fatal("Run's goroutine has ended, and its listener is not stopped")
		}
		p.Distribute(addOf("a", "1", false), false)
		synctest.Wait()
		if got := r.lines(); len(got) != 0 {
			t.Errorf("after Run's goroutine ended, the handler got %q", got)
		}
	})
}

// A logger that ends the goroutine of a listener's handler as it logs
// that the listener started does not silence the listener: another
// goroutine takes over, as for a handler's Goexit. The log call came
// before the goroutine that takes over was arranged, and the listener
// never delivered anything, nor closed Stopped.
func TestLoggerEndingAListenersGoroutineAsItStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod](processor.WithLogger(slog.New(blockingLog{block: func(msg string) {
			if msg == "processor: listener started" {
				runtime.Goexit()
			}
		}})))
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		p.Distribute(addOf("a", "1", false), false)
		synctest.Wait()
		if got := r.lines(); len(got) != 1 {
			t.Errorf("the handler got %q, want the Add of ns/a", got)
		}
		stop()
		if !closed(l.Stopped()) {
			t.Error("Stopped not closed after Run returned")
		}
	})
}

// An upstream that panics when the listener's own goroutine asks it (an
// initial notification handled) is logged; the listener goes on.
func TestUpstreamPanickingOnTheListenersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var armed atomic.Bool
		p := processor.New[*corev1.Pod](processor.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			processor.WithUpstreamSynced(func() bool {
				if armed.Load() {
					panic("upstream bug")
				}
				return false
			}))
		r := &recorder{}
		p.AddListener(r, processor.ListenerOptions{}, addOf("a", "1", true))
		armed.Store(true)
		stop := run(p)
		synctest.Wait()
		armed.Store(false)
		p.Distribute(addOf("b", "1", false), false)
		synctest.Wait()
		stop()
		checkLines(t, "listener", r, []string{"Add ns/a 1 initial", "Add ns/b 1"})
		if !strings.Contains(logs.String(), "upstream bug") {
			t.Errorf("the upstream's panic not logged:\n%s", logs.String())
		}
	})
}
