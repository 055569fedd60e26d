package processor

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MinimumResyncPeriod is the shortest resync period a listener can have: a
// shorter non-zero ListenerOptions.ResyncPeriod is raised to it.
const MinimumResyncPeriod = time.Second

// ListenerOptions configures one Listener. The zero value means no resync
// and an unbounded buffer.
type ListenerOptions struct {
	// ResyncPeriod is how often the listener gets the whole cache again as
	// Updates (see Processor.ShouldResync). Zero or negative: never. A
	// period below MinimumResyncPeriod is raised to MinimumResyncPeriod.
	// A resync that falls due while the handler is still behind the last
	// one waits until it has caught up: resyncs never pile up behind a
	// slow handler.
	ResyncPeriod time.Duration

	// MaxPending is the length of the listener's buffer past which an
	// incoming Update is merged into a buffered notification of the same
	// object rather than queued, while its handler is behind. Zero or
	// negative: no bound, every notification is buffered and delivered.
	//
	// With MaxPending > 0, when the buffer already holds MaxPending or more
	// notifications, an incoming Update is merged into the latest buffered
	// Add or Update of the same Key, if there is one and no Delete of that
	// Key was buffered after it: Add+Update becomes an Add of the Update's
	// New (IsInInitialList kept), Update+Update an Update from the first Old
	// to the second New. The latest state always wins; nothing else is
	// merged: Adds and Deletes are always buffered, so a Delete is never
	// dropped and an object recreated after a Delete is seen as Delete then
	// Add. Notifications of one Key keep their order; a merged Update takes
	// the place of the notification it merged into, so it may now come
	// before notifications of other keys that it followed. Notifications
	// with an empty Key are never merged.
	//
	// So MaxPending bounds duplicates, not distinct keys: the buffer holds
	// more than MaxPending notifications only while they are Adds, Deletes,
	// or Updates of keys with nothing buffered to merge into.
	MaxPending int
}

// Listener delivers notifications to one Handler, in order, on its own
// goroutines, so that a slow handler delays nobody else:
//
//	Add ─▶ addCh ─▶ pop(): backlog ─▶ nextCh ─▶ run(): Handler
//
// pop always stands ready to receive, so Add never waits for the handler.
// Listeners are made by Processor.AddListener; the zero value is not usable.
// All methods are safe for concurrent use.
type Listener[T metav1.Object] struct {
	owner        *Processor[T]
	cfg          *config
	name         string // "listener N (handler type)", for error reports
	handler      Handler[T]
	maxPending   int
	resyncPeriod time.Duration
	nextResync   time.Time // guarded by owner.mu

	addCh   chan Notification[T] // Add → pop
	nextCh  chan Notification[T] // pop → run; closed when pop returns
	done    chan struct{}        // closed when the listener stops
	stopped chan struct{}        // closed when, after that, the handler's last call has returned

	panics panicLog // how its handler's panics were logged

	mu    sync.Mutex
	state atomic.Uint32   // a runState; changed only under mu
	early *backlog[T]     // what Add got before the start; guarded by mu
	runWG *sync.WaitGroup // the Processor's, which the goroutines count in too; set by start

	pending      atomic.Int64 // notifications received and not yet handled or merged
	initialsLeft atomic.Int64 // of those, the Adds with IsInInitialList
	resyncsLeft  atomic.Int64 // of those, the ones a resync handed out (see ShouldResync)

	synced     chan struct{} // closed once HasSynced is true; see checkSynced
	syncedOnce sync.Once
	// stopping: set before the listener stops receiving notifications;
	// from then on, only stop decides whether it synced (settleSynced)
	stopping atomic.Bool
	// stoppedUnsynced: stopped before Synced closed (set under syncedOnce)
	stoppedUnsynced atomic.Bool
}

func newListener[T metav1.Object](cfg *config, name string, h Handler[T], opts ListenerOptions) *Listener[T] {
	l := &Listener[T]{
		cfg:        cfg,
		name:       name,
		handler:    h,
		maxPending: max(opts.MaxPending, 0),
		addCh:      make(chan Notification[T]),
		nextCh:     make(chan Notification[T]),
		done:       make(chan struct{}),
		stopped:    make(chan struct{}),
		synced:     make(chan struct{}),
	}
	switch {
	case opts.ResyncPeriod <= 0:
	case opts.ResyncPeriod < MinimumResyncPeriod:
		l.resyncPeriod = MinimumResyncPeriod
	default:
		l.resyncPeriod = opts.ResyncPeriod
	}
	l.early = newBacklog[T](l.maxPending)
	return l
}

