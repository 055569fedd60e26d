package deltafifo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// ErrClosed is returned by Pop once the FIFO is closed and drained, and by
// every write after Close. Retrying does not help: the FIFO stays closed.
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

// ready readies f for use, once: every method that writes, waits or hands
// out a channel calls it first, so that the zero FIFO works as New() does.
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

// Replace tells the FIFO that list is the complete current set of objects,
// as of resourceVersion (which the FIFO does not use). It queues a Replaced
// delta for every listed object, in list order. Then, for every key that the
// list lacks but the consumer may still hold, it queues a Deleted delta with
// FinalStateUnknown set, carrying the newest state of the object we have:
//
//   - a queued key: the object of its newest delta;
//   - a key being processed by Pop (and not queued again): the object of
//     the newest delta in that batch;
//   - a key only in the known objects: the known object.
//
// A key whose newest delta is already a Deleted gets nothing more. A list
// that holds one key twice (no apiserver sends one) counts once, with the
// object of the greater resourceVersion (the later one if they do not
// compare): handlers never see the object go back in time.
//
// The objects are validated and transformed before anything is queued: if
// any of them fails, Replace returns the error and the queue is unchanged.
// The first Replace (unless an Add, Update or Delete came before it) fixes
// the set of keys that [FIFO.HasSynced] waits for: every key queued right
// after it.
func (f *FIFO[T]) Replace(list []T, resourceVersion string) error {
	return f.replace(list, nil)
}

// ReplaceKeeping is [FIFO.Replace] for a list that some objects were left
// out of: keep holds those objects, of which only the keys are used, and
// the FIFO queues nothing for them, so that what it and the consumer hold
// for each stays. The Reflector calls it for the objects of a list on which
// the transform failed (see reflector.KeepingStore): otherwise they would
// look deleted. A kept object that a write would refuse (nil, without a
// name, or with a "/" in its name or namespace) keeps nothing.
func (f *FIFO[T]) ReplaceKeeping(list, keep []T, resourceVersion string) error {
	return f.replace(list, keep)
}

