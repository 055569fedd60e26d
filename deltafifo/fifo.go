package deltafifo

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// ErrClosed is returned by Pop once the FIFO is closed and drained, and by
// every write after Close (except one of an object the FIFO would refuse
// anyway: objects are checked and transformed first, and that error comes
// first). Retrying does not help: the FIFO stays closed.
var ErrClosed = errors.New("deltafifo: queue is closed")

// ErrInvalidObject is wrapped by the error a write returns for an object it
// cannot queue: a nil object, one without a name, one with a "/" in its name
// or namespace (which no Kubernetes object has: its key would be another
// object's), or one whose key is empty or whose key function panics.
// The queue is unchanged; retrying the same object does not help. It is the
// same error as indexer.ErrInvalidObject.
var ErrInvalidObject = objkey.ErrInvalidObject

// FIFO is a queue of keys, each with the [Delta]s that happened to its
// object since the consumer last popped it. Producers call Add, Update,
// Delete and Replace (the reflector) and Resync (the informer); one
// consumer (the informer) calls Pop in a loop.
//
// The zero FIFO is an empty, open FIFO with the default key function and
// no known objects or transform, as New() makes. A FIFO is safe for
// concurrent use and must not be copied after first use.
type FIFO[T metav1.Object] struct {
	keyFunc   func(T) string
	known     KnownObjects[T] // may be nil
	transform func(T) (T, error)

	// readyOnce makes the channels and the map, and sets the default key
	// function if there is none: in New, or at the first use of the zero
	// FIFO.
	readyOnce sync.Once

	// wake holds a token when a Pop waiting for a key may find one.
	wake chan struct{}
	// done is closed by Close.
	done chan struct{}
	// synced is closed when HasSynced first becomes true.
	synced chan struct{}

	mu sync.Mutex
	// items holds the deltas of every queued key, oldest first; a key is in
	// items if and only if it is in queue.
	items map[string][]Delta[T]
	// itemsPeak is the most keys items has held since it was made: a map
	// keeps the room of its largest size, so once a large backlog (the
	// first list) is drained to a quarter, Pop moves the rest to a new
	// one.
	itemsPeak int
	queue     keyQueue
	// inflight lists the batches popped whose process call has not returned
	// yet, in pop order. Replace, Resync and Delete treat them as known, so
	// that releasing the lock during process loses no deletion.
	inflight []inflightBatch[T]
	popSeq   uint64
	closed   bool

	// populated: a write (not Resync) has happened. initialQueued counts the
	// keys of the first Replace still in the queue; initialPending also
	// counts those popped whose process call has not returned.
	populated      bool
	initialQueued  int
	initialPending int
	syncedClosed   bool
}

// inflightBatch is a popped key whose process call is running.
type inflightBatch[T metav1.Object] struct {
	seq    uint64
	key    string
	newest Delta[T]
}

// New returns an empty, open FIFO.
func New[T metav1.Object](opts ...Option[T]) *FIFO[T] {
	c := config[T]{keyFunc: defaultKey[T]}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	f := &FIFO[T]{keyFunc: c.keyFunc, known: c.known, transform: c.transform}
	f.ready()
	return f
}

// ready readies f for use, once: every method calls it first, so that the
// zero FIFO works as New() does.
func (f *FIFO[T]) ready() {
	f.readyOnce.Do(func() {
		if f.keyFunc == nil {
			f.keyFunc = defaultKey[T]
		}
		f.wake = make(chan struct{}, 1)
		f.done = make(chan struct{})
		f.synced = make(chan struct{})
		f.items = make(map[string][]Delta[T])
	})
}

// Add queues an Added delta for obj.
func (f *FIFO[T]) Add(obj T) error { return f.write("Add", Added, obj) }

// Update queues an Updated delta for obj.
func (f *FIFO[T]) Update(obj T) error { return f.write("Update", Updated, obj) }

// Delete queues a Deleted delta carrying obj, the last state of the object.
// If the last delta queued for the key is also a Deleted, the two become
// one: the one whose final state is known, or else the newer.
//
// With [WithKnownObjects], a delete of a key that is neither known, queued,
// nor being processed is dropped: the consumer never saw the object, or
// already saw it deleted (typically by a Replace), so there is nothing to
// tell it. So is a delete of a key not queued whose batch being processed
// ends in a delete: the consumer is applying that one.
func (f *FIFO[T]) Delete(obj T) error { return f.write("Delete", Deleted, obj) }

func (f *FIFO[T]) write(op string, typ DeltaType, obj T) error {
	f.ready()
	key, obj, err := f.prepare(obj)
	if err != nil {
		return fmt.Errorf("deltafifo: %s: %w", op, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if typ == Deleted && f.known != nil {
		news := false
		if err := f.readKnown(func() { news = f.deleteIsNewsLocked(key) }); err != nil {
			return fmt.Errorf("deltafifo: %s: %w", op, err)
		}
		if !news {
			f.markPopulatedLocked()
			return nil
		}
	}
	f.markPopulatedLocked()
	f.enqueueLocked(key, Delta[T]{Type: typ, Object: obj})
	return nil
}

// readKnown calls read, which reads the known objects, if there are any. A
// panic in them, which are user code, is an error.
func (f *FIFO[T]) readKnown(read func()) (err error) {
	if f.known == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the known objects panicked: %v", r)
		}
	}()
	read()
	return nil
}

// HasSynced reports whether the FIFO has been populated and every key queued
// by the first Replace has been popped and processed (its process call
// returned). It is also true once an Add, Update or Delete came before any
// Replace: there is then no initial list to wait for.
func (f *FIFO[T]) HasSynced() bool {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.populated && f.initialPending == 0
}

