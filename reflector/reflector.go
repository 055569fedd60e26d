package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/share"
)

// Reflector keeps a Store in step with one resource on the apiserver. Create
// it with New and start it with Run, once. Its other methods are safe for
// concurrent use, also while Run goes on.
type Reflector[T metav1.Object] struct {
	lw     ListerWatcher[T]
	store  Store[T]
	opt    options[T]
	parts  *share.Table  // WithSharing after the transform; used by Run's goroutine only
	ran    atomic.Bool   // Run was called
	events atomic.Uint64 // events its watches delivered (WatchEvents)

	mu        sync.Mutex
	lastRV    string // the resourceVersion the Store is synced to
	lastError error  // the last error reported, nil after a good list or an accepted watch
	// failedSinceWatch: an error was reported since the last accepted
	// watch (for WithRecoveredHandler).
	failedSinceWatch bool
}

// New returns a Reflector that lists and watches through lw into store.
func New[T metav1.Object](lw ListerWatcher[T], store Store[T], opts ...Option[T]) *Reflector[T] {
	r := &Reflector[T]{lw: lw, store: store, opt: defaultOptions[T]()}
	for _, o := range opts {
		if o != nil {
			o(&r.opt)
		}
	}
	if r.opt.sharing {
		r.parts = share.New(share.DefaultSlots)
		// Without a transform, the HTTP ListerWatcher can share parts
		// as it decodes them, which costs less than the walk.
		if s, ok := lw.(partSharer[T]); ok && r.opt.transform == nil && !isNilPointer(lw) {
			if shared, err := s.sharingParts(); err == nil {
				r.lw, r.parts = shared, nil
			}
		}
	}
	return r
}

// partSharer is a ListerWatcher that can make a copy of itself whose
// objects share their identical parts (see WithSharing).
type partSharer[T metav1.Object] interface {
	sharingParts() (ListerWatcher[T], error)
}

// partForgetter is a ListerWatcher whose objects share parts remembered by
// their bytes: each list starts it afresh, so that a relist repairs a cache
// whose objects someone modified (see wire.Codec.ForgetSharedParts).
type partForgetter interface {
	forgetSharedParts()
}

// LastSyncResourceVersion returns the resourceVersion the Store has been
// synced to: that of the last list it took, or of the last event or
// bookmark after that list. It is "" until the first list is taken, and set
// just before the Store is given a list (and taken back if the Store
// refuses it), so an informer that has synced always reports one, unless
// the list had none (a resource that is listed, not watched, as
// componentstatuses: see the package doc).
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// WatchEvents returns how many events the Reflector's watches have
// delivered since it was made, bookmarks and a streaming list's initial
// events included, whether or not the Store took them: a count that a
// watch that delivers nothing leaves where it was.
func (r *Reflector[T]) WatchEvents() uint64 { return r.events.Load() }

// LastError returns the last error reported to the error handler: a failed
// list or watch, or an event or item skipped (ErrSkipped, ErrRejected). It
// is cleared when a list is stored (even one that skipped items, which
// were reported) and when the server accepts a watch, a streaming list's
// included. A streaming list still without its initial-events-end bookmark
// after a minute sets it too (not reported: it is no failure yet), to say
// what the Reflector waits for. A refill that took the cache back in time
// (ErrBackInTime) is reported after its list is stored; after a LIST it
// stays until the next watch is accepted or another error is reported,
// and after a streaming list, whose watch goes on in the same stream, it
// is cleared as the stream follows on (the recovered handler is called
// after the report).
func (r *Reflector[T]) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastError
}

