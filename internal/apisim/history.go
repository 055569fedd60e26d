package apisim

import (
	"sort"
	"sync"
)

// eventType is the type of a stored change.
type eventType uint8

const (
	added eventType = iota + 1
	modified
	deleted
)

// String returns the watch event type: ADDED, MODIFIED, DELETED.
func (t eventType) String() string {
	switch t {
	case added:
		return "ADDED"
	case modified:
		return "MODIFIED"
	case deleted:
		return "DELETED"
	}
	return "BOOKMARK"
}

// event is one change of one object, kept in a resource's history ring so
// that watches can resume from an older resourceVersion.
type event struct {
	typ  eventType
	rv   uint64
	obj  *version // new state; for deleted, the tombstone (last state at rv)
	prev *version // state before the change; nil for added

	exitOnce sync.Once // the previous state re-stamped with rv, for watchers
	exit     *version  // whose selector the object stopped matching
}

// history is a bounded ring of the most recent events of one resource, in
// RV order. It is not safe for concurrent use; the Server's lock guards it.
type history struct {
	ring  []*event
	start int // index of the oldest event
	n     int // number of events held
}

func newHistory(capacity int) *history {
	return &history{ring: make([]*event, max(capacity, 1))}
}

// push appends e and returns the event that fell off the ring, if any.
func (h *history) push(e *event) (evicted *event) {
	if h.n == len(h.ring) {
		evicted = h.ring[h.start]
		h.ring[h.start] = e
		h.start = (h.start + 1) % len(h.ring)
		return evicted
	}
	h.ring[(h.start+h.n)%len(h.ring)] = e
	h.n++
	return nil
}

// oldest returns the oldest event held, nil when empty.
func (h *history) oldest() *event {
	if h.n == 0 {
		return nil
	}
	return h.ring[h.start]
}

// since returns the events with an RV greater than rv, oldest first.
func (h *history) since(rv uint64) []*event {
	at := func(i int) *event { return h.ring[(h.start+i)%len(h.ring)] }
	first := sort.Search(h.n, func(i int) bool { return at(i).rv > rv })
	out := make([]*event, 0, h.n-first)
	for i := first; i < h.n; i++ {
		out = append(out, at(i))
	}
	return out
}

// clear forgets every event.
func (h *history) clear() {
	clear(h.ring)
	h.start, h.n = 0, 0
}