// Add hands n to this listener only (AddListener hands it the initial
// notifications this way). Like Distribute, it does not wait for the
// handler. It does nothing once the listener is stopped, and drops n if its
// Kind is not Add, Update or Delete.
func (l *Listener[T]) Add(n Notification[T]) {
	if n.Kind < Add || n.Kind > Delete {
		return
	}
	// Count n before anyone can see it, so HasSynced has no window in which
	// an initial notification is neither counted nor handled.
	l.pending.Add(1)
	if n.initial() {
		l.initialsLeft.Add(1)
	}
	if n.resync {
		l.resyncsLeft.Add(1)
	}
	if runState(l.state.Load()) != running {
		l.mu.Lock()
		switch runState(l.state.Load()) {
		case idle:
			if l.early.push(n) {
				l.merged(n)
			}
			l.mu.Unlock()
			return
		case stopped:
			l.mu.Unlock()
			l.forget(n)
			return
		}
		l.mu.Unlock()
	}
	select {
	case l.addCh <- n:
	case <-l.done:
		l.forget(n)
	}
}

// forget takes back the counting of a notification, once it is handled or
// if it was not taken in.
func (l *Listener[T]) forget(n Notification[T]) {
	l.pending.Add(-1)
	if n.resync {
		l.resyncsLeft.Add(-1)
	}
	if n.initial() && l.initialsLeft.Add(-1) == 0 {
		l.checkSynced()
	}
}

// merged takes back the counting of n, which the backlog merged into a
// notification it holds (see MaxPending): an Update, so never initial.
func (l *Listener[T]) merged(n Notification[T]) {
	l.pending.Add(-1)
	if n.resync {
		l.resyncsLeft.Add(-1)
	}
}

// HasSynced reports whether the upstream has synced (see
// WithUpstreamSynced) and every Add with IsInInitialList that this listener
// received has been handled: its handler call returned or panicked. A
// listener stopped (removed, or its Processor stopped) before both were
// true never reports synced, even if the upstream syncs while it stops:
// the last notifications of the list may have passed it by.
func (l *Listener[T]) HasSynced() bool {
	if l.stoppedUnsynced.Load() {
		return false
	}
	// Upstream first: once it is synced, every initial notification has
	// been counted, so the count read next is final.
	if !l.upstreamSynced() || l.initialsLeft.Load() != 0 {
		return false
	}
	// ... unless the listener stopped receiving before the upstream
	// synced: then an initial notification may have passed it by, never
	// counted. stopping is set before it stops receiving, so read after
	// the two halves it says whether they can be trusted; once it is set,
	// stop decides (settleSynced), and the answer is what it decided, or
	// not yet.
	if l.stopping.Load() {
		return isClosed(l.synced)
	}
	// Synced, unless stop got to syncedOnce first and decided otherwise:
	// true is only ever answered with Synced closed, so a stop that comes
	// later cannot take it back.
	l.syncedOnce.Do(func() { close(l.synced) })
	return !l.stoppedUnsynced.Load()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Synced returns a channel that is closed when HasSynced becomes true. It
// is never closed for a listener stopped before it synced.
//
// Both halves of HasSynced can complete last: the listener closes the
// channel when it finishes its last initial notification, and
// Processor.CheckSynced, which the upstream calls once it has synced,
// closes it for listeners that had finished theirs already.
func (l *Listener[T]) Synced() <-chan struct{} { return l.synced }

// checkSynced closes the synced channel if the listener has synced.
func (l *Listener[T]) checkSynced() { l.HasSynced() }

// Name returns what error reports call the listener: "listener N (handler
// type)", N counting the listeners added to its Processor from 1.
func (l *Listener[T]) Name() string { return l.name }

// Stopped returns a channel that is closed once the listener has stopped
// (removed, or its Processor's Run has returned or is returning) and its
// handler will not be called again: the call in progress when it stopped,
// if any, has returned. RemoveListener does not wait for it; receive from
// Stopped to wait, from anywhere but the listener's own handler.
func (l *Listener[T]) Stopped() <-chan struct{} { return l.stopped }

// Pending returns how many notifications the listener has received and not
// yet finished handling, the one in the handler included, not counting those
// merged into others (see MaxPending). It is a snapshot that may be stale by
// the time it returns. A stopped listener has nothing pending.
func (l *Listener[T]) Pending() int {
	if runState(l.state.Load()) == stopped {
		return 0
	}
	return int(max(l.pending.Load(), 0))
}

// start starts the listener's goroutines, counting them in wg too. It does
// nothing unless the listener is idle.
func (l *Listener[T]) start(wg *sync.WaitGroup) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if runState(l.state.Load()) != idle {
		return
	}
	l.state.Store(uint32(running))
	b := l.early
	l.early = nil
	l.runWG = wg
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.pop(b)
	}()
	l.goRun(true)
}

// beginStop marks the listener as stopping: from here on, stop decides
// whether it synced. It is called before the listener stops receiving
// notifications (taken out of its Processor's listeners, or its Processor
// stopped), and before the upstream is asked for stop's up.
func (l *Listener[T]) beginStop() { l.stopping.Store(true) }

