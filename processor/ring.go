package processor

// ring is a first-in first-out queue kept in a circular slice. It grows by
// doubling when full and shrinks by half when it falls to a quarter of its
// capacity, so push and pop are amortized O(1) and a burst does not pin its
// peak memory for ever. Popped slots are cleared, so the ring never keeps a
// reference to a value it has handed out.
//
// The zero value is an empty ring ready to use. A ring is not safe for
// concurrent use.
type ring[T any] struct {
	buf  []T // len(buf) is 0 or a power of two
	head int // index in buf of the oldest value
	n    int // number of values held
}

// ringMinCap is the capacity a ring starts with and never shrinks below.
const ringMinCap = 16

// len returns the number of values held.
func (r *ring[T]) len() int { return r.n }

// push appends v at the back.
func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.resize(max(ringMinCap, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// peek returns the value at the front without removing it. The ring must not
// be empty.
func (r *ring[T]) peek() T { return r.buf[r.head] }

// at returns a pointer to the i-th value from the front (0 is the front), for
// changing it in place. The pointer is valid until the next push or pop.
func (r *ring[T]) at(i int) *T { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

// pop removes and returns the value at the front. The ring must not be empty.
func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // do not retain what we hand out
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if len(r.buf) > ringMinCap && r.n <= len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return v
}

// resize moves the values, front first, into a new slice of capacity c.
func (r *ring[T]) resize(c int) {
	buf := make([]T, c)
	if r.n > 0 {
		if end := r.head + r.n; end <= len(r.buf) {
			copy(buf, r.buf[r.head:end])
		} else {
			k := copy(buf, r.buf[r.head:])
			copy(buf[k:], r.buf[:end-len(r.buf)])
		}
	}
	r.buf, r.head = buf, 0
}
