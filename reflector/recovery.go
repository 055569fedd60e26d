package reflector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// How Run recovers after a list or a watch fails: what it carries from
// one attempt to the next (runState), what it tries next and how long it
// waits first (nextAttempt), and the probe that checks a server that was
// away is not behind the Store.

// runState is what Run's loop carries from one attempt to the next. It is
// owned by the Run goroutine.
type runState struct {
	needList       bool      // the Store must be refilled before watching
	streaming      bool      // refill with a streaming list rather than LIST
	listOnce       bool      // but refill with LIST this once
	streamFailed   bool      // listOnce because a streaming list failed: a failed LIST streams again
	streamCutAt    time.Time // when the last streaming list cut short was (zero after a whole one)
	quietStreams   int       // streaming lists that went quiet before their end bookmark, since a whole one
	latest         bool      // ask for the server's latest state, not one at least as new as the Store's
	behindSince    time.Time // when a refill first found the server behind the Store (zero after a refill)
	takeOlder      bool      // the server has been behind for behindPatience: its latest state is taken, older as it is
	listedAt       time.Time // when the Store was last refilled
	relistDraw     float64   // in [0, 1), drawn at each refill: where in [d, 1.1d) the next timed relist falls
	backoff        *backoff
	progressed     bool   // the last attempt's watch moved the resourceVersion forward
	movedOn        bool   // since the last failure, a watch moved the cache forward and ended cleanly
	failedInStream bool   // the last attempt's watch failed after it was opened
	stuck          int    // watches that failed in their stream at stuckAt
	stuckAt        string // the resourceVersion they failed at
	probe          bool   // the server was out of reach: check it is not behind the Store before watching (probe)
	probed         bool   // a probe found it was not, and no watch has opened since
	pageRelists    bool   // a list in one answer ran out of the list timeout: relists are paged
	// toldUnversioned: a list without a resourceVersion was logged (once a Run)
	toldUnversioned bool
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

// unversionedInterval is how long after a list without a resourceVersion
// the next list comes: WithRelistInterval's interval if given, else the
// backoff's cap, at least a second (30 s by default; client-go's informer,
// whose every watch of such a resource fails, lists it after each, at its
// backoff's pace), up to a tenth later, drawn at each refill.
func (r *Reflector[T]) unversionedInterval(s *runState) time.Duration {
	d := r.opt.unversionedEvery()
	if late := time.Duration(s.relistDraw * float64(d/10)); late < math.MaxInt64-d {
		d += late
	}
	return d
}

// relistEvery returns how long after a refill WithRelistInterval's relist
// is due, if it was set: the interval, and up to a tenth of it later,
// drawn at each refill, so that informers started together do not relist
// together.
func (r *Reflector[T]) relistEvery(s *runState) (time.Duration, bool) {
	d := r.opt.relistInterval
	if d <= 0 {
		return 0, false
	}
	if late := time.Duration(s.relistDraw * float64(d/10)); late < math.MaxInt64-d {
		d += late // not past what a Duration holds: MaxInt64 means never
	}
	return d, true
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
	movedOn := s.movedOn || s.progressed
	s.movedOn = false
	switch {
	case err == nil:
		// A watch stream that ended cleanly after doing some work:
		// resume at once from the last resourceVersion. Failures before it
		// are no longer "in a row", and if it moved the cache forward
		// (a proxy that cuts long streams cleanly), the next failure is
		// treated as one that cut it with an error (below).
		s.stuck, s.stuckAt, s.probed = 0, "", false
		s.movedOn = movedOn
		return 0
	case errors.Is(err, errRelistDue):
		s.needList = true
		return 0
	case errors.Is(err, errUnversioned):
		// With LIST again, in Auto mode too: a streaming list (a watch)
		// cannot give such a resource a state to watch from, and one the
		// server refuses (a role that grants list only: 403) would be
		// reported, and then recovered from, at every interval.
		s.needList, s.listOnce = true, true
		return r.unversionedInterval(s)
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
	case errors.Is(err, errUnappliedDelete):
		// Whatever the event's object failed on (it may wrap any error a
		// transform returned), a relist takes the object out.
		s.needList = true
		return s.backoff.next(now)
	case errors.As(err, &fallback):
		if r.opt.mode == WatchList {
			return s.backoff.next(now)
		}
		if fallback.quiet {
			// Quiet for the idle timeout each, so counted whatever the
			// time between them: a server whose streaming lists always
			// go quiet would cost every refill that wait.
			s.quietStreams++
		}
		if fallback.ended && s.quietStreams < 2 && (fallback.quiet || s.streamCutAt.IsZero() || now.Sub(s.streamCutAt) > streamCutMemory) {
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
	case (isForbidden(err) || isMethodNotAllowed(err)) && !refill:
		// Watching is forbidden where listing was not (or a probe, a
		// LIST, was forbidden), or the resource is not watchable at all
		// (405): list again after the backoff, and again, so that the
		// cache follows the server as closely as the backoff lets it (as
		// client-go's does), rather than stay with the first list for
		// good.
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
	case refusesResourceVersion(err) && r.LastSyncResourceVersion() != "" && !s.latest:
		// The server calls the Store's resourceVersion invalid (not a
		// number, to kube-apiserver): no watch from it, and no list at
		// least as new, will be served. Nothing can be older than a
		// resourceVersion the server never had: ask for its latest state.
		s.needList, s.latest = true, true
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
	if movedOn && !s.needList {
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

// minRelistGap is how long after a list a 410 Gone relists at once; one
// sooner backs off first.
const minRelistGap = time.Second

// streamCutMemory is how long a streaming list cut short counts against the
// next one: two within it, with no whole streaming list between, and Auto
// gives up streaming. (Each rolling restart of the apiservers may cut one.)
const streamCutMemory = time.Hour
