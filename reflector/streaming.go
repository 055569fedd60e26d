package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// The streaming list, the other way to refill the Store (refill.go has
// both): a watch that sends the current state as ADDED events, ending
// with a bookmark, at which the events buffered replace the Store's
// contents; the stream then goes on as the watch.

// watchList refills the Store with a streaming list: a watch that first
// sends the current state as ADDED events and marks its end with a bookmark.
// The events are buffered and replace the Store's contents at that bookmark;
// then the same stream goes on as an ordinary watch.
func (r *Reflector[T]) watchList(ctx context.Context, s *runState) error {
	since, from := r.LastSyncResourceVersion(), r.LastSyncResourceVersion()
	if s.latest {
		from = ""
	}
	timeout := r.watchTimeout()
	started := time.Now()
	w, err := r.lw.Watch(ctx, WatchOptions{
		ResourceVersion:      from,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowBookmarks:       true,
		SendInitialEvents:    true,
		TimeoutSeconds:       timeout,
	})
	if err != nil {
		if refusesStreaming(err) && !refusesResourceVersion(err) {
			return r.streamingFailed(&streamingUnsupportedError{reason: err.Error(), err: err})
		}
		return fmt.Errorf("listing %s (streaming): %w", r.opt.name, err)
	}
	if w == nil || isNilPointer(w) {
		return fmt.Errorf("listing %s (streaming): %w", r.opt.name, errNoWatcher)
	}
	defer w.Close()
	defer closeOnCancel(ctx, w)()
	r.streamAccepted()
	// A ListerWatcher of one's own that ignores SendInitialEvents never
	// sends the bookmark: after a while, LastError says what is awaited
	// (WaitForCacheSync quotes it).
	stopWaiting := r.noteAwaitedBookmark()
	defer stopWaiting()
	// The server ends the stream at timeoutSeconds; one that ignores it
	// and never sends the bookmark (initial events for ever) is cut here,
	// rather than waited for (client-go waits for the server).
	limit := time.Duration(timeout)*time.Second + initialEventsGrace
	deadline, cancelDeadline := context.WithTimeout(context.Background(), limit)
	defer cancelDeadline()
	stopDeadline := sync.OnceFunc(closeOnCancel(deadline, w))
	defer stopDeadline() // before cancelDeadline: defers run last first

	var initial initialEvents[T]
	for {
		ev, err := w.Next()
		if err == nil && !isZeroEvent(ev) {
			r.events.Add(1)
		}
		if (err != nil || isZeroEvent(ev)) && deadline.Err() != nil {
			return r.streamingFailed(&streamingUnsupportedError{reason: fmt.Sprintf("no initial-events-end bookmark within %v (the timeoutSeconds asked for, and %v)", limit, initialEventsGrace), ended: true})
		}
		if err == nil && isZeroEvent(ev) {
			// A channel Watcher's end of stream, as io.EOF is below.
			return r.streamingFailed(&streamingUnsupportedError{reason: "the stream ended (a zero Event) before the initial-events-end bookmark", ended: true})
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return r.streamingFailed(&streamingUnsupportedError{reason: "the stream ended before the initial-events-end bookmark", ended: true})
			}
			if errors.Is(err, ErrStalled) {
				// A server that serves streaming lists sends the bookmark
				// right after the initial events; one that goes quiet
				// instead may do so again on every attempt, or may have
				// lost its connection once: LIST this once, and give up
				// streaming after two in a row (see quietStreams).
				return r.streamingFailed(&streamingUnsupportedError{reason: "the stream went quiet before the initial-events-end bookmark", ended: true, quiet: true})
			}
			if errors.Is(err, ErrSkipped) {
				// An event skipped (one of another kind) fails the list:
				// a list without the object it held would delete it from
				// the cache, which would stay wrong until the object
				// changed. Tried again, as a LIST page that holds one is.
				return &incompleteListError{name: r.opt.name, err: err}
			}
			return fmt.Errorf("listing %s (streaming): %w", r.opt.name, err)
		}
		switch ev.Type {
		case Added:
			obj, kept, err := r.admitListed(ev.Object, false)
			if err != nil {
				r.report(fmt.Errorf("listing %s (streaming): %w", r.opt.name, err))
				if kept {
					initial.keep(obj)
				}
				continue
			}
			initial.add(obj)
		case Bookmark:
			if objkey.IsNil(ev.Object) || ev.Object.GetAnnotations()[InitialEventsEndAnnotation] != "true" {
				return r.streamingFailed(&streamingUnsupportedError{reason: "a BOOKMARK came before the initial-events-end bookmark"})
			}
			rv := ev.Object.GetResourceVersion()
			if rv == "" {
				// Nothing to watch on from: a watch from "" starts at the
				// server's newest state, and what changed in between
				// would be lost (a LIST without one is listed again on
				// a timer instead: see list).
				return r.streamingFailed(&streamingUnsupportedError{reason: "the initial-events-end bookmark has no resourceVersion"})
			}
			back := olderThan(rv, since)
			if back && !s.takeOlder {
				return fmt.Errorf("listing %s (streaming): %w: initial events end at %s, cache already at %s",
					r.opt.name, errWentBackwards, rv, since)
			}
			stopWaiting()
			// If the deadline has just passed, the list is whole all the
			// same: the watch that follows fails, and is resumed.
			stopDeadline()
			r.synced(rv) // first, as in list
			if err := r.replace(initial.items, initial.leftOut, rv); err != nil {
				r.unsynced(since)
				return fmt.Errorf("listing %s (streaming): storing the initial events: %w", r.opt.name, err)
			}
			if back {
				r.tookOlderState(s, rv, since)
			}
			s.refilled()
			s.streamCutAt, s.quietStreams = time.Time{}, 0
			r.following()
			// The watch goes on in the same stream, opened at started:
			// one that ends soon after a long list did not end at once.
			return r.follow(s, w, started)
		case Error:
			return fmt.Errorf("listing %s (streaming): %w", r.opt.name, statusError(ev.Status))
		default:
			return r.streamingFailed(&streamingUnsupportedError{reason: fmt.Sprintf("a %s event came before the initial-events-end bookmark", ev.Type)})
		}
	}
}

