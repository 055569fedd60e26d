package deltafifo

import (
	"context"
	"errors"
	"slices"
)

// How the consumer takes keys out: Pop hands one key's deltas to process,
// with the FIFO unlocked, and counts the first list's keys down for
// HasSynced.

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
	for woken := false; ; {
		if err := ctx.Err(); err != nil {
			if woken {
				// The wake-up this Pop took may have been meant for a
				// key now queued: pass it on to another waiting Pop.
				f.mu.Lock()
				if f.queue.len() > 0 {
					f.signal()
				}
				f.mu.Unlock()
			}
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
			woken = true
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
