package share

// NewColliding returns a Table in which every value has the same hash.
func NewColliding(slots int) *Table {
	t := New(slots)
	t.hashMask = 0
	return t
}
