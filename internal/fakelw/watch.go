package fakelw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/reflector"
)

// Watch opens a stream from opts.ResourceVersion: a 410 ERROR event if that
// is compacted away, TooLarge if the Source has not reached it. If
// opts.SendInitialEvents, or if opts.ResourceVersion is "" or "0", the
// stream begins with the current state as ADDED events, as kube-apiserver's
// does; a streaming list (SendInitialEvents) marks the state's end with
// the initial-events-end BOOKMARK if opts.AllowBookmarks. With
// opts.TimeoutSeconds, the stream ends after that long as CloseWatches
// ends it. Options the server's validation refuses (SendInitialEvents
// without ResourceVersionMatch NotOlderThan, or the reverse) get its
// error, apierrors.IsInvalid.
func (s *Source[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	return s.watch(ctx, opts, nil)
}

// watch is Watch of the objects match accepts (nil: all), as a watch with
// a selector: see watcher.send.
func (s *Source[T]) watch(ctx context.Context, opts reflector.WatchOptions, match func(T) bool) (reflector.Watcher[T], error) {
	s.Watches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spin.AskedAt(ctx, s.rv)
	if len(s.watchErrs) > 0 {
		err := s.watchErrs[0]
		s.watchErrs = s.watchErrs[1:]
		return nil, err
	}
	future := s.futureWatches && !opts.SendInitialEvents
	if err := checkWatchOptions(opts); err != nil {
		return nil, err
	}
	from, err := s.parseRVLocked(opts.ResourceVersion, true)
	if err != nil && !(future && apierrors.IsTimeout(err)) {
		return nil, err
	}
	w := newWatcher(ctx, match)
	w.bookmarks = opts.AllowBookmarks
	// A watch from "" or "0" with no resourceVersionMatch is a streaming
	// list on a server that serves them: kube-apiserver defaults
	// sendInitialEvents to true for it (SetListOptionsDefaults). On one
	// that does not, it is the legacy watch from 0: the state, no bookmark.
	legacy := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	switch {
	case opts.SendInitialEvents || legacy:
		if opts.SendInitialEvents && s.noInitialEvents {
			return nil, Status(http.StatusBadRequest, metav1.StatusReasonBadRequest, "sendInitialEvents is forbidden")
		}
		for _, o := range filter(s.sortedLocked(), match) {
			w.push(reflector.Event[T]{Type: reflector.Added, Object: o})
		}
		streaming := opts.SendInitialEvents || opts.ResourceVersionMatch == "" && !s.noInitialEvents
		if w.bookmarks && streaming {
			bm := s.newObj()
			bm.SetResourceVersion(strconv.FormatUint(s.rv, 10))
			bm.SetAnnotations(map[string]string{reflector.InitialEventsEndAnnotation: "true"})
			w.push(reflector.Event[T]{Type: reflector.Bookmark, Object: bm})
		}
	default:
		if from < s.compact {
			w.push(reflector.Event[T]{Type: reflector.Error, Status: &metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
				Message: fmt.Sprintf("too old resource version: %d (%d)", from, s.compact),
			}})
			w.end(io.EOF)
			return w, nil
		}
		for _, ev := range s.history {
			if ev.rv > from {
				w.send(ev)
			}
		}
		w.after = from
	}
	s.watchers[w] = struct{}{}
	// A watch whose context ends is over, as a server's is once the
	// request is gone: it takes no more events, closed or not.
	w.unwatch = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
		w.end(ctx.Err())
	})
	// A timeout longer than a Duration holds (292 years) is none.
	if opts.TimeoutSeconds > 0 && opts.TimeoutSeconds <= math.MaxInt64/int64(time.Second) {
		w.timer = time.AfterFunc(time.Duration(opts.TimeoutSeconds)*time.Second, func() { s.timeOut(w) })
	}
	return &tracked[T]{watcher: w, s: s}, nil
}

// timeOut ends w, if it is still open, as CloseWatches does: its
// timeoutSeconds have passed.
func (s *Source[T]) timeOut(w *watcher[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		s.endLocked(w)
	}
}