func (f *FIFO[T]) replace(list, keep []T) error {
	f.ready()
	keys := make([]string, len(list))
	objs := make([]T, len(list))
	for i, obj := range list {
		key, obj, err := f.prepare(obj)
		if err != nil {
			return fmt.Errorf("deltafifo: Replace: list item %d: %w", i, err)
		}
		keys[i], objs[i] = key, obj
	}
	var kept []string
	for i, obj := range keep {
		// An object no write takes keeps nothing; with a "/", its key
		// would be another object's, which would then not be deleted.
		if isNil(obj) || obj.GetName() == "" || objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()) != nil {
			continue
		}
		key, err := objkey.CallKeyFunc(f.keyFunc, obj)
		if err != nil {
			// Left out, a kept object would be queued as deleted.
			return fmt.Errorf("deltafifo: Replace: kept item %d: %w", i, err)
		}
		if key != "" {
			kept = append(kept, key)
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	listed := make(map[string]int, len(keys)) // key → the list item it takes
	for i, key := range keys {
		if j, dup := listed[key]; dup && olderRV(objs[i], objs[j]) {
			continue
		}
		listed[key] = i
	}
	for _, key := range kept {
		if _, ok := listed[key]; !ok {
			listed[key] = -1 // left as it is: not deleted below
		}
	}
	// The known objects the list lacks, read before anything is queued, so
	// that a panic in them (user code) changes nothing. Keys queued or in
	// flight hold a newer state and are handled below; what is queued
	// next does not change which those are.
	var unlisted []keyedDelta[T]
	if err := f.readKnown(func() {
		for _, key := range f.known.ListKeys() {
			if _, ok := listed[key]; ok || f.heldLocked(key) {
				continue
			}
			if obj, ok := f.knownLocked(key); ok {
				unlisted = append(unlisted, keyedDelta[T]{key, Delta[T]{Type: Deleted, Object: obj, FinalStateUnknown: true}})
			}
		}
	}); err != nil {
		return fmt.Errorf("deltafifo: Replace: %w", err)
	}

	for i, key := range keys {
		if listed[key] == i {
			f.enqueueLocked(key, Delta[T]{Type: Replaced, Object: objs[i]})
		}
	}

	// Deletions the list implies. Keys queued or in flight hold a newer
	// state than the known objects, so they come first; once a key has a
	// Deleted as its newest delta, the later loops skip it.
	for _, key := range f.queue.live() { // all queued: enqueueLocked pushes none of them again
		if _, ok := listed[key]; !ok {
			deltas := f.items[key]
			f.deleteUnlistedLocked(key, deltas[len(deltas)-1])
		}
	}
	// seen: the keys whose newest in-flight batch was looked at.
	var seen map[string]struct{}
	for i := len(f.inflight) - 1; i >= 0; i-- { // newest batch first
		b := f.inflight[i]
		if _, ok := listed[b.key]; ok {
			continue
		}
		if _, ok := seen[b.key]; ok {
			continue // an older batch (two Pops at once): the newest decides
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		seen[b.key] = struct{}{}
		if _, queued := f.items[b.key]; !queued {
			f.deleteUnlistedLocked(b.key, b.newest)
		}
	}
	for _, d := range unlisted {
		f.enqueueLocked(d.key, d.delta)
	}

	if !f.populated {
		f.initialQueued = f.queue.len()
		f.initialPending = f.initialQueued
	}
	f.markPopulatedLocked()
	return nil
}

// deleteUnlistedLocked queues a final-state-unknown delete after newest,
// unless newest is already a delete.
func (f *FIFO[T]) deleteUnlistedLocked(key string, newest Delta[T]) {
	if newest.Type == Deleted {
		return
	}
	f.enqueueLocked(key, Delta[T]{Type: Deleted, Object: newest.Object, FinalStateUnknown: true})
}

// Resync queues a Sync delta for every key of the known objects, carrying
// the known object, unless the key is queued or being processed: those
// reach the consumer anyway, with a state at least as new. A key whose
// newest delta there is a Replaced gets its Sync all the same, after it and
// carrying its object: a consumer may drop a Replaced that changes nothing
// (the informer tells its handlers nothing of it), and the Sync must not
// be lost with it. Without known objects Resync does nothing.
func (f *FIFO[T]) Resync() error {
	f.ready()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	var syncs []keyedDelta[T]
	if err := f.readKnown(func() {
		for _, key := range f.known.ListKeys() {
			newest, held := f.newestLocked(key)
			switch {
			case !held:
				if obj, ok := f.knownLocked(key); ok {
					syncs = append(syncs, keyedDelta[T]{key, Delta[T]{Type: Sync, Object: obj}})
				}
			case newest.Type == Replaced:
				syncs = append(syncs, keyedDelta[T]{key, Delta[T]{Type: Sync, Object: newest.Object}})
			}
		}
	}); err != nil {
		return fmt.Errorf("deltafifo: Resync: %w", err)
	}
	for _, d := range syncs {
		f.enqueueLocked(d.key, d.delta)
	}
	return nil
}

// keyedDelta is a delta to queue under key.
type keyedDelta[T metav1.Object] struct {
	key   string
	delta Delta[T]
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

// Pop waits for a queued key, removes it with its deltas, and calls
// process(key, deltas, isInInitialList) with the FIFO unlocked, so process
// may take as long as it needs and producers go on queueing meanwhile. A key
// queued again while process runs is a new entry, popped by a later call.
// isInInitialList is true for the keys that [FIFO.HasSynced] waits for.
//
// Pop returns process's error unchanged. The batch is not requeued: process
// must deal with its own failures. If ctx is done, Pop returns ctx.Err()
// without popping. Once the FIFO is closed, Pop keeps handing out what is
// queued, then returns [ErrClosed].
//
// Pop is meant to be called from one goroutine. It is safe to call from
// several, but then two batches of one key may be processed at once.
func (f *FIFO[T]) Pop(ctx context.Context, process func(key string, deltas []Delta[T], isInInitialList bool) error) error {
	if process == nil {
		return errors.New("deltafifo: Pop: process function is nil")
	}
	if ctx == nil {
		return errors.New("deltafifo: Pop: nil context")
	}
	b, deltas, initial, err := f.next(ctx)
	if err != nil {
		return err
	}
	defer f.finish(b, initial)
	return process(b.key, deltas, initial)
}

// next waits for a key and takes it out of the queue, recording it as in
// flight.
func (f *FIFO[T]) next(ctx context.Context) (b inflightBatch[T], deltas []Delta[T], initial bool, err error) {
	f.ready()
	for {
		if err := ctx.Err(); err != nil {
			return b, nil, false, err
		}
		f.mu.Lock()
		if f.queue.len() > 0 {
			break
		}
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return b, nil, false, ErrClosed
		}
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-f.done:
		}
	}
	defer f.mu.Unlock()

	key := f.queue.pop()
	deltas = f.items[key]
	delete(f.items, key)
	if f.itemsPeak > shrinkAbove && 4*len(f.items) <= f.itemsPeak {
		// A map keeps the room of its largest size: move what is left
		// (a quarter of it at most) to a map of its own size.
		items := make(map[string][]Delta[T], len(f.items))
		for k, v := range f.items {
			items[k] = v
		}
		f.items, f.itemsPeak = items, len(items)
	}
	if f.queue.len() > 0 {
		f.signal() // pass the wake-up on to another waiting Pop
	}
	initial = f.initialQueued > 0
	if initial {
		f.initialQueued--
	}
	f.popSeq++
	b = inflightBatch[T]{seq: f.popSeq, key: key, newest: deltas[len(deltas)-1]}
	f.inflight = append(f.inflight, b)
	return b, deltas, initial, nil
}

// finish records that process returned (or panicked) for batch b.
func (f *FIFO[T]) finish(b inflightBatch[T], initial bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.inflight {
		if f.inflight[i].seq == b.seq {
			f.inflight = slices.Delete(f.inflight, i, i+1)
			break
		}
	}
	if initial {
		f.initialPending--
		f.markPopulatedLocked()
	}
}

// HasSynced reports whether the FIFO has been populated and every key queued
// by the first Replace has been popped and processed (its process call
// returned). It is also true once an Add, Update or Delete came before any
// Replace: there is then no initial list to wait for.
func (f *FIFO[T]) HasSynced() bool {
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
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.len()
}

// ListKeys returns the queued keys in the order Pop will hand them out.
func (f *FIFO[T]) ListKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queue.live()...)
}

// GetByKey returns a copy of the deltas queued for key, oldest first, for
// inspection; ok is false if key is not queued.
func (f *FIFO[T]) GetByKey(key string) (deltas []Delta[T], ok bool) {
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
