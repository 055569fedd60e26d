package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/share"
)

// Reflector keeps a Store in step with one resource on the apiserver. Create
// it with New and start it with Run, once. Its other methods are safe for
// concurrent use, also while Run goes on.
type Reflector[T metav1.Object] struct {
	lw    ListerWatcher[T]
	store Store[T]
	opt   options[T]
	parts *share.Table // WithSharing after the transform; used by Run's goroutine only
	ran   atomic.Bool  // Run was called

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
// synced to: that of the last list it took, or of the last event or
// bookmark after that list. It is "" until the first list is taken, and set
// just before the Store is given a list (and taken back if the Store
// refuses it), so an informer that has synced always reports one.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastError returns the last error reported to the error handler: a failed
// list or watch, or an event or item skipped (ErrSkipped, ErrRejected). It
// is cleared when a list is stored (even one that skipped items, which
// were reported) and when the server accepts a watch, a streaming list's
// included. A streaming list still without its initial-events-end bookmark
// after a minute sets it too (not reported: it is no failure yet), to say
// what the Reflector waits for. A refill that took the cache back in time
// (ErrBackInTime) is reported after its list is stored, and stays until
// the next watch is accepted or another error is reported.
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

// runState is what Run's loop carries from one attempt to the next. It is
// owned by the Run goroutine.
type runState struct {
	needList       bool      // the Store must be refilled before watching
	streaming      bool      // refill with a streaming list rather than LIST
	listOnce       bool      // but refill with LIST this once
	streamFailed   bool      // listOnce because a streaming list failed: a failed LIST streams again
	streamCutAt    time.Time // when the last streaming list cut short was (zero after one that was not)
	latest         bool      // ask for the server's latest state, not one at least as new as the Store's
	behindSince    time.Time // when a refill first found the server behind the Store (zero after a refill)
	takeOlder      bool      // the server has been behind for behindPatience: its latest state is taken, older as it is
	listedAt       time.Time // when the Store was last refilled
	relistDraw     float64   // in [0, 1), drawn at each refill: where in [d, 1.1d) the next timed relist falls
	backoff        *backoff
	progressed     bool   // the last attempt's watch moved the resourceVersion forward
	failedInStream bool   // the last attempt's watch failed after it was opened
	stuck          int    // watches that failed in their stream at stuckAt
	stuckAt        string // the resourceVersion they failed at
	probe          bool   // the server was out of reach: check it is not behind the Store before watching (probe)
	probed         bool   // a probe found it was not, and no watch has opened since
}

// refilled records a Store refilled by a list. The backoff is not reset:
// a list that succeeds only for its watch to fail again (a server that
// answers every watch with 410) must not be retried at the initial delay
// for ever. It resets by itself once no failure has come for a while.
func (s *runState) refilled() {
	s.needList, s.listOnce, s.latest, s.listedAt, s.stuck, s.stuckAt = false, false, false, time.Now(), 0, ""
	s.streamFailed = false
	s.behindSince, s.takeOlder, s.probe, s.probed = time.Time{}, false, false, false
	s.relistDraw = rand.Float64()
}

// serverBehind records a refill that found the server behind the Store,
// and reports whether the server has been behind for behindPatience: from
// then on the Reflector asks for the server's latest state and takes it,
// older than the Store's as it is.
func (s *runState) serverBehind(now time.Time) bool {
	if s.behindSince.IsZero() {
		s.behindSince = now
	}
	return now.Sub(s.behindSince) >= behindPatience
}

// behindPatience is how long the Reflector waits for a server that is
// behind the Store before it takes the server's state as it is. An
// apiserver whose watch cache lags catches up in seconds (kube-apiserver
// waits 3 s for its cache before it answers "too large"); one restored
// from a backup may take hours to pass the Store's resourceVersion, and a
// resourceVersion the server never had (a bad event or bookmark) it never
// passes: the cache would stay wrong for good. client-go takes the
// server's latest state at once.
const behindPatience = 2 * time.Minute

// maxStuckWatches is how many watches may fail in their stream at the same
// resourceVersion, on what the server sent (an event that cannot be
// decoded, an ERROR event), before the Reflector relists. Resuming is cheap
// and gets back an event spoiled on its way; but an event the server sends
// again every time stops the cache for good, where a list moves past it,
// as client-go's relist after such errors does.
const maxStuckWatches = 2

// nextAttempt decides, after a list or a watch ended with err, what the
// next attempt is and how long to wait before it.
func (r *Reflector[T]) nextAttempt(s *runState, err error) time.Duration {
	now := time.Now()
	switch {
	case err == nil:
		// A watch stream that ended cleanly after doing some work:
		// resume at once from the last resourceVersion. Failures before it
		// are no longer "in a row".
		s.stuck, s.stuckAt, s.probed = 0, "", false
		return 0
	case errors.Is(err, errRelistDue):
		s.needList = true
		return 0
	}
	// In Auto mode, a server that refuses the streaming list (a 400 or a
	// 422 for sendInitialEvents) is not an error to report: the Reflector
	// falls back to LIST by itself, and logs it (below), as client-go does;
	// a handler that treats such a status as fatal would stop on it. A
	// stream that misbehaves before its end bookmark is reported.
	var fallback *streamingUnsupportedError
	if !errors.As(err, &fallback) || fallback.err == nil || r.opt.mode != Auto {
		r.report(err)
	}
	refill := s.needList // the attempt that failed was a list
	// The attempt that failed was a streaming list (in WatchList mode, or
	// Auto not falling back this once), not a LIST.
	streamed := refill && s.streaming && !s.listOnce
	switch {
	case refill && s.streamFailed:
		// The LIST tried after a failed streaming list failed too:
		// stream again next time.
		s.listOnce, s.streamFailed = false, false
	case streamed && r.opt.mode == Auto && !errors.As(err, &fallback) && !isForbidden(err):
		// A streaming list is a watch, served by the watch cache only:
		// one that failed (the cache lagging, "too large"; a proxy or
		// a server that breaks watches) is followed by a LIST, which
		// may be served, as client-go falls back ("making progress is
		// better than deadlocking"). Without it the informer stays
		// unsynced as long as watches fail, where LIST mode syncs.
		s.listOnce, s.streamFailed = true, true
	}
	if s.failedInStream {
		s.probed = false // a watch opened since the last probe
	}
	if !refill && (!s.failedInStream || goingAway(err)) && !s.probed && outOfReach(err) {
		// No answer to a watch (or to a probe), or a stream ended by
		// the server going away: it may be restarting, and may come
		// back restored from a backup. Once in a run of failures: a
		// proxy that answers lists and 503s to watches must not
		// double the requests.
		s.probe = true
	}

	// Cases that return choose the wait themselves; the others share the
	// backoff (and Retry-After) below.
	switch {
	case errors.As(err, &fallback):
		if r.opt.mode == WatchList {
			return s.backoff.next(now)
		}
		if fallback.ended && (s.streamCutAt.IsZero() || now.Sub(s.streamCutAt) > streamCutMemory) {
			// A server restarting ends its streams too: LIST this once,
			// and stream again next time.
			s.streamCutAt = now
			s.listOnce = true
			r.opt.logger.Info("streaming list ended early, listing with LIST this once",
				"resource", r.opt.name)
			return 0
		}
		r.opt.logger.Info("streaming list not usable, falling back to LIST then WATCH",
			"resource", r.opt.name, "reason", fallback.reason)
		s.streaming = false
		return 0
	case isForbidden(err) && streamed && r.opt.mode == Auto:
		// The streaming list is a watch, which a role that grants list
		// only forbids: LIST this once, as client-go falls back to.
		s.listOnce = true
		return 0
	case isForbidden(err) && !refill:
		// Watching is forbidden where listing was not: list again after
		// the backoff, and again, so that the cache follows the server
		// as closely as the backoff lets it (as client-go's does), rather
		// than stay with the first list for good.
		s.needList = true
		return s.backoff.next(now)
	case isNotFound(err) && !refill:
		// The resource is not served any more (its CRD deleted, or its
		// version no longer served): list it again after the backoff,
		// as client-go does, rather than ask for a watch from a
		// resourceVersion of what may be a resource recreated since,
		// and trust every server to answer that with 410.
		s.needList = true
		return r.backoffFor(s, err)
	case isExpired(err) && refill:
		// A list at least as new as the Store refused with 410: the
		// server compacted the Store's resourceVersion away, so it is
		// ahead. Ask for its latest state, as client-go does; a state
		// older than the Store's is refused (errWentBackwards below)
		// until the server has been behind for behindPatience.
		if !s.latest {
			// Answered to a list at least as new as the Store's: the
			// server is not behind; a "too large" before this does not
			// count towards behindPatience.
			s.behindSince = time.Time{}
		}
		s.latest = true
		return s.backoff.next(now)
	case isTooLargeResourceVersion(err) && refill:
		// A list at least as new as the Store refused: the server is
		// behind the Store (an apiserver whose cache lags, one restored
		// from a backup, or the Store holds a resourceVersion the server
		// never had). Only a state older than the Store's could be had
		// at once: ask again after a wait, and once the server has been
		// behind for behindPatience, ask for its latest state and take
		// it, so that the cache converges to the server's state.
		if s.serverBehind(now) {
			s.latest, s.takeOlder = true, true
		}
		return max(s.backoff.next(now), time.Second)
	case isExpired(err):
		// The watch's resourceVersion is too old for the server: list
		// again, at once unless we just did (a server that answers every
		// fresh watch with 410 must not get a storm of LISTs).
		s.needList = true
		if now.Sub(s.listedAt) < minRelistGap {
			return s.backoff.next(now)
		}
		return 0
	case errors.Is(err, errWentBackwards):
		// An event older than the Store, or a list older than the
		// Store although it was asked for one at least as new (a
		// server that ignores resourceVersionMatch): list again, and
		// after behindPatience of lists like that take the latest.
		s.needList = true
		if refill && s.serverBehind(now) {
			s.latest, s.takeOlder = true, true
		}
		return s.backoff.next(now)
	case isTooLargeResourceVersion(err):
		// A watch from where the Store is that the server cannot serve:
		// after a short wait, a list at least as new as the Store (the
		// server waits for that). Retrying the watch until the server
		// reached that resourceVersion would, on a server restored from
		// a backup, resume past every change it made before it got
		// there; the list takes them all.
		s.needList = true
		return max(s.backoff.next(now), time.Second)
	case !refill && !s.progressed && s.failedInStream && answeredBadly(err):
		if rv := r.LastSyncResourceVersion(); rv != s.stuckAt {
			s.stuck, s.stuckAt = 0, rv
		}
		if s.stuck++; s.stuck >= maxStuckWatches {
			s.needList = true
		}
	}
	if s.progressed && !s.needList {
		// The watch moved the cache forward before it failed (a proxy
		// that cuts long streams does that) and is resumed: not one of
		// a run of failures. (One that relists is: a server that sends
		// an event and then 410 on every watch must not be listed at
		// the initial delay for ever.)
		s.backoff.reset()
	}
	return r.backoffFor(s, err)
}

// backoffFor is how long to wait after a failure: the backoff's next delay,
// or longer if the server asked for it with Retry-After (up to the
// backoff's maximum).
func (r *Reflector[T]) backoffFor(s *runState, err error) time.Duration {
	wait := s.backoff.next(time.Now())
	if ra := retryAfter(err); ra > wait {
		// Up to half as long again, drawn at random: the informers a
		// busy server turned away together must not all come back at
		// the same instant, and be turned away together again.
		// Below the maximum it is honoured, the draw cut at the maximum.
		// At or past it, it must be spread too: capped at the maximum
		// after the draw, every informer a server asked to wait a minute
		// would come back at the same instant, the maximum, and be
		// turned away together again, for ever. So the draw is in
		// [2/3, 1] of the maximum then (and a Retry-After of centuries
		// does not overflow).
		if ra < r.opt.backoffMax {
			wait = max(wait, ra+rand.N(min(ra/2, r.opt.backoffMax-ra)+1))
		} else {
			lo := r.opt.backoffMax / 3 * 2
			wait = max(wait, lo+rand.N(r.opt.backoffMax-lo+1))
		}
	}
	return wait
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
	if w == nil || isNilPointer(w) {
		return fmt.Errorf("watching %s: %w", r.opt.name, errNoWatcher)
	}
	defer w.Close()
	defer closeOnCancel(ctx, w)()
	r.watching()
	return r.follow(s, w, started)
}

// probe asks, before a watch resumes after the server was out of reach, for
// the server's newest state, one object of it, to learn its resourceVersion.
// A server restored from a backup while it was away is behind the Store,
// and kube-apiserver accepts a watch from a resourceVersion it has not
// reached and sends only the events past it: the watch would miss, and
// never tell, every change the restored server made before it got there.
// Newest state older than the Store's (a consistent read, not a lagging
// cache): the Store is refilled with it at once (tookOlderState reports
// it). Otherwise the watch resumes. One small LIST per return of a server
// that was away; the object listed is dropped.
func (r *Reflector[T]) probe(ctx context.Context, s *runState) error {
	meta, err := r.lw.List(ctx, ListOptions{Limit: 1}, func(T) error { return nil })
	if err != nil {
		return fmt.Errorf("listing %s (one object, to see whether the server is behind the cache): %w", r.opt.name, err)
	}
	s.probe, s.probed = false, true
	if since := r.LastSyncResourceVersion(); olderThan(meta.ResourceVersion, since) {
		s.needList, s.latest, s.takeOlder = true, true, true
	}
	return nil
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
	if r.opt.relistInterval > 0 {
		// Due one interval after the last refill, however many watches
		// came in between: watches that end sooner must not postpone it.
		closed := make(chan struct{})
		// Up to a tenth of the interval later, drawn at each refill, so
		// that informers started together do not relist together.
		d := r.opt.relistInterval
		if late := time.Duration(s.relistDraw * float64(d/10)); late < math.MaxInt64-d {
			d += late // not past what a Duration holds: MaxInt64 means never
		}
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
		if err != nil {
			switch {
			case relistDue.Load():
				return errRelistDue
			case errors.Is(err, ErrSkipped):
				r.report(fmt.Errorf("watching %s: %w", r.opt.name, err))
				continue
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

// minRelistGap is how long after a list a 410 Gone relists at once; one
// sooner backs off first.
const minRelistGap = time.Second

// streamCutMemory is how long a streaming list cut short counts against the
// next one: two within it, with no whole streaming list between, and Auto
// gives up streaming. (Each rolling restart of the apiservers may cut one.)
const streamCutMemory = time.Hour

// apply hands one watch event to the Store.
func (r *Reflector[T]) apply(ev Event[T]) error {
	switch ev.Type {
	case Error:
		return statusError(ev.Status)
	case Bookmark:
		if any(ev.Object) == nil || isNilPointer(ev.Object) {
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

	obj, rv, err := r.admit(ev.Object)
	last := r.LastSyncResourceVersion()
	if err != nil {
		r.report(fmt.Errorf("watching %s: %s event: %w", r.opt.name, ev.Type, err))
		// A valid object whose transform failed is skipped, as a refused
		// event is below (and as in client-go): a watch resumed later
		// starts after it, not with it again. A rejected object's
		// resourceVersion is not trusted: admit gives none.
		if rv != "" && newerThan(rv, last) {
			r.advance(rv)
		}
		return nil
	}
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
		// The Store refused this one event: reported and skipped, as
		// client-go does. Ending the watch instead would bring the same
		// event back from the same resourceVersion, for ever, with every
		// later event held up behind it.
		r.report(fmt.Errorf("watching %s: %w: storing %s event for %s: %w", r.opt.name, ErrSkipped, ev.Type, objkey.Key(obj), err))
	}
	r.advance(rv)
	return nil
}

// admit checks that an object from the server can be cached, applies the
// transform, and then (WithSharing) shares its parts with the objects
// before it. An object without a name or a resourceVersion, or with a "/"
// in its name or namespace, is rejected (ErrRejected, and no rv); otherwise rv is its resourceVersion, which the
// transform keeps, also when the transform fails.
func (r *Reflector[T]) admit(obj T) (_ T, rv string, _ error) {
	var zero T
	if any(obj) == nil || isNilPointer(obj) {
		return zero, "", fmt.Errorf("%w: no object", ErrRejected)
	}
	if obj.GetName() == "" {
		return zero, "", fmt.Errorf("%w: object has no metadata.name", ErrRejected)
	}
	if err := objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()); err != nil {
		return zero, "", fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if rv = obj.GetResourceVersion(); rv == "" {
		return zero, "", fmt.Errorf("%w: %s has no metadata.resourceVersion", ErrRejected, objkey.Key(obj))
	}
	if r.opt.transform != nil {
		id := identityOf(obj) // before f, which may change obj
		out, err := r.transform(obj)
		if err != nil {
			return zero, rv, fmt.Errorf("transforming %s: %w: %w", id, ErrSkipped, err)
		}
		if err := id.keptBy(out); err != nil {
			return zero, rv, fmt.Errorf("transforming %s: %w: %w", id, ErrSkipped, err)
		}
		obj = out
	}
	if r.parts != nil {
		share.Share(r.parts, obj)
	}
	return obj, rv, nil
}

// transform calls the transform; a panic in it is an error about this
// object, which is skipped, as a handler's panic is recovered.
func (r *Reflector[T]) transform(obj T) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the transform panicked: %v", p)
		}
	}()
	return r.opt.transform(obj)
}

// identity is what the pipeline goes by, which a transform must keep: the
// object's key (namespace and name) and its resourceVersion, which tells
// the informer whether a relisted object changed.
type identity struct{ namespace, name, rv string }

func identityOf(obj metav1.Object) identity {
	return identity{obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion()}
}

func (id identity) String() string {
	if id.namespace == "" {
		return id.name
	}
	return id.namespace + "/" + id.name
}

// keptBy checks that out, a transform's result, is an object with identity
// id.
func (id identity) keptBy(out metav1.Object) error {
	switch {
	case out == nil || isNilPointer(out):
		return errors.New("the transform returned no object")
	case out.GetNamespace() != id.namespace || out.GetName() != id.name:
		return fmt.Errorf("the transform changed the object's key to %s", objkey.Key(out))
	case out.GetResourceVersion() != id.rv:
		return fmt.Errorf("the transform changed the object's resourceVersion to %q", out.GetResourceVersion())
	}
	return nil
}

// isZeroEvent reports whether ev is the zero Event: no type, no object and
// no status.
func isZeroEvent[T metav1.Object](ev Event[T]) bool {
	return ev.Type == "" && ev.Status == nil && (any(ev.Object) == nil || isNilPointer(ev.Object))
}

// isNilPointer reports a typed nil, on which metadata getters would panic.
func isNilPointer(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
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

// watching records a watch the server accepted: the error that led to it,
// if any, is over.
func (r *Reflector[T]) watching() {
	r.mu.Lock()
	failed := r.failedSinceWatch
	r.lastError, r.failedSinceWatch = nil, false
	r.mu.Unlock()
	if failed && r.opt.recovered != nil {
		r.opt.recovered()
	}
}

// report records err and hands it to the error handler.
func (r *Reflector[T]) report(err error) {
	r.mu.Lock()
	r.lastError, r.failedSinceWatch = err, true
	r.mu.Unlock()
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
	return rest.FromStatus(st) // a nil one is a 500
}
