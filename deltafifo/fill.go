package deltafifo

import (
	"errors"
	"fmt"
)

// Filling is the first Replace spread over the time its list takes to
// arrive. Replace takes a whole list at once, so its consumer waits for the
// last object of the list to be decoded before it can apply the first.
// After StartFill, each Fill queues its Replaced delta at once, and Pop can
// hand it out while the rest of the list is still being read; EndFill then
// does what is left of Replace: it queues the deletions the list implies
// and marks the FIFO populated. What the consumer ends with is what
// Replace would have given it.
//
// Only the first list may be filled. A later list may hold an object older
// than the state the consumer has (a server restored from a backup), and
// the Reflector refuses such a list before anything of it is queued, which
// it can do only with Replace.

// ErrPopulated is returned by StartFill once the FIFO is populated: a
// later list must go to Replace.
var ErrPopulated = errors.New("deltafifo: already populated: fill only the first list")

// errNotFilling is returned by Fill and EndFill without a StartFill.
var errNotFilling = errors.New("deltafifo: no fill started (StartFill)")

// fill is a fill under way: the keys filled so far, with their objects,
// so that a key listed twice keeps the newer state.
type fill[T any] struct {
	listed map[string]T
}

// StartFill starts filling the first list. Called again before EndFill
// (the list failed part way and is being read again), it starts over: the
// keys filled before are queued still, and EndFill deletes those the new
// list lacks. It returns ErrPopulated once the FIFO is populated (by a
// Replace, an EndFill, or an Add, Update or Delete).
func (f *FIFO[T]) StartFill() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return ErrClosed
	case f.populated:
		return ErrPopulated
	}
	f.filling = &fill[T]{listed: make(map[string]T)}
	return nil
}

// Fill queues a Replaced delta for obj, one object of the list being
// filled, as Replace would. A key filled twice counts once, with the
// object of the greater resourceVersion. An object that fails validation or
// the transform is an error, and nothing is queued for it.
func (f *FIFO[T]) Fill(obj T) error {
	key, obj, err := f.prepare(obj)
	if err != nil {
		return fmt.Errorf("deltafifo: Fill: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return ErrClosed
	case f.filling == nil:
		return errNotFilling
	}
	if prev, dup := f.filling.listed[key]; dup && olderRV(obj, prev) {
		return nil
	}
	f.filling.listed[key] = obj
	f.enqueueLocked(key, Delta[T]{Type: Replaced, Object: obj})
	return nil
}

// EndFill ends the fill: the list is complete, as of resourceVersion. It
// queues a Deleted delta for every key the list lacks, as Replace does,
// except the keys of keep, which are left as they are (see ReplaceKeeping),
// and marks the FIFO populated: HasSynced waits for every key of the list.
func (f *FIFO[T]) EndFill(keep []T, resourceVersion string) error {
	kept := make(map[string]struct{}, len(keep))
	for _, obj := range keep {
		if key := f.keyOf(obj); key != "" {
			kept[key] = struct{}{}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return ErrClosed
	case f.filling == nil:
		return errNotFilling
	}
	listed := f.filling.listed
	f.filling = nil
	f.endListLocked(func(key string) bool {
		if _, ok := listed[key]; ok {
			return true
		}
		_, ok := kept[key]
		return ok
	})
	return nil
}
