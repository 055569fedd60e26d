package processor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Processor fans notifications out to a set of Listeners, one per Handler.
// The informer calls Distribute for every change it applies to its cache and
// ShouldResync on every resync tick; Run keeps the listeners' goroutines
// going until its context ends.
//
// The zero value is a Processor with default options, ready to use. All
// methods are safe for concurrent use.
type Processor[T metav1.Object] struct {
	cfg config

	mu    sync.RWMutex
	state runState
	// listeners and syncing are never changed below their length, so
	// Distribute can range over them after releasing mu: AddListener
	// appends (in place when there is room, past the end of every copy a
	// reader may hold, so adding L listeners costs O(L)), RemoveListener
	// and ShouldResync make new slices.
	listeners []*Listener[T]
	syncing   []*Listener[T] // the listeners picked by the last ShouldResync that picked any
	added     int            // listeners added so far, to number them

	wg sync.WaitGroup // every goroutine of every started listener
}

// runState is the life of a Processor, and of a Listener: idle until Run,
// running until its context ends (or the listener is removed), then stopped
// for good.
type runState uint32

const (
	idle runState = iota
	running
	stopped
)

// New returns a Processor with no listeners.
func New[T metav1.Object](opts ...Option) *Processor[T] {
	p := &Processor[T]{}
	for _, o := range opts {
		if o != nil {
			o(&p.cfg)
		}
	}
	return p
}

// AddListener adds a Listener that calls h. If Run is going, the listener
// starts at once; before Run, it buffers what it is given and starts with
// Run; after Run has returned, it never starts, drops everything and never
// syncs. A nil h, or a nil pointer in h, ignores every notification.
//
// The listener first gets the initial notifications, if any, and then only
// notifications distributed after AddListener returns. To bring a late
// handler up to date, pass the current state as initial Adds with
// IsInInitialList set: they are counted before the listener can handle any
// of them, so its HasSynced (and Synced) wait for all of them.
func (p *Processor[T]) AddListener(h Handler[T], opts ListenerOptions, initial ...Notification[T]) *Listener[T] {
	if isNilHandler(h) {
		h = HandlerFuncs[T]{}
	}
	p.mu.Lock()
	p.added++
	l := newListener(&p.cfg, fmt.Sprintf("listener %d (%T)", p.added, h), h, opts)
	l.owner = p
	if l.resyncPeriod > 0 {
		l.nextResync = time.Now().Add(l.resyncPeriod)
	}
	for _, n := range initial {
		l.Add(n) // the listener is idle: into its early buffer
	}
	over := p.state == stopped
	if !over { // a stopped Processor keeps no new listener
		p.listeners = append(p.listeners, l)
	}
	if p.state == running {
		l.start(&p.wg)
	}
	p.mu.Unlock()
	// Unlocked: both ask the upstream, which is user code.
	if over {
		// It never handles anything, so it never syncs, even with no
		// initial notifications and the upstream synced: the same
		// answer whatever the cache held when it was added.
		l.syncedOnce.Do(func() { l.stoppedUnsynced.Store(true) })
		l.beginStop()
		l.stop(false)
	}
	l.checkSynced()
	return l
}

// CheckSynced closes the Synced channel of every listener that HasSynced.
// The upstream calls it once, when it has synced (see WithUpstreamSynced):
// a listener that handled its initial notifications before that has no
// other moment to notice.
func (p *Processor[T]) CheckSynced() {
	p.mu.RLock()
	ls := p.listeners
	p.mu.RUnlock()
	for _, l := range ls {
		l.checkSynced()
	}
}

// Run starts the goroutines of every listener and keeps starting those added
// later, until ctx ends. Then it stops every listener, dropping the
// notifications they have not handled, and returns once all the goroutines it
// started have exited, which includes waiting for handler calls in progress
// to return.
//
// Run is meant to be called once; a call while Run is going or after it has
// returned returns at once. A ctx that has ended already starts nothing:
// the listeners are stopped as they are. After Run has returned, Distribute
// and Listener.Add do nothing. A nil ctx runs nothing (an error is logged).
func (p *Processor[T]) Run(ctx context.Context) {
	if ctx == nil {
		p.cfg.log().Error("processor: Run with a nil context: nothing run")
		return
	}
	p.mu.Lock()
	if p.state != idle {
		p.mu.Unlock()
		return
	}
	up := false
	// Deferred before any user code runs (the logger, the upstream), so
	// that one that ends the goroutine (runtime.Goexit) leaves no
	// listener running: they stop, not synced.
	defer func() {
		p.mu.Lock()
		p.state = stopped
		ls := p.listeners
		for _, l := range ls {
			l.beginStop() // those added meanwhile
		}
		p.mu.Unlock()
		// Waited for in a deferred call, so that a logger that ends the
		// goroutine as a listener stops does not make Run return before
		// a handler call in progress has. Listeners removed meanwhile are
		// counted in wg too: none escapes.
		defer func() {
			p.wg.Wait()
			p.cfg.log().Debug("processor: stopped")
		}()
		stopAll(ls, up)
	}()
	if ctx.Err() == nil {
		p.state = running
		for _, l := range p.listeners {
			l.start(&p.wg)
		}
		p.mu.Unlock()
		p.cfg.log().Debug("processor: running")
		<-ctx.Done()
		p.mu.Lock()
	}
	// Whether each listener synced is decided by whether the upstream had
	// synced while the listener still received notifications (see
	// Listener.stop): the listeners are marked as stopping, the upstream
	// is asked, and only then do they stop receiving.
	for _, l := range p.listeners {
		l.beginStop()
	}
	p.mu.Unlock()
	up = p.cfg.syncedFor("processor") // unlocked: user code
}

