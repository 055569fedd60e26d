package deltafifo

// keyQueue is a FIFO of keys in a slice: keys[head:] are queued. Popping
// advances head; the slice is compacted once the dead prefix is at least
// half of it, so pushes and pops are amortized O(1) and the backing array is
// reused rather than reallocated. It is not safe for concurrent use.
type keyQueue struct {
	keys []string
	head int
}

// compactAfter is the smallest dead prefix worth a copy.
const compactAfter = 64

// shrinkAbove is the most keys whose room the queue, and the FIFO's map of
// deltas, keep however few they hold: past it, once they hold a quarter of
// their room or less, they move to a smaller one, so that a drained
// backlog (the first list of a large cache) gives its memory back even if
// it never quite empties.
const shrinkAbove = 1024

func (q *keyQueue) len() int { return len(q.keys) - q.head }

func (q *keyQueue) push(key string) { q.keys = append(q.keys, key) }

// pop removes and returns the oldest key. The queue must not be empty.
func (q *keyQueue) pop() string {
	key := q.keys[q.head]
	q.keys[q.head] = "" // let the string be collected
	q.head++
	switch {
	case q.head == len(q.keys) && cap(q.keys) > shrinkAbove:
		q.keys, q.head = nil, 0
	case cap(q.keys) > shrinkAbove && 4*q.len() <= cap(q.keys):
		q.keys, q.head = append(make([]string, 0, 2*q.len()), q.keys[q.head:]...), 0
	case q.head == len(q.keys):
		q.keys, q.head = q.keys[:0], 0
	case q.head >= compactAfter && 2*q.head >= len(q.keys):
		n := copy(q.keys, q.keys[q.head:])
		clear(q.keys[n:])
		q.keys, q.head = q.keys[:n], 0
	}
	return key
}

// live returns the queued keys, oldest first. The slice aliases the queue:
// do not keep it across a push or pop.
func (q *keyQueue) live() []string { return q.keys[q.head:] }