// Synced returns a channel that is closed when HasSynced first becomes true.
func (f *FIFO[T]) Synced() <-chan struct{} {
	f.ready()
	return f.synced
}

// Close closes the FIFO: writes fail with [ErrClosed], and Pop, once the
// queue is drained, returns ErrClosed instead of waiting. Waiting Pops wake
// up. Calling Close again does nothing.
func (f *FIFO[T]) Close() {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.done)
	}
}

// Len returns the number of queued keys.
func (f *FIFO[T]) Len() int {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.len()
}

// ListKeys returns the queued keys in the order Pop will hand them out.
func (f *FIFO[T]) ListKeys() []string {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queue.live()...)
}

// GetByKey returns a copy of the deltas queued for key, oldest first, for
// inspection; ok is false if key is not queued.
func (f *FIFO[T]) GetByKey(key string) (deltas []Delta[T], ok bool) {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.items[key]
	return append([]Delta[T](nil), d...), ok
}

// callTransform runs the transform, a panic in it being its error.
func (f *FIFO[T]) callTransform(obj T) (t T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			t, err = zero, fmt.Errorf("transform panicked: %v", r)
		}
	}()
	return f.transform(obj)
}

// prepare validates obj, computes its key and applies the transform. It runs
// user code (key function, transform), so it is called without the lock.
func (f *FIFO[T]) prepare(obj T) (string, T, error) {
	var zero T
	if isNil(obj) {
		return "", zero, fmt.Errorf("%w: object is nil", ErrInvalidObject)
	}
	if obj.GetName() == "" {
		return "", zero, fmt.Errorf("%w: object has no name", ErrInvalidObject)
	}
	if err := objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()); err != nil {
		return "", zero, fmt.Errorf("%w: %w", ErrInvalidObject, err)
	}
	key, err := objkey.CallKeyFunc(f.keyFunc, obj)
	if err != nil {
		return "", zero, err
	}
	if key == "" {
		return "", zero, fmt.Errorf("%w: key function returned an empty key for %s", ErrInvalidObject, objkey.Key(obj))
	}
	if f.transform == nil {
		return key, obj, nil
	}
	t, err := f.callTransform(obj)
	if err != nil {
		return "", zero, fmt.Errorf("transforming %s: %w", key, err)
	}
	if isNil(t) {
		return "", zero, fmt.Errorf("transforming %s: transform returned a nil object", key)
	}
	got, err := objkey.CallKeyFunc(f.keyFunc, t)
	if err != nil {
		return "", zero, fmt.Errorf("transforming %s: %w", key, err)
	}
	if got != key {
		return "", zero, fmt.Errorf("%w: transforming %s changed its key to %q", ErrInvalidObject, key, got)
	}
	return key, t, nil
}

// enqueueLocked appends d to key's deltas, queueing key if it is new. Two
// Deleted deltas in a row become one: the one whose final state is known
// wins, otherwise the newer.
func (f *FIFO[T]) enqueueLocked(key string, d Delta[T]) {
	deltas, queued := f.items[key]
	if n := len(deltas); n > 0 && d.Type == Deleted && deltas[n-1].Type == Deleted {
		if !d.FinalStateUnknown || deltas[n-1].FinalStateUnknown {
			deltas[n-1] = d
		}
		return
	}
	f.items[key] = append(deltas, d)
	if !queued {
		f.itemsPeak = max(f.itemsPeak, len(f.items))
		f.queue.push(key)
		f.signal()
	}
}

// deleteIsNewsLocked reports whether a delete of key tells the consumer
// something: the key is queued, or its newest batch being processed does
// not end in a delete, or, if it is neither queued nor in flight, the
// known objects hold it.
func (f *FIFO[T]) deleteIsNewsLocked(key string) bool {
	if _, queued := f.items[key]; queued {
		return true
	}
	if newest, inFlight := f.newestLocked(key); inFlight {
		return newest.Type != Deleted
	}
	_, known := f.knownLocked(key)
	return known
}

// knownLocked returns the known object of key; a nil one counts as none,
// since no delta may carry a nil object.
func (f *FIFO[T]) knownLocked(key string) (T, bool) {
	obj, ok := f.known.GetByKey(key)
	if !ok || isNil(obj) {
		var zero T
		return zero, false
	}
	return obj, true
}

// heldLocked reports whether key is queued or being processed.
func (f *FIFO[T]) heldLocked(key string) bool {
	_, held := f.newestLocked(key)
	return held
}

// newestLocked returns the newest delta of key that is queued or being
// processed, and whether there is one.
func (f *FIFO[T]) newestLocked(key string) (Delta[T], bool) {
	if deltas := f.items[key]; len(deltas) > 0 {
		return deltas[len(deltas)-1], true
	}
	for i := len(f.inflight) - 1; i >= 0; i-- { // newest batch first
		if f.inflight[i].key == key {
			return f.inflight[i].newest, true
		}
	}
	return Delta[T]{}, false
}

// markPopulatedLocked marks the FIFO populated and, once nothing of the
// initial list is pending, closes the synced channel.
func (f *FIFO[T]) markPopulatedLocked() {
	f.populated = true
	if f.initialPending == 0 && !f.syncedClosed {
		f.syncedClosed = true
		close(f.synced)
	}
}

// signal wakes one waiting Pop, or leaves a token for the next one.
func (f *FIFO[T]) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// olderRV reports whether a's resourceVersion is known to be older than b's:
// both are decimal integers, as kube-apiserver's are, and a's is smaller.
func olderRV[T metav1.Object](a, b T) bool {
	x, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	y, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && x < y
}
