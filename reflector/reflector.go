package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/share"
)

// Reflector keeps a Store in step with one resource on the apiserver. Create
// it with New and start it with Run. Its methods are safe for concurrent use.
type Reflector[T metav1.Object] struct {
	lw    ListerWatcher[T]
	store Store[T]
	opt   options[T]
	parts *share.Table // WithSharing after the transform; used by Run's goroutine only

	mu        sync.Mutex
	lastRV    string // the resourceVersion the Store is synced to
	lastError error  // the last list or watch error, nil after a good list
}

// New returns a Reflector that lists and watches through lw into store.
func New[T metav1.Object](lw ListerWatcher[T], store Store[T], opts ...Option[T]) *Reflector[T] {
	r := &Reflector[T]{lw: lw, store: store, opt: defaultOptions[T]()}
	for _, o := range opts {
		o(&r.opt)
	}
	if r.opt.sharing {
		r.parts = share.New(share.DefaultSlots)
		// Without a transform, the HTTP ListerWatcher can share parts
		// as it decodes them, which costs less than the walk.
		if s, ok := lw.(partSharer[T]); ok && r.opt.transform == nil {
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
// synced to: that of the last list, event or bookmark handed to it. It is ""
// until the first list is, and set before the Store is given that list, so
// an informer that has synced always reports one.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastError returns the error of the last failed list or watch, or nil if
// the last attempt succeeded.
func (r *Reflector[T]) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastError
}

// Run lists, watches and recovers until ctx ends. It is the only goroutine
// the Reflector uses, and it calls the Store from that goroutine only.
func (r *Reflector[T]) Run(ctx context.Context) {
	s := runState{
		needList:  true,
		streaming: r.opt.mode != ListWatch,
		backoff:   newBackoff(r.opt.backoffInitial, r.opt.backoffMax),
	}
	for ctx.Err() == nil {
		if pf, ok := r.lw.(partForgetter); ok && s.needList {
			pf.forgetSharedParts()
		}
		var err error
		switch {
		case s.needList && s.streaming:
			err = r.watchList(ctx, &s)
		case s.needList:
			err = r.list(ctx)
			if err == nil {
				s.needList, s.listedAt = false, time.Now()
				s.backoff.reset()
				continue
			}
		default:
			err = r.watch(ctx, &s)
		}
		if ctx.Err() != nil {
			return
		}
		wait := r.recover(&s, err)
		if wait > 0 && !sleep(ctx, wait) {
			return
		}
	}
}

// runState is what Run's loop carries from one attempt to the next. It is
// owned by the Run goroutine.
type runState struct {
	needList  bool      // the Store must be refilled before watching
	streaming bool      // refill with a streaming list rather than LIST
	listedAt  time.Time // when the Store was last refilled
	backoff   *backoff
}

// recover decides, after a list or a watch ended with err, what the next
// attempt is and how long to wait before it.
func (r *Reflector[T]) recover(s *runState, err error) time.Duration {
	now := time.Now()
	switch {
	case err == nil:
		// A watch stream that ended cleanly after doing some work:
		// resume at once from the last resourceVersion.
		return 0
	case errors.Is(err, errRelistDue):
		s.needList = true
		return 0
	}
	r.report(err)

	var fallback *streamingUnsupportedError
	switch {
	case errors.As(err, &fallback):
		if r.opt.mode == WatchList {
			return s.backoff.next(now)
		}
		r.opt.logger.Info("streaming list not usable, falling back to LIST then WATCH",
			"resource", r.opt.name, "reason", fallback.reason)
		s.streaming = false
		return 0
	case isExpired(err):
		// Our resourceVersion is too old for the server: list again, at
		// once unless we just did (a server that answers every fresh
		// watch with 410 must not get a storm of LISTs).
		s.needList = true
		if time.Since(s.listedAt) < minWatchDuration {
			return s.backoff.next(now)
		}
		return 0
	case errors.Is(err, errWentBackwards):
		s.needList = true
		return s.backoff.next(now)
	case isTooLargeResourceVersion(err):
		// The server has not caught up with us yet: it will.
		return max(s.backoff.next(now), time.Second)
	}
	wait := s.backoff.next(now)
	if ra := retryAfter(err); ra > wait {
		wait = min(ra, r.opt.backoffMax)
	}
	return wait
}

// list refills the Store with a paged LIST: every page is decoded item by
// item into one slice, which replaces the Store's contents in one call.
func (r *Reflector[T]) list(ctx context.Context) error {
	since := r.LastSyncResourceVersion()
	opts := ListOptions{Limit: r.opt.pageSize}
	if since != "" {
		// Never go back in time: ask for a state at least as new as the
		// one the Store already has.
		opts.ResourceVersion, opts.ResourceVersionMatch = since, metav1.ResourceVersionMatchNotOlderThan
	}
	first := opts

	var items []T
	add := func(obj T) error {
		obj, err := r.admit(obj)
		if err != nil {
			r.report(fmt.Errorf("listing %s: %w", r.opt.name, err))
			return nil // skip this item, keep the rest of the page
		}
		items = append(items, obj)
		return nil
	}

	var listRV string
	for restarts := 0; ; {
		meta, err := r.lw.List(ctx, opts, add)
		if err != nil {
			if opts.Continue != "" && isExpired(err) && restarts < maxListRestarts {
				// The continue token expired between pages: the pages
				// so far are from a state we can no longer complete.
				restarts++
				items, listRV, opts = items[:0], "", first
				continue
			}
			return fmt.Errorf("listing %s: %w", r.opt.name, err)
		}
		if listRV == "" {
			listRV = meta.ResourceVersion
		}
		if meta.Continue == "" {
			break
		}
		opts = ListOptions{Limit: r.opt.pageSize, Continue: meta.Continue}
	}

	if olderThan(listRV, since) {
		return fmt.Errorf("listing %s: %w: listed resourceVersion %s, cache already at %s",
			r.opt.name, errWentBackwards, listRV, since)
	}
	// Recorded first: the Store's consumer may have processed the whole
	// list (and reported HasSynced) before Replace returns.
	r.synced(listRV)
	if err := r.store.Replace(items, listRV); err != nil {
		return fmt.Errorf("listing %s: storing the list: %w", r.opt.name, err)
	}
	return nil
}

// maxListRestarts bounds how often one list restarts because its continue
// token expired, so a server that expires every token cannot keep us listing.
const maxListRestarts = 3

// watchList refills the Store with a streaming list: a watch that first
// sends the current state as ADDED events and marks its end with a bookmark.
// The events are buffered and replace the Store's contents at that bookmark;
// then the same stream goes on as an ordinary watch.
func (r *Reflector[T]) watchList(ctx context.Context, s *runState) error {
	w, err := r.lw.Watch(ctx, WatchOptions{
		ResourceVersion:      r.LastSyncResourceVersion(),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowBookmarks:       true,
		SendInitialEvents:    true,
		TimeoutSeconds:       r.watchTimeout(),
	})
	if err != nil {
		if refusesStreaming(err) {
			return &streamingUnsupportedError{reason: err.Error()}
		}
		return fmt.Errorf("listing %s (streaming): %w", r.opt.name, err)
	}
	defer w.Close()

	since := r.LastSyncResourceVersion()
	var initial []T
	for {
		ev, err := w.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return &streamingUnsupportedError{reason: "the stream ended before the initial-events-end bookmark"}
			}
			if errors.Is(err, ErrStalled) {
				// A server that serves streaming lists sends the bookmark
				// right after the initial events; one that goes quiet
				// instead would do so again on every attempt.
				return &streamingUnsupportedError{reason: "the stream went quiet before the initial-events-end bookmark"}
			}
			if errors.Is(err, ErrSkipped) {
				r.report(fmt.Errorf("listing %s (streaming): %w", r.opt.name, err))
				continue
			}
			return fmt.Errorf("listing %s (streaming): %w", r.opt.name, err)
		}
		switch ev.Type {
		case Added:
			obj, err := r.admit(ev.Object)
			if err != nil {
				r.report(fmt.Errorf("listing %s (streaming): %w", r.opt.name, err))
				continue
			}
			initial = append(initial, obj)
		case Bookmark:
			if ev.Object.GetAnnotations()[InitialEventsEndAnnotation] != "true" {
				return &streamingUnsupportedError{reason: "a BOOKMARK came before the initial-events-end bookmark"}
			}
			rv := ev.Object.GetResourceVersion()
			if olderThan(rv, since) {
				return fmt.Errorf("listing %s (streaming): %w: initial events end at %s, cache already at %s",
					r.opt.name, errWentBackwards, rv, since)
			}
			r.synced(rv) // first, as in list
			if err := r.store.Replace(initial, rv); err != nil {
				return fmt.Errorf("listing %s (streaming): storing the initial events: %w", r.opt.name, err)
			}
			s.needList, s.listedAt = false, time.Now()
			s.backoff.reset()
			return r.follow(ctx, s, w, time.Now())
		case Error:
			return fmt.Errorf("listing %s (streaming): %w", r.opt.name, statusError(ev.Status))
		default:
			return &streamingUnsupportedError{reason: fmt.Sprintf("a %s event came before the initial-events-end bookmark", ev.Type)}
		}
	}
}

