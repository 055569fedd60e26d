package deltafifo_test

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

// The model that TestFIFOMatchesModel and FuzzFIFOMatchesModel hold the
// FIFO to: what doc.go and the doc comments of the FIFO's methods promise,
// said as plainly as possible, with the details the docs leave to the unit
// tests (the object a deletion carries, which deletes are dropped) taken
// from those tests.

type podDelta = deltafifo.Delta[*corev1.Pod]

// fifoModel is a reference model of a FIFO of pods keyed "namespace/name".
// The zero fifoModel is an empty, open FIFO without known objects. It is not
// safe for concurrent use.
type fifoModel struct {
	// known is what the consumer holds, as the FIFO sees it (nil: the FIFO
	// has no known objects). The model only reads it.
	known deltafifo.KnownObjects[*corev1.Pod]

	queue     []*modelBatch // queued keys, in the order Pop hands them out
	inflight  []*modelBatch // popped batches whose process call runs, in pop order
	populated bool          // an Add, Update, Delete or Replace succeeded
	closed    bool
}

// modelBatch is one key's deltas, queued or being processed.
type modelBatch struct {
	key    string
	deltas []podDelta
	// initial: queued when the first Replace returned, so HasSynced waits
	// for it.
	initial bool
}

func (b *modelBatch) newest() podDelta { return b.deltas[len(b.deltas)-1] }