// stopAll stops every listener of ls, each in a deferred call, so that a
// logger that ends the goroutine while one stops (runtime.Goexit) does not
// leave the others running.
func stopAll[T metav1.Object](ls []*Listener[T], up bool) {
	if len(ls) == 0 {
		return
	}
	defer stopAll(ls[1:], up)
	ls[0].stop(up)
}

// Distribute hands n to every listener, or, if isSync, only to the
// listeners picked by the last call to ShouldResync that picked any. It
// does not wait for any handler: each listener takes n into its own
// buffer. Listeners added or removed while Distribute runs may or may not
// get n.
func (p *Processor[T]) Distribute(n Notification[T], isSync bool) {
	p.mu.RLock()
	ls := p.listeners
	if isSync {
		ls = p.syncing
	}
	over := p.state == stopped
	p.mu.RUnlock()
	if over {
		return
	}
	n.resync = isSync
	for _, l := range ls {
		l.Add(n)
	}
}

// ShouldResync picks the listeners whose resync is due at now, schedules
// their next resync at now plus their period, and reports whether it picked
// any. From then on, calls to Distribute with isSync set reach only the
// picked listeners, until a later call picks others: a call that picks
// none leaves them be, so a resync whose Syncs take longer to hand out
// than the caller's interval between checks reaches its listeners whole.
// (Syncs still queued from one resync when the next picks other listeners
// go to those; as in client-go, resyncs are not meant to overlap.) A
// listener's first resync is due one period after AddListener (by
// time.Now). A listener whose handler has not yet handled every
// notification of its last resync is not picked: it stays due, and is
// picked by the first call after it has caught up (client-go queues the
// whole cache again behind the last, so a handler slower than its period
// falls behind for ever). Picked then, it replaces the listeners picked
// before, as any pick does: Syncs of their resync still to be handed out
// go to it instead.
func (p *Processor[T]) ShouldResync(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var due []*Listener[T]
	for _, l := range p.listeners {
		if l.resyncPeriod > 0 && !now.Before(l.nextResync) {
			if l.resyncsLeft.Load() > 0 {
				// Its handler is still behind the last resync: another
				// would queue the whole cache again behind it, and again
				// every period, for ever. It stays due.
				continue
			}
			due = append(due, l)
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	if len(due) == 0 {
		return false
	}
	p.syncing = due
	return true
}

// MinResyncPeriod returns the smallest resync period among the listeners, 0
// if none resyncs. (The informer asks ShouldResync once a second while it
// is not 0, so that a handler added later with a shorter period is not
// kept waiting.)
func (p *Processor[T]) MinResyncPeriod() time.Duration {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var least time.Duration
	for _, l := range p.listeners {
		if l.resyncPeriod > 0 && (least == 0 || l.resyncPeriod < least) {
			least = l.resyncPeriod
		}
	}
	return least
}

// RemoveListener stops l, dropping the notifications it has not handled,
// and returns at once: the handler call in progress, if any, goes on, and
// l.Stopped is closed when it returns. A call about to begin as l is
// removed may also begin just after RemoveListener returns (from another
// goroutine than l's handler): only Stopped says that the handler will not
// be called again. It may be called from any handler,
// l's own included. Removing a listener twice, or one that belongs to
// another Processor, does nothing.
func (p *Processor[T]) RemoveListener(l *Listener[T]) {
	if l == nil || l.owner != p {
		return
	}
	// Marked as stopping, and the upstream asked, while l still receives
	// notifications (see Listener.stop); removed in a deferred call, so
	// that an upstream that ends the goroutine (runtime.Goexit) does not
	// leave l running.
	l.beginStop()
	up := false
	defer func() {
		p.mu.Lock()
		isL := func(x *Listener[T]) bool { return x == l }
		p.listeners = slices.DeleteFunc(slices.Clone(p.listeners), isL)
		p.syncing = slices.DeleteFunc(slices.Clone(p.syncing), isL)
		p.mu.Unlock()
		l.stop(up)
	}()
	up = l.upstreamSynced() // unlocked: user code
}
