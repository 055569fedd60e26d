package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/wire"
)

// An HTTP watch stream, as HTTPListerWatcher.Watch opens it: a decoder
// over the response body, which a watchdog closes when no bytes arrive for
// longer than the idle timeout (WithWatchIdleTimeout).

// httpWatcher is one open watch stream.
type httpWatcher[T Object] struct {
	body   *watchdog
	cancel context.CancelFunc
	next   func() (wire.Event[T], error)
	stop   func() // stops a parallel decoder's goroutines; nil for a sequential one
	once   sync.Once
	// namespace is the namespace watched ("" for all): an object of
	// another is none of this watch's.
	namespace string
}

func (w *httpWatcher[T]) Next() (Event[T], error) {
	ev, err := w.next()
	if err != nil {
		switch {
		case errors.Is(err, wire.ErrWrongKind) && ev.Type == wire.Deleted:
			// Whatever it deleted, it was named in a way this watch
			// cannot read: skipped, an object it meant would stay cached
			// for good. The end of the watch, and a relist.
			return Event[T]{}, fmt.Errorf("%w: %w", errUnappliedDelete, err)
		case errors.Is(err, wire.ErrWrongKind):
			return Event[T]{}, fmt.Errorf("%w: %w", ErrSkipped, err)
		case w.body.idle():
			return Event[T]{}, fmt.Errorf("%w: no data for %s", ErrStalled, w.body.timeout)
		}
		return Event[T]{}, err
	}
	if w.ofAnotherNamespace(ev) {
		return Event[T]{}, fmt.Errorf("%w: %s event for %s in namespace %q, not the namespace watched, %q",
			ErrSkipped, ev.Type, ev.Object.GetName(), ev.Object.GetNamespace(), w.namespace)
	}
	return Event[T]{Type: EventType(ev.Type), Object: ev.Object, Status: ev.Status}, nil
}

// ofAnotherNamespace reports an event of an object in a namespace other
// than the one watched (a proxy that mixed up its streams): taken, the
// object would stay cached. An object without a namespace is taken as it
// comes, as in a list.
func (w *httpWatcher[T]) ofAnotherNamespace(ev wire.Event[T]) bool {
	if w.namespace == "" || ev.Type == wire.Bookmark || ev.Type == wire.Error || objkey.IsNil(ev.Object) {
		return false
	}
	ns := ev.Object.GetNamespace()
	return ns != "" && ns != w.namespace
}

func (w *httpWatcher[T]) Close() error {
	w.once.Do(func() {
		w.cancel()
		w.body.Close() // first: it unblocks a parallel decoder's reader
		if w.stop != nil {
			w.stop()
		}
	})
	return nil
}

// ErrStalled marks a watch stream closed by the client's watchdog because
// nothing arrived for too long: the server or the network stopped sending
// without closing the connection. The Reflector reopens the watch.
var ErrStalled = errors.New("watch stream stalled")

// ErrNoAnswer marks a watch request that got no answer within the idle
// timeout (WithWatchIdleTimeout): a connection that stopped forwarding, or
// a server that holds its answers back. It wraps ErrStalled, but no
// stream was opened: the Reflector retries after its backoff.
var ErrNoAnswer = fmt.Errorf("%w: no answer", ErrStalled)

// watchdog closes a stream that delivers no bytes for timeout. Once
// closed, by its owner or by its timer, it arms the timer no more, and its
// Close returns only after an expiry that had begun has closed the stream:
// nothing of the stream outlives it on a timer.
type watchdog struct {
	r       io.ReadCloser
	timeout time.Duration
	cancel  context.CancelFunc
	timer   *time.Timer
	expired chan struct{} // closed when expire has closed the stream

	mu     sync.Mutex
	fired  bool // expire began: the stream was idle for timeout
	closed bool // Close was called
}

// newWatchdog watches r. On expiry it calls cancel and closes r, on the
// timer's goroutine; neither may call the watchdog's Close, which would
// wait for that expiry to end.
func newWatchdog(r io.ReadCloser, timeout time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{r: r, timeout: timeout, cancel: cancel, expired: make(chan struct{})}
	if timeout > 0 {
		w.timer = time.AfterFunc(timeout, w.expire)
	}
	return w
}

// expire runs on the timer's goroutine. It may run twice when a Read
// re-arms the timer just as it fires; the second run does nothing.
func (w *watchdog) expire() {
	w.mu.Lock()
	if w.fired || w.closed {
		w.mu.Unlock()
		return
	}
	w.fired = true
	w.mu.Unlock()
	w.cancel()
	w.r.Close()
	close(w.expired)
}

func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 && w.timer != nil {
		w.mu.Lock()
		if !w.fired && !w.closed {
			w.timer.Reset(w.timeout)
		}
		w.mu.Unlock()
	}
	return n, err
}

func (w *watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	fired := w.fired
	w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	err := w.r.Close()
	if fired {
		<-w.expired
	}
	return err
}

func (w *watchdog) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}
