package reflector

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// slowBody's Read blocks until the body is closed and then returns data, as
// a read already under way when a watch is closed can.
type slowBody struct {
	closing   chan struct{}
	once      sync.Once
	firstDone chan struct{} // the first Close returns when this is closed
}

func newSlowBody() *slowBody {
	return &slowBody{closing: make(chan struct{}), firstDone: make(chan struct{})}
}

func (b *slowBody) Read(p []byte) (int, error) {
	<-b.closing
	return copy(p, "{}\n"), nil
}

func (b *slowBody) Close() error {
	first := false
	b.once.Do(func() { first = true; close(b.closing) })
	if first {
		<-b.firstDone
	}
	return nil
}

// A read that returns data after the watch was closed does not arm the
// watchdog again: it stayed armed for the whole idle timeout, holding the
// closed stream, and then closed it a second time on its own goroutine.
func TestWatchdogNotRearmedAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSlowBody()
		close(b.firstDone)
		w := newWatchdog(b, time.Hour, func() {})
		read := make(chan struct{})
		go func() {
			w.Read(make([]byte, 8))
			close(read)
		}()
		synctest.Wait()
		w.Close()
		<-read
		if w.timer.Stop() {
			t.Error("the watchdog's timer was armed again by a read that returned after Close")
		}
	})
}

// Close waits for an expiry that has begun to finish closing the stream, so
// that nothing of the watch runs after it.
func TestWatchdogCloseWaitsForExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSlowBody()
		cancelled := make(chan struct{})
		w := newWatchdog(b, time.Second, func() { close(cancelled) })
		time.Sleep(time.Second) // the stream is idle: expire begins, and blocks in the body's Close
		<-cancelled
		synctest.Wait()
		if !w.idle() {
			t.Fatal("the watchdog did not fire")
		}
		closed := make(chan struct{})
		go func() {
			w.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while the expiry was still closing the stream")
		default:
		}
		close(b.firstDone)
		<-closed
	})
}

// An expiry due at the instant the watch is closed either finishes before
// Close returns or does nothing: the cancel function is never called after
// Close has returned.
func TestWatchdogNoExpiryAfterClose(t *testing.T) {
	for range 300 {
		synctest.Test(t, func(t *testing.T) {
			b := newSlowBody()
			close(b.firstDone)
			var closeReturned, late atomic.Bool
			w := newWatchdog(b, time.Second, func() { late.Store(closeReturned.Load()) })
			time.Sleep(time.Second) // the timer fires at this instant too
			w.Close()
			closeReturned.Store(true)
			synctest.Wait()
			if late.Load() {
				t.Fatal("the watchdog expired after Close had returned")
			}
		})
	}
}

// A read that returns data after the watchdog fired (its Close ended the
// read) does not arm it again.
func TestWatchdogNotRearmedAfterFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSlowBody()
		close(b.firstDone)
		w := newWatchdog(b, time.Second, func() {})
		read := make(chan struct{})
		go func() {
			w.Read(make([]byte, 8))
			close(read)
		}()
		<-read // ends when the watchdog closes the body, a second on
		if !w.idle() {
			t.Fatal("the watchdog did not fire")
		}
		if w.timer.Stop() {
			t.Error("the watchdog's timer was armed again by a read that returned after it fired")
		}
		w.Close()
	})
}