// stop tells the listener's goroutines to exit; it does not wait for them.
// up is whether the upstream had synced, asked after beginStop and before
// the listener stopped receiving notifications: if it had, every initial
// notification had reached the listener (see settleSynced).
func (l *Listener[T]) stop(up bool) {
	l.mu.Lock()
	if runState(l.state.Load()) == stopped {
		l.mu.Unlock()
		return
	}
	wasIdle := runState(l.state.Load()) == idle
	l.state.Store(uint32(stopped)) // from here on, run drops what it is handed
	l.early = nil
	l.mu.Unlock()

	// Synced is settled before the goroutines are told to stop (and an
	// idle listener's Stopped closes), so that a waiter that sees Stopped
	// closed sees Synced settled.
	l.settleSynced(up)
	close(l.done)
	if wasIdle { // no goroutine to close it; and never started, so not logged
		close(l.stopped)
		return
	}
	l.cfg.log().Debug("processor: listener stopped", "listener", l.name)
}

// settleSynced decides, for a listener that is stopping, whether it
// synced: if the upstream had synced before the listener stopped
// receiving (up) and every initial notification it received is handled.
// The upstream is not asked again here: it may have synced since, on a
// list whose last notifications passed the listener by. Stopped before
// Synced closed, the listener never syncs, and HasSynced, which must agree
// with it, never turns true — unless it is true already (both its halves
// only ever turn true), and no call has closed Synced yet: then it closes
// it.
func (l *Listener[T]) settleSynced(up bool) {
	synced := up && l.initialsLeft.Load() == 0
	l.syncedOnce.Do(func() {
		if synced {
			close(l.synced)
		} else {
			l.stoppedUnsynced.Store(true)
		}
	})
}

// upstreamSynced asks the upstream whether it synced (see
// config.upstreamSynced).
func (l *Listener[T]) upstreamSynced() bool { return l.cfg.syncedFor(l.name) }

// pop moves notifications from addCh into the backlog b and from b to
// nextCh, until the listener stops. It always stands ready to receive; the
// send case is switched off, by a nil channel, while b is empty.
func (l *Listener[T]) pop(b *backlog[T]) {
	defer close(l.nextCh)
	for {
		var next chan<- Notification[T] // nil: nothing to send
		var n Notification[T]
		if b.len() > 0 {
			next, n = l.nextCh, b.peek()
		}
		select {
		case next <- n:
			b.pop()
		case in := <-l.addCh:
			if b.push(in) {
				l.merged(in)
			}
		case <-l.done:
			return
		}
	}
}

// goRun starts the goroutine that runs the handler, counted in the
// Processor's wait group. The first one logs that the listener started
// (see run).
func (l *Listener[T]) goRun(first bool) {
	l.runWG.Add(1)
	go func() {
		defer l.runWG.Done()
		l.run(first)
	}()
}

// run calls the handler for each notification pop hands over, until pop
// closes nextCh. Once the listener is stopped (its state, which stop sets
// first), what is left is dropped.
// The goroutine that sees nextCh closed closes stopped: pop has returned,
// and no handler call is left. (A goroutine ended by the handler's
// runtime.Goexit never gets there; the one that takes over does.)
func (l *Listener[T]) run(first bool) {
	ended := false
	defer func() {
		if !ended {
			// runtime.Goexit in the handler, the error handler or the
			// logger is ending this goroutine: another takes over.
			l.goRun(false)
		}
	}()
	if first {
		// Here, a logger that blocks (its handler is user code) holds
		// up this listener's handler alone, where under the locks start
		// is called with (the Processor's, an informer's) it would hold
		// up every listener.
		l.cfg.log().Debug("processor: listener started", "listener", l.name)
	}
	for n := range l.nextCh {
		if runState(l.state.Load()) != stopped {
			l.handle(n)
		}
	}
	ended = true
	close(l.stopped)
}

// handle calls the handler for n, recovering and reporting a panic. A
// handler that ends its goroutine (runtime.Goexit, as t.FailNow does in a
// test) is reported too, and another goroutine takes over (see run), so
// the listener goes on rather than buffering for ever.
func (l *Listener[T]) handle(n Notification[T]) {
	returned := false
	defer func() {
		r := recover()
		l.forget(n) // handled, even if it panicked
		if r == nil && returned {
			return
		}
		if r == nil {
			r = "the handler called runtime.Goexit"
		}
		l.cfg.reportPanic(&HandlerPanicError{
			Processor: l.cfg.name,
			Listener:  l.name,
			Kind:      n.Kind,
			Key:       n.Key,
			Value:     r,
			Stack:     debug.Stack(),
		}, &l.panics)
	}()
	switch n.Kind {
	case Add:
		l.handler.OnAdd(n.New, n.IsInInitialList)
	case Update:
		l.handler.OnUpdate(n.Old, n.New)
	case Delete:
		l.handler.OnDelete(n.Old, n.FinalStateUnknown)
	}
	returned = true
}
