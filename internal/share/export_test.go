package share

import "reflect"

// NewColliding returns a Table in which every value has the same hash.
func NewColliding(slots int) *Table {
	t := New(slots)
	t.hashMask = 0
	return t
}

// SlotsOf returns how many slots t has allocated.
func SlotsOf(t *Table) int { return len(t.slots) }

// Skipping reports whether t looks up values of v's type only once in
// probe (see worthLookingUp).
func Skipping(t *Table, v any) bool {
	np := nodePlans[reflect.TypeOf(v)]
	return np != nil && np.id < len(t.stats) && t.stats[np.id].skipping
}

// RememberedOf returns how many values t remembers.
func RememberedOf(t *Table) int {
	n := 0
	for _, s := range t.slots {
		if s.plan != nil {
			n++
		}
	}
	return n
}

// RememberedBytesOf returns the sizes of the values t remembers, summed
// over its slots, and the sum t keeps as it goes; the two must agree.
func RememberedBytesOf(t *Table) (summed, kept int) {
	for _, s := range t.slots {
		if s.plan != nil {
			summed += s.size
		}
	}
	return summed, t.bytes
}

// MaxValueBytes and MaxBytes are the Table's bounds in bytes.
const (
	MaxValueBytes = maxValueBytes
	MaxBytes      = maxBytes
)
