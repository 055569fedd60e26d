package wire

import "unsafe"

// ownedSet holds the values that a decoder with shared parts made while
// decoding one object: the copies of shared parts it made before merging
// into them (a field met again), and what those grew into. They are the
// object's own, so a field met once more merges into them without another
// copy: copying at every meeting made k meetings cost O(k²).
//
// A value is known by its identity (a map's pointer, a slice's array, a
// pointed-to struct), not by the field that holds it: one field holds
// several values in turn (a map's entries are decoded into one scratch
// value; a field reset by null gets a shared part again), and a shared
// part's identity is never in the set.
type ownedSet map[unsafe.Pointer]struct{}

// identity is the pointer that the map, slice or pointer field at p holds.
func identity(p unsafe.Pointer) unsafe.Pointer { return *(*unsafe.Pointer)(p) }

// has says whether the value at p is one the decoder made.
func (s ownedSet) has(p unsafe.Pointer) bool {
	_, ok := s[identity(p)]
	return ok
}

// made records the value at p if it is not before, the value that was
// there when it was met: the decoder made it. (An unshared slice keeps its
// array until it grows: recorded then.)
func (s *ownedSet) made(p, before unsafe.Pointer) {
	v := identity(p)
	if v == nil || v == before {
		return
	}
	if *s == nil {
		*s = ownedSet{}
	}
	(*s)[v] = struct{}{}
}
