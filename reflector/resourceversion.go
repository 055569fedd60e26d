package reflector

import "strconv"

// Resource versions are opaque, except that kube-apiserver's are decimal
// integers that grow within one resource. The Reflector uses that only to
// notice a server going backwards; versions that do not parse are never
// called older, and an event whose unparsable version equals the last one
// is taken as going backwards.

// olderThan reports whether rv is known to be older than since.
func olderThan(rv, since string) bool {
	a, okA := parseRV(rv)
	b, okB := parseRV(since)
	return okA && okB && a < b
}

// newerThan reports whether an event at rv may follow one at last: when
// both parse, whether rv is greater; else whether they differ.
func newerThan(rv, last string) bool {
	if last == "" {
		return true
	}
	a, okA := parseRV(rv)
	b, okB := parseRV(last)
	if !okA || !okB {
		return rv != last
	}
	return a > b
}

func parseRV(rv string) (uint64, bool) {
	if rv == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
