package indexer

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// store is the data of an Indexer: the objects by key and, for every index,
// the keys by index value. It is not safe for concurrent use: the Indexer
// guards it with a lock.
//
// Each entry remembers the index values computed when it was stored, so an
// update or delete removes exactly the stale index entries without calling
// an index function on the old object.
type store[T metav1.Object] struct {
	// indexes is never modified: addIndexes installs a new one. Comparing
	// pointers tells whether the set of indexes changed.
	indexes *indexSet[T]
	items   map[string]entry[T]
	// peak is the most entries items has held since it was made: a Go map
	// keeps the room of its largest size, so when the cache has shrunk to
	// a quarter of that (a burst of Jobs' pods deleted), Indexer.Delete
	// copies every map into one of its current size (shrunk, compacted).
	peak int
	// values[i] belongs to indexes.funcs[i].
	values []valueIndex
	// single holds, while there is one index, the values of the entries
	// whose object has one value v in it, by v: entries share them
	// (shared).
	single map[string][][]string
	// setPeak holds, for each key set that has held more than shrinkAbove
	// keys, the largest power of two its size reached. A set that falls to
	// a quarter of that is copied into a map of its size (unindex): the
	// store as a whole may stay too full to compact (shrunk) while a burst
	// in one value, a namespace, leaves that value's set with the room of
	// the burst, one burst after another.
	setPeak map[setID]int
	// valuesPeak[i], where present, is the largest power of two above
	// shrinkAbove that the number of values[i] reached: an index whose
	// objects' values burst and fall back (a label index, each object
	// given many labels and then one) while the store keeps its size
	// would keep the room of the burst in values[i]. At a quarter of its
	// peak, values[i] is copied into a map of its size (unindex).
	valuesPeak []int
}

// setID names the key set of value v of index i.
type setID struct {
	i int
	v string
}

// indexSet is an immutable, ordered set of named index functions.
type indexSet[T metav1.Object] struct {
	names []string
	funcs []IndexFunc[T]
	pos   map[string]int // name → position in names and funcs
}

// valueIndex maps an index value to the set of keys whose objects have it.
// A value with no key left is removed.
type valueIndex map[string]map[string]struct{}

// entry is one stored object with its index values: values[i] are the
// object's values for index i.
type entry[T metav1.Object] struct {
	obj    T
	values [][]string
}

func newStore[T metav1.Object](indexes *indexSet[T], sizeHint int) *store[T] {
	s := &store[T]{
		indexes: indexes,
		items:   make(map[string]entry[T], sizeHint),
		values:  make([]valueIndex, len(indexes.funcs)),
	}
	for i := range s.values {
		s.values[i] = valueIndex{}
	}
	return s
}

// indexValues computes obj's values for every index. It only reads the
// immutable index set, so it may run without the lock.
func (x *indexSet[T]) indexValues(key string, obj T) ([][]string, error) {
	return x.valuesOf(0, len(x.funcs), key, obj)
}

// valuesOf computes obj's values for the indexes from up to to, as
// indexValues does for all.
func (x *indexSet[T]) valuesOf(from, to int, key string, obj T) ([][]string, error) {
	if from == to {
		return nil, nil
	}
	values := make([][]string, to-from)
	total := 0
	for i := from; i < to; i++ {
		v, err := x.valuesFor(i, key, obj)
		if err != nil {
			return nil, err
		}
		values[i-from] = v
		total += len(v)
	}
	// The slices are the index functions': copied, in one array, so that
	// a function that changes later the slice it returned (a buffer it
	// reuses) cannot change what the index holds.
	all := make([]string, 0, total)
	for i, v := range values {
		if len(v) == 0 {
			values[i] = nil
			continue
		}
		start := len(all)
		all = append(all, v...)
		values[i] = all[start:len(all):len(all)]
	}
	return values, nil
}

// valuesFor computes obj's values for index i. A panic in the index
// function is its error: the write fails, as for an error, and the caller
// (the informer applying a change) reports it and goes on.
func (x *indexSet[T]) valuesFor(i int, key string, obj T) (v []string, err error) {
	f := x.funcs[i]
	if f == nil {
		return nil, fmt.Errorf("index %q has a nil function", x.names[i])
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("index %q of %s: index function panicked: %v", x.names[i], key, r)
		}
	}()
	v, err = f(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q of %s: %w", x.names[i], key, err)
	}
	return v, nil
}

