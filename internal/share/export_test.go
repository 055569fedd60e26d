package share

// NewColliding returns a Table in which every value has the same hash.
func NewColliding(slots int) *Table {
	t := New(slots)
	t.hashMask = 0
	return t
}

// SlotsOf returns how many slots t has allocated.
func SlotsOf(t *Table) int { return len(t.slots) }
