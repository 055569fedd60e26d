package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/rest"
)

// How Run watches: a watch opened from the Store's resourceVersion, whose
// events are applied to the Store one by one until the stream ends.

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
	if w == nil || isNilPointer(w) {
		return fmt.Errorf("watching %s: %w", r.opt.name, errNoWatcher)
	}
	defer w.Close()
	defer closeOnCancel(ctx, w)()
	r.following()
	return r.follow(s, w, started)
}

// watchTimeout picks the timeoutSeconds of one watch: random in
// [minWatchTimeout, 2*minWatchTimeout), so that many reflectors started
// together do not reconnect together.
func (r *Reflector[T]) watchTimeout() int64 {
	d := r.opt.minWatchTimeout
	return int64((d + rand.N(d)) / time.Second)
}

// closeOnCancel closes w when ctx ends, so that a Next blocked in a Watcher
// that does not watch ctx itself returns. The func it returns stops that,
// waiting for a Close under way: its goroutine is Run's too.
func closeOnCancel[T metav1.Object](ctx context.Context, w Watcher[T]) (stop func()) {
	closed := make(chan struct{})
	cancelStop := context.AfterFunc(ctx, func() {
		defer close(closed)
		w.Close()
	})
	return func() {
		if !cancelStop() {
			<-closed
		}
	}
}

// follow applies the events of an open watch to the Store until the stream
// ends. A clean end returns nil, unless the stream ended at once without
// moving the resourceVersion forward (no event, or bookmarks of where it
// started only), which is counted as a failure so that a server that keeps
// doing that is not asked again in a tight loop.
func (r *Reflector[T]) follow(s *runState, w Watcher[T], started time.Time) error {
	from := r.LastSyncResourceVersion()
	defer func() { s.progressed = r.LastSyncResourceVersion() != from }()
	s.failedInStream = true // an error from here on came in the stream
	var relistDue atomic.Bool
	if d, ok := r.relistEvery(s); ok {
		// Due one interval after the last refill, however many watches
		// came in between: watches that end sooner must not postpone it.
		closed := make(chan struct{})
		t := time.AfterFunc(time.Until(s.listedAt.Add(d)), func() {
			defer close(closed)
			relistDue.Store(true)
			w.Close()
		})
		defer func() {
			if !t.Stop() {
				<-closed // the timer's goroutine is Run's too: wait for it
			}
		}()
	}
	for {
		ev, err := w.Next()
		if err == nil && !isZeroEvent(ev) {
			r.events.Add(1)
		}
		if err != nil {
			switch {
			case relistDue.Load():
				return errRelistDue
			case errors.Is(err, ErrSkipped):
				r.report(fmt.Errorf("watching %s: %w", r.opt.name, err))
				continue
			case errors.Is(err, ErrStalled) && time.Since(started) >= minWatchDuration:
				// The watchdog (WithWatchIdleTimeout) closed a stream
				// that sent nothing for its idle timeout: a connection
				// that died, or a quiet resource whose bookmarks come
				// less often than the timeout. Reported, and resumed at
				// once, as a stream that ended is: the timeout was the
				// wait. A backoff on top would climb at every quiet
				// stretch, and hold the resource's next events back for
				// up to its cap.
				r.report(fmt.Errorf("watching %s: %w", r.opt.name, err))
				return nil
			case !errors.Is(err, io.EOF):
				return fmt.Errorf("watching %s: %w", r.opt.name, err)
			case r.LastSyncResourceVersion() == from && time.Since(started) < minWatchDuration:
				return fmt.Errorf("watching %s: %w", r.opt.name, errEmptyWatch)
			}
			return nil
		}
		if isZeroEvent(ev) {
			// A Watcher whose source is gone (a receive from a closed
			// channel) would send them for ever: the end of the watch, and
			// a failure unless the relist timer closed it.
			if relistDue.Load() {
				return errRelistDue
			}
			return fmt.Errorf("watching %s: %w", r.opt.name, errZeroEvent)
		}
		if err := r.apply(ev); err != nil {
			return fmt.Errorf("watching %s: %w", r.opt.name, err)
		}
	}
}

// minWatchDuration is how long a watch must stay open, when it moves
// nothing forward, for its clean end not to count as a failure.
const minWatchDuration = time.Second

// apply hands one watch event to the Store.
func (r *Reflector[T]) apply(ev Event[T]) error {
	switch ev.Type {
	case Error:
		return statusError(ev.Status)
	case Bookmark:
		if objkey.IsNil(ev.Object) {
			r.report(fmt.Errorf("watching %s: %w: BOOKMARK without an object", r.opt.name, ErrSkipped))
			return nil
		}
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

	var id identity // which a transform may change in place
	if ev.Type == Deleted && !objkey.IsNil(ev.Object) {
		id = identityOf(ev.Object)
	}
	obj, rv, err := r.admit(ev.Object, false)
	last := r.LastSyncResourceVersion()
	switch {
	case err == nil || ev.Type != Deleted:
	case errors.Is(err, ErrSkipped):
		// The transform failed on it. Skipped, the deleted object would
		// stay cached for good (it cannot change again), and a relist
		// for each such delete would hold the watch up behind the
		// backoff (one of an object the transform always fails on was
		// never cached). A delete needs only the key: applied as it
		// came, untransformed.
		r.report(fmt.Errorf("watching %s: %s event: %w (deleted untransformed)", r.opt.name, ev.Type, err))
		obj, err = ev.Object, nil
		if identityOf(obj) != id {
			obj.SetNamespace(id.namespace)
			obj.SetName(id.name)
			obj.SetResourceVersion(id.rv)
		}
	default:
		// Rejected (no name, or no resourceVersion): neither its key nor
		// its place in the order can be trusted. A relist takes the
		// object out, with the state the cache last had of it.
		return fmt.Errorf("%w: %w", errUnappliedDelete, err)
	}
	if err != nil { // an ADDED or a MODIFIED
		r.report(fmt.Errorf("watching %s: %s event: %w", r.opt.name, ev.Type, err))
		// A valid object whose transform failed is skipped, as a refused
		// event is below (and as in client-go): a watch resumed later
		// starts after it, not with it again. A rejected object's
		// resourceVersion is not trusted: admit gives none.
		if rv != "" && !olderThan(rv, last) {
			r.advance(rv)
		}
		return nil
	}
	if olderThan(rv, last) {
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
		// The Store refused this one event: reported and skipped, as
		// client-go does. Ending the watch instead would bring the same
		// event back from the same resourceVersion, for ever, with every
		// later event held up behind it.
		r.report(fmt.Errorf("watching %s: %w: storing %s event for %s: %w", r.opt.name, ErrSkipped, ev.Type, objkey.Key(obj), err))
	}
	r.advance(rv)
	return nil
}

// isZeroEvent reports whether ev is the zero Event: no type, no object and
// no status.
func isZeroEvent[T metav1.Object](ev Event[T]) bool {
	return ev.Type == "" && ev.Status == nil && (objkey.IsNil(ev.Object))
}

// statusError turns the Status of an ERROR event into an error that the
// apimachinery errors helpers (and this package) can classify.
func statusError(st *metav1.Status) error {
	return rest.FromStatus(st) // a nil one is a 500
}