// free returns an error if one of names is an index of x already.
func (x *indexSet[T]) free(names []string) error {
	for _, name := range names {
		if _, exists := x.pos[name]; exists {
			return fmt.Errorf("index %q already exists", name)
		}
	}
	return nil
}

// with returns a new set holding x's indexes followed by the given ones.
func (x *indexSet[T]) with(names []string, funcs []IndexFunc[T]) *indexSet[T] {
	y := &indexSet[T]{
		names: slices.Concat(x.names, names),
		funcs: slices.Concat(x.funcs, funcs),
		pos:   make(map[string]int, len(x.names)+len(names)),
	}
	for i, name := range y.names {
		y.pos[name] = i
	}
	return y
}

// put stores obj under key with its precomputed index values, replacing
// the index entries of the object it replaces.
func (s *store[T]) put(key string, obj T, values [][]string) {
	old, exists := s.items[key]
	for i := range s.values {
		if exists {
			if slices.Equal(old.values[i], values[i]) {
				continue
			}
			s.unindex(i, key, old.values[i])
		}
		s.index(i, key, values[i])
	}
	s.items[key] = entry[T]{obj: obj, values: s.shared(values)}
	s.peak = max(s.peak, len(s.items))
}

// shared returns values, or, with one index and one value v in it (the
// namespace index's case), the copy of [[v]] that every such entry keeps:
// otherwise each keeps two small slices of its own, 40 bytes an object.
// Entries' values are never modified in place, nor handed out.
func (s *store[T]) shared(values [][]string) [][]string {
	if len(s.values) != 1 || len(values) != 1 || len(values[0]) != 1 {
		return values
	}
	v := values[0][0]
	if c, ok := s.single[v]; ok {
		return c
	}
	if s.single == nil {
		s.single = map[string][][]string{}
	}
	c := [][]string{{v}}
	s.single[v] = c
	return c
}

// remove deletes key and its index entries; an absent key is no error.
func (s *store[T]) remove(key string) {
	old, exists := s.items[key]
	if !exists {
		return
	}
	for i := range s.values {
		s.unindex(i, key, old.values[i])
	}
	delete(s.items, key)
}

// shrinkAbove is the most entries whose room the store keeps however few
// it holds.
const shrinkAbove = 1024

// shrunk reports whether the store holds under a quarter of its peak: its
// maps keep the room of the peak, and compacted would give it back. It
// comes after at least three quarters of peak removals, so compacting
// then costs a constant per removal.
func (s *store[T]) shrunk() bool {
	return s.peak > shrinkAbove && len(s.items) < s.peak/4
}

// compactedMaps are a store's maps copied into maps of their sizes.
type compactedMaps[T metav1.Object] struct {
	indexes *indexSet[T] // the indexes of the store they were copied from
	items   map[string]entry[T]
	values  []valueIndex
	single  map[string][][]string
}

// compacted copies items, the indexes and their key sets, and single into
// maps of their current sizes. It only reads the store.
func (s *store[T]) compacted() compactedMaps[T] {
	c := compactedMaps[T]{indexes: s.indexes, items: resized(s.items), values: make([]valueIndex, len(s.values))}
	for i, vi := range s.values {
		c.values[i] = make(valueIndex, len(vi))
		for v, keys := range vi {
			c.values[i][v] = resized(keys)
		}
	}
	if s.single != nil {
		c.single = resized(s.single)
	}
	return c
}

// install makes the copies c the store's maps. They must hold what the
// store holds.
func (s *store[T]) install(c compactedMaps[T]) {
	s.items, s.values, s.single = c.items, c.values, c.single
	s.peak, s.setPeak, s.valuesPeak = len(s.items), nil, nil
}

