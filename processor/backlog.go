package processor

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// backlog is a listener's queue of notifications that its handler has not
// been given yet: a ring, plus, when the listener has a MaxPending bound, an
// index that lets an Update be merged into a pending notification of the same
// object (see ListenerOptions.MaxPending for the policy).
//
// The zero value is an unbounded backlog. A backlog is not safe for
// concurrent use: before the listener starts it is guarded by the listener's
// mutex, afterwards it belongs to the pop goroutine alone.
type backlog[T metav1.Object] struct {
	ring ring[Notification[T]]
	max  int // ListenerOptions.MaxPending; 0: unbounded, nothing is merged

	// popped counts the notifications popped so far, so popped+i is the
	// sequence number of the i-th pending notification. Sequence numbers do
	// not change when the ring grows, shrinks or wraps around.
	popped uint64
	// latest maps a key to the sequence number of its latest pending Add or
	// Update, if no Delete of that key was pushed after it. Kept only when
	// max > 0.
	latest map[string]uint64
	// keysSeen is the largest len(latest) since latest was made. Go maps
	// never shrink, so once latest falls to a quarter of that after a
	// burst of many keys, it is copied into a map of its size.
	keysSeen int
}

// bigKeyIndex is the number of keys past which the index of a drained
// backlog is replaced by a fresh map.
const bigKeyIndex = 1024

func newBacklog[T metav1.Object](maxPending int) *backlog[T] {
	b := &backlog[T]{max: max(maxPending, 0)}
	if b.max > 0 {
		b.latest = make(map[string]uint64)
	}
	return b
}

// len returns the number of notifications in the backlog.
func (b *backlog[T]) len() int { return b.ring.len() }

// push appends n, or merges it into a pending notification of the same key
// when the backlog is full. It reports whether n was merged, that is, did not
// add to the length.
func (b *backlog[T]) push(n Notification[T]) (merged bool) {
	if b.max > 0 && n.Key != "" {
		seq, pending := b.latest[n.Key]
		switch {
		case n.Kind == Update && pending && b.ring.len() >= b.max:
			// Add+Update is an Add of the new state; Update+Update keeps
			// the first Old and takes the second New.
			b.ring.at(int(seq - b.popped)).New = n.New
			return true
		case n.Kind == Add || n.Kind == Update:
			b.latest[n.Key] = b.popped + uint64(b.ring.len())
			b.keysSeen = max(b.keysSeen, len(b.latest))
		case n.Kind == Delete:
			// Nothing pushed after a Delete merges into what came before
			// it: the object may have been recreated.
			delete(b.latest, n.Key)
		}
	}
	b.ring.push(n)
	return false
}

// peek returns the oldest notification. The backlog must not be empty.
func (b *backlog[T]) peek() Notification[T] { return b.ring.peek() }

// pop removes and returns the oldest notification. The backlog must not be
// empty.
func (b *backlog[T]) pop() Notification[T] {
	n := b.ring.pop()
	if b.latest != nil {
		if seq, ok := b.latest[n.Key]; ok && seq == b.popped {
			delete(b.latest, n.Key)
		}
		if b.keysSeen > bigKeyIndex && len(b.latest) < b.keysSeen/4 {
			// Not only once drained: a handler that stays a few
			// notifications behind never drains the backlog.
			b.latest, b.keysSeen = resized(b.latest), len(b.latest)
		}
	}
	b.popped++
	return n
}

// resized returns a copy of m that has only the room it needs.
func resized[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