// endLocked ends the open watch w cleanly, as a server does at its
// timeout: first, if w allows bookmarks, a BOOKMARK at the current
// resourceVersion, as kube-apiserver sends one then. A T that no empty
// object can be made of (an interface type: newObj returns nil) ends the
// watch without one.
func (s *Source[T]) endLocked(w *watcher[T]) {
	if w.bookmarks {
		if bm := s.newObj(); !objkey.IsNil(bm) {
			bm.SetResourceVersion(strconv.FormatUint(s.rv, 10))
			w.push(reflector.Event[T]{Type: reflector.Bookmark, Object: bm})
		}
	}
	w.end(io.EOF)
	delete(s.watchers, w)
}

// tracked removes its watcher from the Source when closed.
type tracked[T reflector.Object] struct {
	*watcher[T]
	s *Source[T]
}

func (t *tracked[T]) Close() error {
	t.unwatch()
	t.s.mu.Lock()
	delete(t.s.watchers, t.watcher)
	t.s.mu.Unlock()
	return t.watcher.Close()
}

// watcher is one open stream: an unbounded queue of events.
type watcher[T reflector.Object] struct {
	match     func(T) bool // the objects watched; nil: all
	bookmarks bool         // the watch allows BOOKMARK events
	after     uint64       // only events past this resourceVersion are sent
	timer     *time.Timer  // ends the watch at its timeoutSeconds; nil: none
	unwatch   func() bool  // stops ending the watch when its context ends
	mu        sync.Mutex
	queue     []reflector.Event[T]
	err       error         // what Next returns once the queue is empty
	notify    chan struct{} // receives a token when queue or err changes
	ctx       context.Context
}

func newWatcher[T reflector.Object](ctx context.Context, match func(T) bool) *watcher[T] {
	return &watcher[T]{match: match, notify: make(chan struct{}, 1), ctx: ctx}
}

// send queues what the change ev is to this watcher. With a selector
// (match), kube-apiserver tells a watch of the objects it selects: one
// that starts to match arrives as ADDED, one that stops as DELETED, with
// its previous state stamped with the change's resourceVersion; changes to
// objects that matched neither before nor after are not sent.
func (w *watcher[T]) send(ev event[T]) {
	if w.match == nil {
		w.push(reflector.Event[T]{Type: ev.typ, Object: ev.obj})
		return
	}
	now := ev.typ != reflector.Deleted && w.match(ev.obj)
	before := ev.hasPrev && w.match(ev.prev)
	switch {
	case now && before:
		w.push(reflector.Event[T]{Type: ev.typ, Object: ev.obj})
	case now:
		w.push(reflector.Event[T]{Type: reflector.Added, Object: ev.obj})
	case before && ev.typ == reflector.Deleted:
		w.push(reflector.Event[T]{Type: reflector.Deleted, Object: ev.obj})
	case before:
		gone := ev.prev.DeepCopyObject().(T)
		gone.SetResourceVersion(ev.obj.GetResourceVersion())
		w.push(reflector.Event[T]{Type: reflector.Deleted, Object: gone})
	}
}

func (w *watcher[T]) push(ev reflector.Event[T]) {
	w.mu.Lock()
	if w.err == nil {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	w.wake()
}

func (w *watcher[T]) end(err error) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.wake()
}

func (w *watcher[T]) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Next returns the next event, or the error that ended the stream.
func (w *watcher[T]) Next() (reflector.Event[T], error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev := w.queue[0]
			w.queue[0] = reflector.Event[T]{} // the queue does not keep what it handed out
			w.queue = w.queue[1:]
			if len(w.queue) == 0 {
				w.queue = nil // nor its array, once drained
			}
			w.mu.Unlock()
			return ev, nil
		}
		err := w.err
		w.mu.Unlock()
		if err != nil {
			return reflector.Event[T]{}, err
		}
		select {
		case <-w.notify:
		case <-w.ctx.Done():
			return reflector.Event[T]{}, w.ctx.Err()
		}
	}
}

// Close ends the stream; a blocked Next returns an error.
func (w *watcher[T]) Close() error {
	w.mu.Lock()
	w.queue = nil
	w.mu.Unlock()
	w.end(errClosed)
	return nil
}

var errClosed = errors.New("watch closed")
