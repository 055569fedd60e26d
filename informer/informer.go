package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// ErrStarted is returned by the methods that may only be called before Run,
// and by a second Run.
var ErrStarted = errors.New("informer already started")

// SharedIndexInformer keeps a local, indexed cache of one resource and tells
// any number of handlers about every change to it. Build one with New (or
// through a Factory), add handlers, and call Run. All methods are safe for
// concurrent use. One not made by New (its zero value) does nothing, and
// says so where it can: Run and AddIndexers return an error, AddEventHandler
// a Registration that holds no handler (WaitForSync refuses it), and its
// cache is empty.
type SharedIndexInformer[T metav1.Object] struct {
	name      string
	lw        reflector.ListerWatcher[T]
	reflOpts  []reflector.Option[T]
	logger    *slog.Logger
	resync    time.Duration // default resync period of handlers
	indexer   *indexer.Indexer[T]
	fifo      *deltafifo.FIFO[T]
	processor *processor.Processor[T]
	mutations *mutationDetector[T] // nil unless WithMutationDetector
	failures  failureLog           // the log of list and watch failures (no error handler)
	stalls    stallLog             // the log of stalled watch streams (no error handler)
	setupErr  error                // what New was given that Run cannot run with

	// blockDeltas is held while a delta is stored in the indexer and
	// distributed, and while a late handler is given the cache: so the
	// handler gets every cached object once and then every later change.
	// No user code runs under it but the objects' metadata getters (it is
	// unlocked in deferred calls): index functions run before, through
	// indexer.Prepare (those of an AddIndexers under way too).
	blockDeltas sync.Mutex

	// stopped is closed when Run has returned, or refused to run for good.
	stopped chan struct{}
	// resyncers is signalled when a handler with a resync period is added,
	// so that resyncLoop starts ticking.
	resyncers chan struct{}
	stopOnce  sync.Once

	ticker func() (<-chan time.Time, func()) // the resync loop's: secondTicker

	mu           sync.Mutex
	started      bool
	transform    func(T) (T, error)
	errorHandler func(error)
	reflector    *reflector.Reflector[T]
}

// New returns an informer that lists and watches through lw. It does nothing
// until Run.
func New[T metav1.Object](lw reflector.ListerWatcher[T], opts ...Option[T]) *SharedIndexInformer[T] {
	o := defaultOptions[T]()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if d, ok := lw.(describer); ok && !o.nameSet && !isNilPointer(lw) {
		o.name = describe[T](d.Resource(), d.Target())
	}
	s := &SharedIndexInformer[T]{
		name:      o.name,
		lw:        lw,
		reflOpts:  o.reflector,
		logger:    o.logger,
		resync:    o.resync,
		indexer:   indexer.New(o.indexers),
		stopped:   make(chan struct{}),
		resyncers: make(chan struct{}, 1),
		ticker:    secondTicker,
	}
	s.setupErr = errors.Join(o.err, checkSetup(lw, o.indexers))
	s.fifo = deltafifo.New(deltafifo.WithKnownObjects[T](s.indexer))
	s.processor = processor.New[T](
		processor.WithName(o.name),
		processor.WithUpstreamSynced(s.HasSynced),
		processor.WithLogger(o.logger),
		processor.WithErrorHandler(o.handlerErrors),
	)
	if o.mutations != nil {
		s.mutations = newMutationDetector(o.name, o.mutations, func(err error) {
			s.logger.Error("cached object modified", "resource", s.name, "err", err)
		})
	}
	return s
}

// describer is a ListerWatcher that says what it lists, as
// reflector.HTTPListerWatcher does.
type describer interface {
	Resource() schema.GroupVersionResource
	Target() reflector.Target
}

// checkSetup returns an error for what New was given that Run cannot run
// with: no ListerWatcher, or an index without a function (every write
// would fail, and the informer would sync with nothing cached).
func checkSetup[T metav1.Object](lw reflector.ListerWatcher[T], ix indexer.Indexers[T]) error {
	if lw == nil || isNilPointer(lw) {
		return errors.New("informer: the ListerWatcher is nil")
	}
	for _, name := range slices.Sorted(maps.Keys(ix)) {
		if ix[name] == nil {
			return fmt.Errorf("informer: index %q has a nil function", name)
		}
	}
	return nil
}