// watch opens a watch from the last synced resourceVersion and applies its
// events until it ends.
func (r *Reflector[T]) watch(ctx context.Context, s *runState) error {
	started := time.Now()
	w, err := r.lw.Watch(ctx, WatchOptions{
		ResourceVersion: r.LastSyncResourceVersion(),
		AllowBookmarks:  true,
		TimeoutSeconds:  r.watchTimeout(),
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", r.opt.name, err)
	}
	defer w.Close()
	r.watching()
	return r.follow(ctx, s, w, started)
}

// follow applies the events of an open watch to the Store until the stream
// ends. A clean end returns nil, unless the stream ended at once without a
// single event, which is counted as a failure so that a server that keeps
// doing that is not asked again in a tight loop.
func (r *Reflector[T]) follow(ctx context.Context, s *runState, w Watcher[T], started time.Time) error {
	var relistDue atomic.Bool
	if r.opt.relistInterval > 0 {
		// Due one interval after the last refill, however many watches
		// came in between: watches that end sooner must not postpone it.
		t := time.AfterFunc(time.Until(s.listedAt.Add(r.opt.relistInterval)), func() {
			relistDue.Store(true)
			w.Close()
		})
		defer t.Stop()
	}
	events := 0
	for {
		ev, err := w.Next()
		if err != nil {
			switch {
			case relistDue.Load():
				return errRelistDue
			case errors.Is(err, ErrSkipped):
				r.report(fmt.Errorf("watching %s: %w", r.opt.name, err))
				continue
			case !errors.Is(err, io.EOF):
				return fmt.Errorf("watching %s: %w", r.opt.name, err)
			case events == 0 && time.Since(started) < minWatchDuration:
				return fmt.Errorf("watching %s: %w", r.opt.name, errEmptyWatch)
			}
			return nil
		}
		events++
		if err := r.apply(ev); err != nil {
			return fmt.Errorf("watching %s: %w", r.opt.name, err)
		}
	}
}

// minWatchDuration is how long a watch must stay open, when it delivers
// nothing, for its clean end not to count as a failure.
const minWatchDuration = time.Second

// apply hands one watch event to the Store.
func (r *Reflector[T]) apply(ev Event[T]) error {
	switch ev.Type {
	case Error:
		return statusError(ev.Status)
	case Bookmark:
		rv := ev.Object.GetResourceVersion()
		if rv != "" && !olderThan(rv, r.LastSyncResourceVersion()) {
			r.advance(rv)
		}
		return nil
	case Added, Modified, Deleted:
	default:
		r.report(fmt.Errorf("watching %s: %w: unknown event type %q", r.opt.name, ErrSkipped, ev.Type))
		return nil
	}

	obj, err := r.admit(ev.Object)
	if err != nil {
		r.report(fmt.Errorf("watching %s: %s event: %w", r.opt.name, ev.Type, err))
		return nil
	}
	rv, last := obj.GetResourceVersion(), r.LastSyncResourceVersion()
	if !newerThan(rv, last) {
		return fmt.Errorf("%w: %s event for %s at resourceVersion %s after %s",
			errWentBackwards, ev.Type, objkey.Key(obj), rv, last)
	}
	switch ev.Type {
	case Added:
		err = r.store.Add(obj)
	case Modified:
		err = r.store.Update(obj)
	case Deleted:
		err = r.store.Delete(obj)
	}
	if err != nil {
		return fmt.Errorf("storing %s event for %s: %w", ev.Type, objkey.Key(obj), err)
	}
	r.advance(rv)
	return nil
}

// admit checks that an object from the server can be cached, applies the
// transform, and then (WithSharing) shares its parts with the objects
// before it. An object without a name or a resourceVersion is rejected.
func (r *Reflector[T]) admit(obj T) (T, error) {
	var zero T
	if any(obj) == nil || isNilPointer(obj) {
		return zero, fmt.Errorf("%w: no object", ErrRejected)
	}
	if obj.GetName() == "" {
		return zero, fmt.Errorf("%w: object has no metadata.name", ErrRejected)
	}
	if obj.GetResourceVersion() == "" {
		return zero, fmt.Errorf("%w: %s has no metadata.resourceVersion", ErrRejected, objkey.Key(obj))
	}
	if r.opt.transform != nil {
		out, err := r.opt.transform(obj)
		if err != nil {
			return zero, fmt.Errorf("transforming %s: %w", objkey.Key(obj), err)
		}
		obj = out
	}
	if r.parts != nil {
		share.Share(r.parts, obj)
	}
	return obj, nil
}

// synced records a state fully applied to the Store.
func (r *Reflector[T]) synced(rv string) {
	r.mu.Lock()
	r.lastRV, r.lastError = rv, nil
	r.mu.Unlock()
}

// advance records the resourceVersion of an applied event or bookmark.
func (r *Reflector[T]) advance(rv string) {
	r.mu.Lock()
	r.lastRV = rv
	r.mu.Unlock()
}

// watching records a watch the server accepted: the error that led to it,
// if any, is over.
func (r *Reflector[T]) watching() {
	r.mu.Lock()
	r.lastError = nil
	r.mu.Unlock()
}

// report records err and hands it to the error handler.
func (r *Reflector[T]) report(err error) {
	r.mu.Lock()
	r.lastError = err
	r.mu.Unlock()
	r.opt.logger.Debug("list-watch error", "resource", r.opt.name, "err", err)
	if r.opt.errorHandler != nil {
		r.opt.errorHandler(err)
	}
}

// watchTimeout picks the timeoutSeconds of one watch: random in
// [minWatchTimeout, 2*minWatchTimeout), so that many reflectors started
// together do not reconnect together.
func (r *Reflector[T]) watchTimeout() int64 {
	d := r.opt.minWatchTimeout
	return int64((d + rand.N(d)) / time.Second)
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

// statusError turns the Status of an ERROR event into an error that the
// apimachinery errors helpers (and this package) can classify.
func statusError(st *metav1.Status) error {
	if st == nil {
		return fmt.Errorf("%w: ERROR event without a Status", ErrSkipped)
	}
	return rest.FromStatus(st)
}
