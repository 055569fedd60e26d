package reflector

import "strconv"

// Resource versions are opaque, except that kube-apiserver's are decimal
// integers that grow within one resource. The Reflector uses that only to
// notice a server going backwards; versions that do not parse are never
// called older. Two events may carry the same resourceVersion: etcd
// deletes the keys of an expired lease in one transaction, so the Events
// that kube-apiserver put on one lease (those created within a minute of
// each other) are DELETED at one revision.

// olderThan reports whether rv is known to be older than since.
func olderThan(rv, since string) bool {
	a, okA := parseRV(rv)
	b, okB := parseRV(since)
	return okA && okB && a < b
}

func parseRV(rv string) (uint64, bool) {
	if rv == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}
