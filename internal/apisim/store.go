package apisim

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// version is one stored state of one object, as etcd would hold it under
// one revision. It is immutable once stored: every list page and every
// watcher shares the same encoded bytes.
type version struct {
	key       string // "namespace/name" or "name": the order of lists and continue tokens
	namespace string
	name      string
	uid       string
	rv        uint64
	deleted   bool // a tombstone: the last state, re-stamped with the deletion's RV

	obj    runtime.Object // canonical Go form (typed, or *unstructured.Unstructured); never mutated
	labels labels.Set
	fields fields.Set // metadata.name, metadata.namespace and the resource's extra fields

	json  []byte // the object as JSON
	proto []byte // the object's own protobuf message (no envelope); nil unless Protobuf

	partialOnce sync.Once // metadata-only encodings, made on first use
	partialJSON []byte
	partialPB   []byte
}

// chain is the history of one key, oldest first: every version that a read
// at a retained resourceVersion may still need.
type chain []*version

// at returns the state of the key as of rv: the newest version with
// version.rv <= rv, or nil when the object did not exist then.
func (c chain) at(rv uint64) *version {
	i := sort.Search(len(c), func(i int) bool { return c[i].rv > rv })
	if i == 0 || c[i-1].deleted {
		return nil
	}
	return c[i-1]
}

// latest returns the current state, nil when deleted.
func (c chain) latest() *version {
	if len(c) == 0 || c[len(c)-1].deleted {
		return nil
	}
	return c[len(c)-1]
}

// pruned drops what no read at an RV >= upTo can see: every version older
// than the one visible at upTo, and that one too when it is a tombstone.
func (c chain) pruned(upTo uint64) chain {
	i := sort.Search(len(c), func(i int) bool { return c[i].rv > upTo })
	if i == 0 {
		return c
	}
	keep := i - 1
	if c[keep].deleted {
		keep = i
	}
	if keep == 0 {
		return c
	}
	if keep < len(c)/2 {
		// Reslicing is O(1); the dropped head is reclaimed when the chain
		// next grows past its capacity, or copied out once it is the bulk.
		clear(c[:keep])
		return c[keep:]
	}
	return slices.Clone(c[keep:])
}

// objectStore holds the versions of every object of one resource and keeps
// their keys sorted, so that lists and continue tokens follow etcd's key
// order. It is not safe for concurrent use; the Server's lock guards it.
type objectStore struct {
	chains  map[string]chain
	sorted  []string // sorted keys; may hold keys whose chain is gone (see stale)
	pending []string // keys added since the last sort
	stale   int      // keys in sorted without a chain
}

func newObjectStore() *objectStore {
	return &objectStore{chains: make(map[string]chain)}
}

// current returns the live object under key, nil if none.
func (s *objectStore) current(key string) *version {
	return s.chains[key].latest()
}

// put appends v as the newest version of its key, after dropping versions
// that no retained read can reach (those older than compactedRV).
func (s *objectStore) put(v *version, compactedRV uint64) {
	c, ok := s.chains[v.key]
	if !ok {
		s.pending = append(s.pending, v.key)
	}
	s.chains[v.key] = append(c.pruned(compactedRV), v)
}

// prune drops the versions of key that no read at an RV >= upTo can see.
func (s *objectStore) prune(key string, upTo uint64) {
	c, ok := s.chains[key]
	if !ok {
		return
	}
	c = c.pruned(upTo)
	if len(c) == 1 && c[0].deleted && c[0].rv <= upTo {
		c = nil
	}
	if len(c) == 0 {
		delete(s.chains, key)
		if s.stale++; s.stale > 1024 && s.stale > len(s.chains) {
			// Only lists call keys, which forgets the keys of the
			// objects gone: a server whose clients only watch would
			// keep one for every object it ever held.
			s.keys()
		}
		return
	}
	s.chains[key] = c
}

// pruneAll prunes every key.
func (s *objectStore) pruneAll(upTo uint64) {
	for key := range s.chains {
		s.prune(key, upTo)
	}
}

// keys returns every key in ascending order. The slice is shared: callers
// must not modify it, and must not keep it across writes.
func (s *objectStore) keys() []string {
	if s.stale > 0 {
		s.sorted = slices.DeleteFunc(s.sorted, func(k string) bool {
			_, ok := s.chains[k]
			return !ok
		})
		s.pending = slices.DeleteFunc(s.pending, func(k string) bool {
			_, ok := s.chains[k]
			return !ok
		})
		s.stale = 0
	}
	if len(s.pending) > 0 {
		// A key pruned away and written again is pending while its stale
		// entry may still be in sorted: merge without repeating it.
		slices.Sort(s.pending)
		s.pending = slices.Compact(s.pending)
		merged := make([]string, 0, len(s.sorted)+len(s.pending))
		i, j := 0, 0
		for i < len(s.sorted) && j < len(s.pending) {
			if s.sorted[i] < s.pending[j] {
				merged = append(merged, s.sorted[i])
				i++
			} else {
				merged = append(merged, s.pending[j])
				j++
			}
		}
		merged = append(merged, s.sorted[i:]...)
		merged = append(merged, s.pending[j:]...)
		s.sorted, s.pending = slices.Compact(merged), s.pending[:0]
	}
	return s.sorted
}

// scan calls fn, in key order, for every object that existed at rv whose
// key has the given prefix and is >= from. It stops when fn returns false.
func (s *objectStore) scan(prefix, from string, rv uint64, fn func(*version) bool) {
	keys := s.keys()
	start := max(prefix, from)
	i, _ := slices.BinarySearch(keys, start)
	for ; i < len(keys) && strings.HasPrefix(keys[i], prefix); i++ {
		if v := s.chains[keys[i]].at(rv); v != nil && !fn(v) {
			return
		}
	}
}

// len returns the number of live objects (slow: for tests and stats).
func (s *objectStore) len() int {
	n := 0
	for _, c := range s.chains {
		if c.latest() != nil {
			n++
		}
	}
	return n
}