// resized returns a copy of m that has only the room it needs.
func resized[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (s *store[T]) index(i int, key string, values []string) {
	for _, v := range values {
		keys := s.values[i][v]
		if keys == nil {
			keys = make(map[string]struct{}, 1)
			s.values[i][v] = keys
			// As for key sets: recorded at powers of two only.
			if n := len(s.values[i]); n > shrinkAbove && n&(n-1) == 0 {
				if len(s.valuesPeak) <= i {
					s.valuesPeak = append(s.valuesPeak, make([]int, i+1-len(s.valuesPeak))...)
				}
				s.valuesPeak[i] = max(s.valuesPeak[i], n)
			}
		}
		keys[key] = struct{}{}
		// Recorded at powers of two only: a map write in 1 add of 2^k.
		if n := len(keys); n > shrinkAbove && n&(n-1) == 0 {
			if s.setPeak == nil {
				s.setPeak = map[setID]int{}
			}
			id := setID{i, v}
			s.setPeak[id] = max(s.setPeak[id], n)
		}
	}
}

func (s *store[T]) unindex(i int, key string, values []string) {
	for _, v := range values {
		keys := s.values[i][v]
		delete(keys, key)
		switch n := len(keys); {
		case n == 0:
			delete(s.values[i], v)
			delete(s.single, v) // no entry has v any more
			delete(s.setPeak, setID{i, v})
			s.shrinkValues(i)
		case n&(n-1) == 0 && s.setPeak != nil:
			// Down to a power of two: at a quarter of its peak, after at
			// least 3/4 of the peak removals, it gives the room back, and
			// will again at a quarter of this.
			if id := (setID{i, v}); n <= s.setPeak[id]/4 {
				s.values[i][v] = resized(keys)
				if n > shrinkAbove {
					s.setPeak[id] = n
				} else {
					delete(s.setPeak, id)
				}
			}
		}
	}
}

// shrinkValues copies the values of index i, which has just lost one,
// into a map of their size when they are down to a power of two and to a
// quarter of their peak (valuesPeak): after at least 3/4 of the peak
// removals, so the copy costs a constant per removal. single, which has
// an entry for some of the values of the only index, is copied with them.
func (s *store[T]) shrinkValues(i int) {
	n := len(s.values[i])
	if i >= len(s.valuesPeak) || s.valuesPeak[i] == 0 || n&(n-1) != 0 || n > s.valuesPeak[i]/4 {
		return
	}
	s.values[i] = resized(s.values[i])
	if s.single != nil {
		s.single = resized(s.single)
	}
	if n > shrinkAbove {
		s.valuesPeak[i] = n
	} else {
		s.valuesPeak[i] = 0
	}
}

// addIndexes installs indexes, s's indexes followed by added ones, with
// the values for them of the object stored under key: aside[key] if
// present, else computed[key] (the caller computed them without the
// lock). Every stored key has one or the other.
func (s *store[T]) addIndexes(indexes *indexSet[T], aside, computed map[string][][]string) {
	first := len(s.values)
	s.single = nil // the indexes change: sharing starts afresh (shared)
	s.indexes = indexes
	for range len(indexes.funcs) - first {
		s.values = append(s.values, valueIndex{})
	}
	for key, e := range s.items {
		added, ok := aside[key]
		if !ok {
			added = computed[key]
		}
		// In place when there is room: only this appends to an entry's
		// slice, and one shared between entries (the namespace index's
		// [[v]]) has none. A Write that shares it sees its own length.
		e.values = append(e.values, added...)
		s.items[key] = e
		for i := first; i < len(s.values); i++ {
			s.index(i, key, e.values[i])
		}
	}
}

// lookup returns the position of the named index.
func (s *store[T]) lookup(name string) (int, error) {
	i, ok := s.indexes.pos[name]
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownIndex, name)
	}
	return i, nil
}

// objectsOf returns the objects whose keys are in the union of the given
// values of index i, each once.
func (s *store[T]) objectsOf(i int, values []string) []T {
	if len(values) == 1 {
		keys := s.values[i][values[0]]
		out := make([]T, 0, len(keys))
		for key := range keys {
			if e, ok := s.items[key]; ok { // always: no zero T handed out if not
				out = append(out, e.obj)
			}
		}
		return out
	}
	seen := map[string]struct{}{}
	var out []T
	for _, v := range values {
		for key := range s.values[i][v] {
			if _, dup := seen[key]; !dup {
				seen[key] = struct{}{}
				if e, ok := s.items[key]; ok {
					out = append(out, e.obj)
				}
			}
		}
	}
	return out
}