// Run fills the cache and keeps it and the handlers up to date until ctx
// ends. It returns after every goroutine it started has exited. An informer
// runs once: a second call returns ErrStarted. An informer New was given
// nothing to list and watch with, an index without a function, or an index
// named by two WithIndexers, does not run: Run returns the error. So does
// one whose reflector refuses to run (WithReflectorOptions with a Mode
// that is none of reflector's), once it has stopped, and one whose
// reflector or resync goroutine a transform, the ListerWatcher or an error
// handler ended with runtime.Goexit (as t.FailNow does), or whose
// processor's goroutine the logger ended so.
func (s *SharedIndexInformer[T]) Run(ctx context.Context) (err error) {
	switch {
	case ctx == nil:
		return errors.New("informer: Run: nil context")
	case s.fifo == nil:
		return errors.New("informer: Run: a SharedIndexInformer made without New")
	case s.setupErr != nil:
		// The registrations stop too, so that nothing waits for them.
		// Deferred: the processor logs, and the logger is user code.
		defer s.stop()
		ended, cancel := context.WithCancel(ctx)
		cancel()
		s.processor.Run(ended)
		return s.setupErr
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrStarted
	}
	s.started = true
	defer s.stop() // last: after every goroutine has exited
	opts := append([]reflector.Option[T]{
		reflector.WithName[T](s.name),
		reflector.WithLogger[T](s.logger),
		reflector.WithTransform(s.transform),
		reflector.WithErrorHandler[T](s.reportError), // the handler, or else the log
		reflector.WithRecoveredHandler[T](s.recovered),
	}, s.reflOpts...)
	s.reflector = reflector.New(s.lw, reflector.Store[T](s.fifo), opts...)
	refl := s.reflector
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if s.mutations != nil {
		// Once more after every handler has returned, so that a test sees
		// what its handlers changed last.
		defer s.mutations.check()
		wg.Go(func() { s.mutations.run(ctx) })
	}
	// The FIFO closes after its producer, the reflector, has returned: an
	// event it stores while stopping is dropped without an error.
	defer s.fifo.Close()
	var refusedMu sync.Mutex
	var refused error
	// refuse stops the informer, and makes Run return why: a goroutine it
	// needs ended while ctx had not.
	refuse := func(why error) {
		refusedMu.Lock()
		if refused == nil {
			refused = why
		}
		refusedMu.Unlock()
		cancel()
	}
	defer func() { // after wg.Wait
		if refused != nil {
			err = refused
		}
	}()
	defer wg.Wait()
	defer cancel()

	wg.Go(func() {
		returned := false
		defer func() {
			if !returned && ctx.Err() == nil {
				refuse(goexited("the processor", "the logger"))
			}
		}()
		s.processor.Run(ctx)
		returned = true
	})
	wg.Go(func() {
		returned := false
		defer func() {
			switch {
			case ctx.Err() != nil:
			case returned:
				// The reflector refused to run (an option it cannot
				// follow, such as an invalid Mode): nothing would ever
				// fill the cache. Stop, and return why.
				refuse(fmt.Errorf("informer: the reflector did not run: %w", refl.LastError()))
			default:
				refuse(goexited("the reflector", "a transform, the ListerWatcher or the error handler"))
			}
		}()
		refl.Run(ctx)
		returned = true
	})
	wg.Go(func() {
		returned := false
		defer func() {
			if !returned && ctx.Err() == nil {
				refuse(goexited("the resync loop", "the error handler"))
			}
		}()
		s.resyncLoop(ctx)
		returned = true
	})
	wg.Go(func() {
		// Handlers that finished their initial list before the cache
		// synced learn here that their registration has synced too.
		select {
		case <-s.fifo.Synced():
			s.processor.CheckSynced()
		case <-ctx.Done():
		}
	})

	for {
		applied := false
		err := s.fifo.Pop(ctx, func(key string, deltas []deltafifo.Delta[T], isInInitialList bool) error {
			applied = true
			return s.handleDeltas(key, deltas, isInInitialList)
		})
		switch {
		case applied && err != nil:
			// A change the cache could not take: reported even if
			// ctx ended while it was being applied.
			s.reportApplyError(err)
		case ctx.Err() != nil, errors.Is(err, deltafifo.ErrClosed):
			return nil
		case err != nil:
			s.reportApplyError(err)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// goexited is Run's error when user code ended one of the informer's
// goroutines with runtime.Goexit (t.FailNow does, in a test): rather than
// run on without it, with nothing to fill the cache or resync it, the
// informer stops.
func goexited(goroutine, culprits string) error {
	return fmt.Errorf("informer: %s stopped: runtime.Goexit was called on its goroutine (by %s)", goroutine, culprits)
}

// onTheTick returns the time a one-second ticker started at started was
// due to deliver the tick it delivered at now. A tick comes a little late,
// by a varying amount: asked at that time, a handler whose period is a
// whole number of seconds was due a few microseconds after one tick as
// often as before it, and resynced a second late about half the time.
func onTheTick(started, now time.Time) time.Time {
	return started.Add(now.Sub(started).Round(time.Second))
}

// secondTicker starts a ticker of one second, and returns its channel and
// its Stop.
func secondTicker() (<-chan time.Time, func()) {
	t := time.NewTicker(time.Second)
	return t.C, t.Stop
}

// resyncLoop asks, once a second, whether any handler is due for a resync,
// and if so calls FIFO.Resync, which queues a Sync for every cached object
// not already queued or being processed (or whose newest queued delta is a
// Replaced). It ticks only while some handler has a resync period: an
// informer without one, as most are, does not wake for it (a process of
// 500 idle informers spent 40 times the CPU on these ticks).
func (s *SharedIndexInformer[T]) resyncLoop(ctx context.Context) {
	var tick <-chan time.Time // nil while no handler resyncs
	var stop func()           // tick's
	var started time.Time     // when tick was started
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		switch resyncs := s.processor.MinResyncPeriod() > 0; {
		case resyncs && tick == nil:
			started = time.Now()
			tick, stop = s.ticker()
		case !resyncs && tick != nil:
			stop()
			tick, stop = nil, nil
		}
		select {
		case <-ctx.Done():
			return
		case <-s.resyncers:
		case now := <-tick:
			if s.processor.ShouldResync(onTheTick(started, now)) {
				if err := s.fifo.Resync(); err != nil && !errors.Is(err, deltafifo.ErrClosed) {
					s.reportApplyError(err)
				}
			}
		}
	}
}

// AddEventHandler registers h and returns its registration. If the informer
// is already running, h first gets every cached object as an Add with
// isInInitialList set, then every later change, with nothing lost or
// repeated in between. h runs on its own goroutine: a slow h delays no other
// handler. Once the informer has stopped, h is never called: the
// registration is stopped at once, and never synced (client-go returns an
// error then).
func (s *SharedIndexInformer[T]) AddEventHandler(h processor.Handler[T], opts ...HandlerOption) *Registration[T] {
	if s.processor == nil { // not made by New
		return &Registration[T]{}
	}
	lo := processor.ListenerOptions{ResyncPeriod: s.resync}
	for _, o := range opts {
		if o != nil {
			o(&lo)
		}
	}
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	objs := s.indexer.List()
	replay := make([]processor.Notification[T], len(objs))
	for i, obj := range objs {
		// objkey.Key is the indexer's key too: New keeps its default.
		replay[i] = processor.Notification[T]{Kind: processor.Add, Key: objkey.Key(obj), New: obj, IsInInitialList: true}
	}
	l := s.processor.AddListener(h, lo, replay...)
	if lo.ResyncPeriod > 0 {
		select {
		case s.resyncers <- struct{}{}: // resyncLoop starts ticking
		default: // already signalled
		}
	}
	return &Registration[T]{listener: l, name: s.name + ", " + l.Name(), informer: s}
}

// RemoveEventHandler stops delivering to the handler of reg and returns at
// once, as client-go's does: a handler call in progress goes on, and
// reg.Stopped is closed when it returns. A call about to begin may also
// begin just after RemoveEventHandler returns: only reg.Stopped says that
// the handler will not be called again. It may be called from any handler,
// reg's own included. Removing a registration twice, or nil, is harmless.
func (s *SharedIndexInformer[T]) RemoveEventHandler(reg *Registration[T]) {
	if reg == nil {
		return
	}
	s.processor.RemoveListener(reg.listener)
}

// Registration is one handler added to an informer, made by
// AddEventHandler. A Registration made otherwise (its zero value) holds no
// handler: it never syncs, and its Synced and Stopped are nil, which
// WaitForSync refuses.
type Registration[T metav1.Object] struct {
	listener *processor.Listener[T]
	name     string
	informer *SharedIndexInformer[T]
}

// informerError is why the registration's informer has not synced, for
// WaitForSync: its last list or watch error; nil once it has synced (the
// handler is then still at the first list), or without one.
func (r *Registration[T]) informerError() error {
	if r.informer == nil || r.informer.HasSynced() {
		return nil
	}
	if err := r.informer.LastError(); err != nil {
		return fmt.Errorf("its informer has not synced: %w", err)
	}
	return nil
}

// Name returns what errors call the registration: its informer's name and
// its listener's, such as "pods, listener 2 (*main.podHandler)".
func (r *Registration[T]) Name() string {
	if r.listener == nil {
		return "a zero Registration (not made by AddEventHandler)"
	}
	return r.name
}

// HasSynced reports whether the informer has synced and this handler has
// handled every object of the initial list.
func (r *Registration[T]) HasSynced() bool { return r.listener != nil && r.listener.HasSynced() }

// Synced returns a channel closed when HasSynced becomes true. It is never
// closed if the handler is removed, or the informer stops, first.
func (r *Registration[T]) Synced() <-chan struct{} {
	if r.listener == nil {
		return nil
	}
	return r.listener.Synced()
}

// Stopped returns a channel closed once the handler will not be called
// again: it was removed, or the informer stopped, and the call in progress
// then, if any, has returned. (An informer never run stops nothing: only
// removing the handler closes it then.) Receive from it to wait after
// RemoveEventHandler (not from the handler itself, which would wait for
// itself).
func (r *Registration[T]) Stopped() <-chan struct{} {
	if r.listener == nil {
		return nil
	}
	return r.listener.Stopped()
}

// HasSynced reports whether the cache holds the complete first list: every
// object of the first LIST (or streaming list) has been applied. A change
// the watch delivered for one of those objects before it was applied is
// applied with it, so handlers may see such an update before HasSynced
// turns true.
func (s *SharedIndexInformer[T]) HasSynced() bool { return s.fifo != nil && s.fifo.HasSynced() }

// Synced returns a channel closed when HasSynced becomes true.
func (s *SharedIndexInformer[T]) Synced() <-chan struct{} {
	if s.fifo == nil { // not made by New: WaitForSync refuses a nil channel
		return nil
	}
	return s.fifo.Synced()
}

// Indexer returns the informer's cache. Read from it freely; writing to it
// would make it disagree with the server.
func (s *SharedIndexInformer[T]) Indexer() *indexer.Indexer[T] {
	if s.indexer == nil { // not made by New: an empty cache
		return indexer.New[T](nil)
	}
	return s.indexer
}

// Lister returns a typed, read-only view of the cache.
func (s *SharedIndexInformer[T]) Lister() *Lister[T] { return &Lister[T]{indexer: s.Indexer()} }

// AddIndexers adds named indexes to the cache, indexing what it already
// holds (see indexer.Indexer.AddIndexers). The informer goes on applying
// changes and telling handlers meanwhile, and runs the new index functions
// on those changes as it will once they are installed. No lock is held
// while an index function runs, so it may call AddEventHandler; but, like
// every index function, it must not wait for a handler to be told of a
// change: it runs on the goroutine that applies changes.
func (s *SharedIndexInformer[T]) AddIndexers(ix indexer.Indexers[T]) error {
	if s.indexer == nil {
		return errors.New("informer: AddIndexers: a SharedIndexInformer made without New")
	}
	return s.indexer.AddIndexers(ix)
}

// SetTransform sets a function applied to every object as it is decoded,
// before it is cached or handed to a handler: dropping fields there keeps
// them out of memory. It must keep the namespace, name and resourceVersion,
// and should keep the UID (see reflector.WithTransform), and give equal
// objects for equal ones: a relist compares what it finds with what the
// cache holds, and tells the handlers of every difference. It must be
// called before Run. A transform set already is not replaced: a second one is
// refused with an error (a Factory's informer is shared by everyone who
// asks for its Target, and one caller's transform would silently drop
// another's); nil clears it.
func (s *SharedIndexInformer[T]) SetTransform(f func(T) (T, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("informer: SetTransform: %w: set the transform before Run (or Factory.Start)", ErrStarted)
	}
	if s.transform != nil && f != nil {
		return errors.New("informer: SetTransform: a transform is set already (a Factory's informer is shared by everyone who asks for its Target: set one transform that does what each needs)")
	}
	s.transform = f
	return nil
}

// SetWatchErrorHandler sets a function called with every error the
// informer meets: a list or watch error, before the reflector recovers from
// it; an event or item skipped; a change the cache could not apply (an
// index function's error). It is called from several of the informer's
// goroutines (the reflector's, the one applying changes, the resync
// timer's), possibly at once, so it must be safe for concurrent use, and
// must not block. Without it, the informer logs them (see WithLogger: a
// run of list/watch failures once per kind, a reminder every 5 minutes,
// its end; an object skipped or not applied, a warning each). A panic
// in f is logged as an error and goes no further. It must be called before
// Run. A handler set already is not replaced: a second one is refused with
// an error, as a second transform is (see SetTransform); nil clears it.
func (s *SharedIndexInformer[T]) SetWatchErrorHandler(f func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("informer: SetWatchErrorHandler: %w: set the handler before Run (or Factory.Start)", ErrStarted)
	}
	if s.errorHandler != nil && f != nil {
		return errors.New("informer: SetWatchErrorHandler: an error handler is set already (a Factory's informer is shared by everyone who asks for its Target: set one handler that tells each)")
	}
	s.errorHandler = f
	return nil
}

// LastSyncResourceVersion returns the resourceVersion the cache was last
// synced to, or "" before the first list (and for a resource whose lists
// have none, such as componentstatuses).
func (s *SharedIndexInformer[T]) LastSyncResourceVersion() string {
	if r := s.runningReflector(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

// Stopped returns a channel closed once Run has returned (every goroutine
// it started has exited), or has refused to run for good (New was given
// nothing to list and watch with, an index without a function or an index
// named twice; or its reflector refused an option, such as an invalid
// Mode). It is
// never closed for an informer that is not run. WaitForSync uses it to
// stop waiting for an informer that will not sync.
func (s *SharedIndexInformer[T]) Stopped() <-chan struct{} { return s.stopped }

func (s *SharedIndexInformer[T]) stop() { s.stopOnce.Do(func() { close(s.stopped) }) }

// LastError returns the last error the reflector met: a failed list or
// watch, or an event or item skipped (see reflector.Reflector.LastError).
// It is nil from when a list is stored or a watch accepted until the next
// error. For an informer that cannot run, it is why (Run's error).
// WaitForCacheSync and WaitForSync use it to say why a cache did not sync.
func (s *SharedIndexInformer[T]) LastError() error {
	if r := s.runningReflector(); r != nil {
		return r.LastError()
	}
	return s.setupErr
}

// Name returns what errors and logs call this informer's resource.
func (s *SharedIndexInformer[T]) Name() string { return s.name }

func (s *SharedIndexInformer[T]) runningReflector() *reflector.Reflector[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reflector
}

// reportError hands err, a list or watch error from the reflector, to the
// error handler, or logs it as one failure of a run (failureLog).
func (s *SharedIndexInformer[T]) reportError(err error) {
	if !s.callErrorHandler(err) {
		s.logFailure(err)
	}
}

// reportApplyError hands err, a change the cache could not take or a
// resync that failed, to the error handler, or logs it: not a failure of
// the list or watch, it is no part of a run of them.
func (s *SharedIndexInformer[T]) reportApplyError(err error) {
	if !s.callErrorHandler(err) {
		s.logSkipped(err)
	}
}

// callErrorHandler hands err to the error handler, if there is one, and
// reports whether there was.
func (s *SharedIndexInformer[T]) callErrorHandler(err error) bool {
	s.mu.Lock()
	h := s.errorHandler
	s.mu.Unlock()
	if h == nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			// The goroutine that called it (the reflector's, say) is
			// the informer's, not the handler's: it goes on.
			s.logger.Error("watch error handler panicked", "resource", s.name, "err", err, "panic", p)
		}
	}()
	h(err)
	return true
}

// isNilPointer reports a typed nil pointer in an interface.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