func podKey(p *corev1.Pod) string {
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

// write is Add, Update or Delete, as typ says.
func (m *fifoModel) write(typ deltafifo.DeltaType, p *corev1.Pod) error {
	if m.closed {
		return deltafifo.ErrClosed
	}
	m.populated = true // even by a delete that is dropped
	key := podKey(p)
	if typ == deltafifo.Deleted && m.known != nil && !m.deleteIsNews(key) {
		return nil
	}
	m.enqueue(key, podDelta{Type: typ, Object: p})
	return nil
}

// deleteIsNews reports whether a Delete of key is queued (with known
// objects): not if nobody knows, queues or processes key, nor if key is not
// queued and its newest batch being processed ends in a delete.
func (m *fifoModel) deleteIsNews(key string) bool {
	if m.queued(key) != nil {
		return true
	}
	if b := m.newestInFlight(key); b != nil {
		return b.newest().Type != deltafifo.Deleted
	}
	_, known := m.knownObject(key)
	return known
}

// enqueue appends d to key's queued deltas, queueing key at the end if it
// is not queued. Two deletes in a row become one: the one whose final state
// is known, or else the newer.
func (m *fifoModel) enqueue(key string, d podDelta) {
	b := m.queued(key)
	if b == nil {
		m.queue = append(m.queue, &modelBatch{key: key, deltas: []podDelta{d}})
		return
	}
	if last := &b.deltas[len(b.deltas)-1]; last.Type == deltafifo.Deleted && d.Type == deltafifo.Deleted {
		if last.FinalStateUnknown || !d.FinalStateUnknown {
			*last = d
		}
		return
	}
	b.deltas = append(b.deltas, d)
}

// replace is Replace (keep is nil) or ReplaceKeeping.
func (m *fifoModel) replace(list, keep []*corev1.Pod) error {
	if m.closed {
		return deltafifo.ErrClosed
	}
	// A key listed twice counts once, with the greater resourceVersion (the
	// later on a tie), in the place of the item that counts.
	counted := map[string]int{}
	for i, p := range list {
		if j, twice := counted[podKey(p)]; twice && rvOf(p) < rvOf(list[j]) {
			continue
		}
		counted[podKey(p)] = i
	}
	spared := map[string]bool{} // listed or kept: not deleted
	for key := range counted {
		spared[key] = true
	}
	for _, p := range keep {
		if p != nil && p.Name != "" && !strings.Contains(p.Namespace+p.Name, "/") {
			spared[podKey(p)] = true
		}
	}

	for i, p := range list {
		if counted[podKey(p)] == i {
			m.enqueue(podKey(p), podDelta{Type: deltafifo.Replaced, Object: p})
		}
	}
	// The keys the list lacks but the consumer may hold, each deleted with
	// the newest state we have, unless that is a deletion already: queued
	// keys, then keys being processed (not queued again; the newest batch
	// first), then keys only known (in the order the known objects list
	// them).
	tombstone := func(key string, newest podDelta) {
		if newest.Type != deltafifo.Deleted {
			m.enqueue(key, podDelta{Type: deltafifo.Deleted, Object: newest.Object, FinalStateUnknown: true})
		}
	}
	for _, b := range slices.Clone(m.queue) {
		if !spared[b.key] {
			tombstone(b.key, b.newest())
		}
	}
	for i := len(m.inflight) - 1; i >= 0; i-- {
		b := m.inflight[i]
		if !spared[b.key] && m.newestInFlight(b.key) == b && m.queued(b.key) == nil {
			tombstone(b.key, b.newest())
		}
	}
	if m.known != nil {
		for _, key := range m.known.ListKeys() {
			if obj, ok := m.knownObject(key); ok && !spared[key] && !m.held(key) {
				m.enqueue(key, podDelta{Type: deltafifo.Deleted, Object: obj, FinalStateUnknown: true})
			}
		}
	}

	if !m.populated {
		for _, b := range m.queue {
			b.initial = true
		}
	}
	m.populated = true
	return nil
}

// resync queues a Sync of the known object for every known key neither
// queued nor being processed, and a Sync of the listed object after a
// known key's newest delta if that is a Replaced.
func (m *fifoModel) resync() error {
	if m.closed {
		return deltafifo.ErrClosed
	}
	if m.known == nil {
		return nil
	}
	for _, key := range m.known.ListKeys() {
		newest, held := m.newest(key)
		switch {
		case !held:
			if obj, ok := m.knownObject(key); ok {
				m.enqueue(key, podDelta{Type: deltafifo.Sync, Object: obj})
			}
		case newest.Type == deltafifo.Replaced:
			m.enqueue(key, podDelta{Type: deltafifo.Sync, Object: newest.Object})
		}
	}
	return nil
}

// pop takes the oldest queued batch out of the queue: it is being processed
// until finish. The queue must not be empty.
func (m *fifoModel) pop() *modelBatch {
	b := m.queue[0]
	m.queue = m.queue[1:]
	m.inflight = append(m.inflight, b)
	return b
}

// finish records that the process call of b returned.
func (m *fifoModel) finish(b *modelBatch) {
	m.inflight = slices.DeleteFunc(m.inflight, func(x *modelBatch) bool { return x == b })
}

func (m *fifoModel) close() { m.closed = true }

// hasSynced: populated, and every key queued when the first Replace
// returned has been popped and processed.
func (m *fifoModel) hasSynced() bool {
	initial := func(b *modelBatch) bool { return b.initial }
	return m.populated && !slices.ContainsFunc(m.queue, initial) && !slices.ContainsFunc(m.inflight, initial)
}

func (m *fifoModel) keys() []string {
	keys := make([]string, len(m.queue))
	for i, b := range m.queue {
		keys[i] = b.key
	}
	return keys
}

func (m *fifoModel) get(key string) ([]podDelta, bool) {
	if b := m.queued(key); b != nil {
		return b.deltas, true
	}
	return nil, false
}

func (m *fifoModel) queued(key string) *modelBatch {
	for _, b := range m.queue {
		if b.key == key {
			return b
		}
	}
	return nil
}

// newestInFlight returns the newest batch of key being processed, or nil.
func (m *fifoModel) newestInFlight(key string) *modelBatch {
	for i := len(m.inflight) - 1; i >= 0; i-- {
		if m.inflight[i].key == key {
			return m.inflight[i]
		}
	}
	return nil
}

// newest returns the newest delta of key queued or, if none is, being
// processed; held is false if there is neither.
func (m *fifoModel) newest(key string) (d podDelta, held bool) {
	b := m.queued(key)
	if b == nil {
		b = m.newestInFlight(key)
	}
	if b == nil {
		return podDelta{}, false
	}
	return b.newest(), true
}

func (m *fifoModel) held(key string) bool {
	_, held := m.newest(key)
	return held
}

// knownObject returns the known object of key; a nil one counts as none.
func (m *fifoModel) knownObject(key string) (*corev1.Pod, bool) {
	if m.known == nil {
		return nil, false
	}
	obj, ok := m.known.GetByKey(key)
	return obj, ok && obj != nil
}

func rvOf(p *corev1.Pod) int {
	rv, _ := strconv.Atoi(p.ResourceVersion)
	return rv
}
