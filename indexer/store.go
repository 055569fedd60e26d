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
	// values[i] belongs to indexes.funcs[i].
	values []valueIndex
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
	if len(x.funcs) == 0 {
		return nil, nil
	}
	values := make([][]string, len(x.funcs))
	for i := range x.funcs {
		v, err := x.valuesFor(i, key, obj)
		if err != nil {
			return nil, err
		}
		values[i] = v
	}
	return values, nil
}

// valuesFor computes obj's values for index i.
func (x *indexSet[T]) valuesFor(i int, key string, obj T) ([]string, error) {
	f := x.funcs[i]
	if f == nil {
		return nil, fmt.Errorf("index %q has a nil function", x.names[i])
	}
	v, err := f(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q of %s: %w", x.names[i], key, err)
	}
	return v, nil
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
	s.items[key] = entry[T]{obj: obj, values: values}
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

func (s *store[T]) index(i int, key string, values []string) {
	for _, v := range values {
		keys := s.values[i][v]
		if keys == nil {
			keys = make(map[string]struct{}, 1)
			s.values[i][v] = keys
		}
		keys[key] = struct{}{}
	}
}

func (s *store[T]) unindex(i int, key string, values []string) {
	for _, v := range values {
		keys := s.values[i][v]
		delete(keys, key)
		if len(keys) == 0 {
			delete(s.values[i], v)
		}
	}
}

// addIndexes adds indexes and indexes every stored object with them. If an
// index function fails, it returns the error and changes nothing.
func (s *store[T]) addIndexes(names []string, funcs []IndexFunc[T]) error {
	added := &indexSet[T]{names: names, funcs: funcs}
	computed := make(map[string][][]string, len(s.items))
	for key, e := range s.items {
		values, err := added.indexValues(key, e.obj)
		if err != nil {
			return err
		}
		computed[key] = values
	}

	first := len(s.values)
	s.indexes = s.indexes.with(names, funcs)
	for range funcs {
		s.values = append(s.values, valueIndex{})
	}
	for key, e := range s.items {
		// Copy rather than append in place: the old slice may be shared.
		e.values = slices.Concat(e.values, computed[key])
		s.items[key] = e
		for j := range funcs {
			s.index(first+j, key, e.values[first+j])
		}
	}
	return nil
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
			out = append(out, s.items[key].obj)
		}
		return out
	}
	seen := map[string]struct{}{}
	var out []T
	for _, v := range values {
		for key := range s.values[i][v] {
			if _, dup := seen[key]; !dup {
				seen[key] = struct{}{}
				out = append(out, s.items[key].obj)
			}
		}
	}
	return out
}