// streamingFailed names the resource in why a streaming list could not be
// used; the Reflector falls back to LIST on it (nextAttempt).
func (r *Reflector[T]) streamingFailed(e *streamingUnsupportedError) error {
	return fmt.Errorf("listing %s (streaming): %w", r.opt.name, e)
}

// bookmarkPatience is how long a streaming list runs without its
// initial-events-end bookmark before LastError says so.
const bookmarkPatience = time.Minute

// noteAwaitedBookmark sets LastError, bookmarkPatience from now, to say that
// the streaming list's initial-events-end bookmark has not come. The func it
// returns stops that, waiting for a note under way (the timer's goroutine
// is Run's too), and takes the note back if LastError still holds it; it
// may be called more than once.
func (r *Reflector[T]) noteAwaitedBookmark() (stop func()) {
	note := fmt.Errorf("listing %s (streaming): %w after %v: a very large list, or a ListerWatcher that ignores SendInitialEvents (it needs WithMode(ListWatch))",
		r.opt.name, errNoInitialEventsEnd, bookmarkPatience)
	noted := make(chan struct{})
	t := time.AfterFunc(bookmarkPatience, func() {
		defer close(noted)
		r.mu.Lock()
		r.lastError = note
		r.mu.Unlock()
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			if !t.Stop() {
				<-noted
			}
			r.mu.Lock()
			if r.lastError == note {
				r.lastError = nil
			}
			r.mu.Unlock()
		})
	}
}

// initialEventsGrace is how long past the timeoutSeconds it asked for a
// streaming list waits for its initial-events-end bookmark.
const initialEventsGrace = 30 * time.Second

// initialEvents collects the initial events of a streaming list: the
// objects to store, and those the transform failed on or that came without
// a resourceVersion, which the Store keeps as it has them (replace). Each holds one object per key: a key sent
// twice (no apiserver does) keeps the object of the greater resourceVersion
// (the later one if they do not compare, as the DeltaFIFO's Replace
// chooses), so that what is held is bounded by the objects the server has.
type initialEvents[T metav1.Object] struct {
	items, leftOut []T
	at             map[nameKey]int  // key → index in items
	kept           map[nameKey]bool // the keys in leftOut: only its keys are used
}

// nameKey is an object's namespace and name: its key, without building it.
type nameKey struct{ namespace, name string }

func keyOf(obj metav1.Object) nameKey { return nameKey{obj.GetNamespace(), obj.GetName()} }

func (e *initialEvents[T]) add(obj T) {
	k := keyOf(obj)
	if i, dup := e.at[k]; dup {
		if !olderThan(obj.GetResourceVersion(), e.items[i].GetResourceVersion()) {
			e.items[i] = obj
		}
		return
	}
	if e.at == nil {
		e.at = make(map[nameKey]int)
	}
	e.at[k] = len(e.items)
	e.items = append(e.items, obj)
}

func (e *initialEvents[T]) keep(obj T) {
	k := keyOf(obj)
	if e.kept[k] {
		return
	}
	if e.kept == nil {
		e.kept = make(map[nameKey]bool)
	}
	e.kept[k] = true
	e.leftOut = append(e.leftOut, obj)
}
