package deltafifo

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// How a list reaches the FIFO: Replace queues its state and the deletions
// it implies; Resync queues the known objects again as Syncs.

// Replace tells the FIFO that list is the complete current set of objects,
// as of resourceVersion (which the FIFO does not use). It queues a Replaced
// delta for every listed object, in list order. Then, for every key that the
// list lacks but the consumer may still hold, it queues a Deleted delta with
// FinalStateUnknown set, carrying the newest state of the object we have
// (the keys in this order, new keys queued at the end):
//
//   - a queued key: the object of its newest delta;
//   - a key being processed by Pop (and not queued again): the object of
//     the newest delta in that batch;
//   - a key only in the known objects: the known object.
//
// A key whose newest delta is already a Deleted gets nothing more. A list
// that holds one key twice (no apiserver sends one) counts once, with the
// object of the greater resourceVersion (the later one if they do not
// compare), queued where that item stands: handlers never see the object
// go back in time.
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
// the transform failed, or that came without a resourceVersion in a list
// that has one (see reflector.KeepingStore): otherwise they would look
// deleted. A kept object that a write would refuse (nil, without a
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
		// A key ListKeys named twice: its Sync is queued already.
		if deltas := f.items[d.key]; len(deltas) > 0 && deltas[len(deltas)-1].Type == Sync {
			continue
		}
		f.enqueueLocked(d.key, d.delta)
	}
	return nil
}

// keyedDelta is a delta to queue under key.
type keyedDelta[T metav1.Object] struct {
	key   string
	delta Delta[T]
}