// Run lists, watches and recovers until ctx ends. It calls the Store from
// its own goroutine only (with WithRelistInterval, a timer closes the watch
// from another when a relist is due). Without a context, a ListerWatcher
// or a Store, or with a Mode that is none of the constants, it reports the
// error and returns, and so does a second call: two loops would fill one
// Store twice over.
func (r *Reflector[T]) Run(ctx context.Context) {
	switch {
	case ctx == nil:
		r.report(errors.New("reflector: Run: nil context"))
		return
	case !r.ran.CompareAndSwap(false, true):
		r.report(errors.New("reflector: Run: called again; a Reflector runs once"))
		return
	case r.lw == nil || isNilPointer(r.lw):
		r.report(errors.New("reflector: Run: the ListerWatcher is nil"))
		return
	case r.store == nil || isNilPointer(r.store):
		r.report(errors.New("reflector: Run: the Store is nil"))
		return
	}
	if err := checkMode(r.opt.mode); err != nil {
		r.report(err)
		return
	}
	s := runState{
		needList:  true,
		streaming: r.opt.mode != ListWatch,
		backoff:   newBackoff(r.opt.backoffInitial, r.opt.backoffMax),
	}
	for ctx.Err() == nil {
		if d, ok := r.relistEvery(&s); ok && !s.needList && time.Since(s.listedAt) >= d {
			// Due while no watch was open to be closed for it (watches
			// that keep failing, a server out of reach): the relist is
			// the next attempt.
			s.needList = true
		}
		if s.needList {
			// Every list starts sharing afresh (see WithSharing).
			if pf, ok := r.lw.(partForgetter); ok {
				pf.forgetSharedParts()
			}
			if r.parts != nil {
				r.parts.Forget()
			}
		}
		var err error
		s.progressed, s.failedInStream = false, false
		switch {
		case s.needList && s.streaming && !s.listOnce:
			err = r.watchList(ctx, &s)
		case s.needList:
			err = r.list(ctx, &s)
			if err == nil {
				s.refilled()
				continue
			}
		case s.probe:
			err = r.probe(ctx, &s)
			if err == nil {
				continue
			}
		case r.LastSyncResourceVersion() == "":
			// The Store was refilled by a list without a resourceVersion
			// (a resource that is listed, not watched): a watch from ""
			// would start at the server's newest state and miss what
			// was deleted in between. List again on a timer instead:
			// each list stored is what a watch accepted is to others.
			r.following()
			err = errUnversioned
		default:
			err = r.watch(ctx, &s)
		}
		if ctx.Err() != nil {
			return
		}
		wait := r.nextAttempt(&s, err)
		if wait > 0 && !sleep(ctx, wait) {
			return
		}
	}
}

// synced records a state fully applied to the Store.
func (r *Reflector[T]) synced(rv string) {
	r.mu.Lock()
	r.lastRV, r.lastError = rv, nil
	r.mu.Unlock()
}

// unsynced takes back synced(rv) when the Store refused the list: it is
// still at since.
func (r *Reflector[T]) unsynced(since string) {
	r.mu.Lock()
	r.lastRV = since
	r.mu.Unlock()
}

// advance records the resourceVersion of an applied event or bookmark.
func (r *Reflector[T]) advance(rv string) {
	r.mu.Lock()
	r.lastRV = rv
	r.mu.Unlock()
}

// following records that the cache follows the server again: the server
// accepted a watch, or, for a resource that is listed but not watched
// (errUnversioned), a list was stored. The error that led to it, if any,
// is over.
func (r *Reflector[T]) following() {
	r.mu.Lock()
	failed := r.failedSinceWatch
	r.lastError, r.failedSinceWatch = nil, false
	r.mu.Unlock()
	if failed && r.opt.recovered != nil {
		r.callRecovered()
	}
}

// callRecovered calls the recovered handler; a panic in it is logged, as
// the error handler's is (see report): the goroutine is the Reflector's.
func (r *Reflector[T]) callRecovered() {
	defer func() {
		if p := recover(); p != nil {
			r.opt.logger.Error("reflector: the recovered handler panicked", "resource", r.opt.name, "panic", fmt.Sprint(p))
		}
	}()
	r.opt.recovered()
}

// streamAccepted records that the server accepted a streaming list. The
// error that led to it no longer says what is going on (WaitForCacheSync
// quotes LastError while the initial events come), but the cache follows
// the server only once they are stored: following is called then, and
// the recovered handler with it.
func (r *Reflector[T]) streamAccepted() {
	r.mu.Lock()
	r.lastError = nil
	r.mu.Unlock()
}

// report records err and hands it to the error handler.
func (r *Reflector[T]) report(err error) {
	r.mu.Lock()
	r.lastError, r.failedSinceWatch = err, true
	r.mu.Unlock()
	if r.opt.logger == nil { // a Reflector not made by New: nothing to tell
		return
	}
	r.opt.logger.Debug("list-watch error", "resource", r.opt.name, "err", err)
	if r.opt.errorHandler == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			// The goroutine is the Reflector's, not the handler's: it
			// goes on.
			r.opt.logger.Error("reflector: the error handler panicked", "resource", r.opt.name, "err", err, "panic", fmt.Sprint(p))
		}
	}()
	r.opt.errorHandler(err)
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// isNilPointer reports a typed nil, on which metadata getters would panic.
func isNilPointer(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
