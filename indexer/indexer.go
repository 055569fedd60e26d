package indexer

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// ErrUnknownIndex is wrapped by the error Index, IndexKeys and ByIndex
// return for an index name that was never added.
var ErrUnknownIndex = errors.New("unknown index")

// ErrInvalidObject is wrapped by the error a write returns for an object it
// cannot store: a nil object, one without a name, one with a "/" in its name
// or namespace (which no Kubernetes object has: its key would be another
// object's), or one whose key is empty or whose key function panics.
// The store is unchanged. It is the same error as deltafifo.ErrInvalidObject.
var ErrInvalidObject = objkey.ErrInvalidObject

// Indexer is a thread-safe map from key to object with named secondary
// indexes. It satisfies deltafifo.KnownObjects.
//
// The zero Indexer is not usable: use [New]. An Indexer is safe for
// concurrent use; slices it returns are fresh and belong to the caller, but
// the objects in them are shared and must not be modified.
type Indexer[T metav1.Object] struct {
	keyFunc func(T) string

	// wmu orders writers' commits: a write takes it, then mu, to store
	// what it computed; AddIndexers holds it for its last pass (see
	// maxFreePasses). Lock order: wmu, then mu.
	wmu sync.Mutex
	mu  sync.RWMutex
	s   *store[T] // Replace swaps in a new store
}

// maxFreePasses is how many passes AddIndexers makes while writes go on.
// Each computes what was written during the one before; if writes keep
// coming faster than the new index functions run, the next pass holds
// writes back (not reads), so AddIndexers always returns.
const maxFreePasses = 3

// Option configures an [Indexer] made by [New].
type Option[T metav1.Object] func(*Indexer[T])

// WithKeyFunc sets the function that computes an object's key. The default
// is [MetaNamespaceKey]. A nil f keeps the default. A write of an object
// it returns "" for, or panics on, fails with ErrInvalidObject.
func WithKeyFunc[T metav1.Object](f func(T) string) Option[T] {
	return func(x *Indexer[T]) {
		if f != nil {
			x.keyFunc = f
		}
	}
}

// New returns an empty Indexer with the given indexes (nil for none).
func New[T metav1.Object](indexers Indexers[T], opts ...Option[T]) *Indexer[T] {
	x := &Indexer[T]{keyFunc: func(obj T) string { return MetaNamespaceKey(obj) }}
	for _, opt := range opts {
		if opt != nil {
			opt(x)
		}
	}
	names, funcs := sorted(indexers)
	x.s = newStore((&indexSet[T]{}).with(names, funcs), 0)
	return x
}

// Add stores obj, replacing any object with the same key. If an index
// function fails, Add returns the error and changes nothing.
func (x *Indexer[T]) Add(obj T) error { return x.put("Add", obj) }

// Update is the same as [Indexer.Add]: it stores obj, replacing any object
// with the same key, and moves the key out of the index values the old
// object had and the new one lacks.
func (x *Indexer[T]) Update(obj T) error { return x.put("Update", obj) }

func (x *Indexer[T]) put(op string, obj T) error {
	for {
		w, err := x.prepare(obj)
		if err != nil {
			return fmt.Errorf("indexer: %s: %w", op, err)
		}
		if x.Commit(w) {
			return nil
		}
		// AddIndexers ran meanwhile: compute again
	}
}

// A Write is an object made ready to store by [Indexer.Prepare]: its key
// and its index values are computed. The zero Write is not usable.
type Write[T metav1.Object] struct {
	key     string
	obj     T
	indexes *indexSet[T] // the index functions values came from
	values  [][]string
}

// Key returns the key the object will be stored under.
func (w Write[T]) Key() string { return w.key }

// Prepare does the part of [Indexer.Add] that runs user code, the key and
// index functions, without taking any lock, and returns the rest as a
// Write for [Indexer.Commit]. The informer prepares each write this way so
// that it can store it and tell the handlers under a lock of its own
// without running user code under that lock. It fails as Add would, and
// changes nothing.
func (x *Indexer[T]) Prepare(obj T) (Write[T], error) {
	w, err := x.prepare(obj)
	if err != nil {
		return Write[T]{}, fmt.Errorf("indexer: Prepare: %w", err)
	}
	return w, nil
}

func (x *Indexer[T]) prepare(obj T) (Write[T], error) {
	key, err := x.keyOf(obj)
	if err != nil {
		return Write[T]{}, err
	}
	indexes := x.indexes()
	values, err := indexes.indexValues(key, obj)
	if err != nil {
		return Write[T]{}, err
	}
	return Write[T]{key: key, obj: obj, indexes: indexes, values: values}, nil
}

// Commit stores a prepared write's object, replacing any object with the
// same key, as Add does; it runs no user code. It reports false and stores
// nothing if the Write is the zero Write, or if [Indexer.AddIndexers] added
// indexes since the Write was prepared: prepare it again.
func (x *Indexer[T]) Commit(w Write[T]) bool {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.indexes == nil || x.s.indexes != w.indexes {
		return false
	}
	x.s.put(w.key, w.obj, w.values)
	return true
}

// Delete removes the object with obj's key. Deleting an absent key is not
// an error.
func (x *Indexer[T]) Delete(obj T) error {
	key, err := x.keyOf(obj)
	if err != nil {
		return fmt.Errorf("indexer: Delete: %w", err)
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	x.s.remove(key)
	shrunk := x.s.shrunk()
	x.mu.Unlock()
	if shrunk {
		x.compact()
	}
	return nil
}

// compact gives back the room the store's maps kept from its peak. The
// caller holds wmu, so no write is stored meanwhile. The copies are made
// under the read lock, which lets readers go on (copying 100k entries
// takes tens of milliseconds), and installed unless AddIndexers, which
// changes the store under mu alone, changed its indexes meanwhile; then
// the next Delete tries again.
func (x *Indexer[T]) compact() {
	x.mu.RLock()
	s := x.s
	c := s.compacted()
	x.mu.RUnlock()
	x.installCompacted(s, c)
}

// installCompacted installs c, copied from s, if s is still the store and
// has the indexes c was copied with.
func (x *Indexer[T]) installCompacted(s *store[T], c compactedMaps[T]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.s == s && s.indexes == c.indexes {
		s.install(c)
	}
}

// Replace makes list the whole contents of the store. The resourceVersion
// is not used. The new contents and indexes are built without the lock and
// swapped in at once: readers see the old contents or the new, never a mix.
// If an object is invalid or an index function fails, Replace returns the
// error and changes nothing. Of two objects with the same key, the later
// wins.
func (x *Indexer[T]) Replace(list []T, resourceVersion string) error {
	for {
		indexes := x.indexes()
		fresh := newStore(indexes, len(list))
		for i, obj := range list {
			key, err := x.keyOf(obj)
			if err != nil {
				return fmt.Errorf("indexer: Replace: list item %d: %w", i, err)
			}
			values, err := indexes.indexValues(key, obj)
			if err != nil {
				return fmt.Errorf("indexer: Replace: list item %d: %w", i, err)
			}
			fresh.put(key, obj, values)
		}
		x.wmu.Lock()
		x.mu.Lock()
		done := x.s.indexes == indexes
		if done {
			x.s = fresh
		}
		x.mu.Unlock()
		x.wmu.Unlock()
		if done {
			return nil
		}
		// AddIndexers ran meanwhile: build again
	}
}

// Get returns the stored object with obj's key.
func (x *Indexer[T]) Get(obj T) (T, bool) {
	key, err := x.keyOf(obj)
	if err != nil {
		var zero T
		return zero, false
	}
	return x.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (x *Indexer[T]) GetByKey(key string) (T, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.s.items[key]
	return e.obj, ok
}

// List returns all stored objects, in no particular order.
func (x *Indexer[T]) List() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]T, 0, len(x.s.items))
	for _, e := range x.s.items {
		out = append(out, e.obj)
	}
	return out
}

// ListKeys returns the keys of all stored objects, in no particular order.
func (x *Indexer[T]) ListKeys() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.s.items))
	for key := range x.s.items {
		out = append(out, key)
	}
	return out
}

// Len returns the number of stored objects.
func (x *Indexer[T]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.s.items)
}

// Index returns the stored objects that share at least one value of the
// named index with obj (obj itself need not be stored), each once, in no
// particular order.
func (x *Indexer[T]) Index(name string, obj T) ([]T, error) {
	if isNil(obj) {
		return nil, fmt.Errorf("indexer: Index: %w: object is nil", ErrInvalidObject)
	}
	indexes := x.indexes()
	i, ok := indexes.pos[name]
	if !ok {
		return nil, fmt.Errorf("indexer: Index: %w %q", ErrUnknownIndex, name)
	}
	key, _ := objkey.CallKeyFunc(x.keyFunc, obj) // names obj in an error; "" if the key function panics
	values, err := indexes.valuesFor(i, key, obj)
	if err != nil {
		return nil, fmt.Errorf("indexer: Index: %w", err)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.s.objectsOf(i, values), nil
}

// IndexKeys returns the keys of the stored objects that have value in the
// named index, in no particular order.
func (x *Indexer[T]) IndexKeys(name, value string) ([]string, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i, err := x.s.lookup(name)
	if err != nil {
		return nil, fmt.Errorf("indexer: IndexKeys: %w", err)
	}
	keys := x.s.values[i][value]
	out := make([]string, 0, len(keys))
	for key := range keys {
		out = append(out, key)
	}
	return out, nil
}

// ByIndex returns the stored objects that have value in the named index,
// in no particular order.
func (x *Indexer[T]) ByIndex(name, value string) ([]T, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i, err := x.s.lookup(name)
	if err != nil {
		return nil, fmt.Errorf("indexer: ByIndex: %w", err)
	}
	return x.s.objectsOf(i, []string{value}), nil
}

// ListIndexFuncValues returns the values the named index holds, in no
// particular order; nil for an unknown index.
func (x *Indexer[T]) ListIndexFuncValues(name string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i, err := x.s.lookup(name)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(x.s.values[i]))
	for v := range x.s.values[i] {
		out = append(out, v)
	}
	return out
}

// AddIndexers adds indexes, and indexes the objects already stored with
// them. Adding a name that already exists is an error; so is a nil
// function. If an index function fails on a stored object, AddIndexers
// returns the error and changes nothing. The index functions run without
// the lock, as they do for every write: readers and writers go on
// meanwhile, and the objects they store or remove are indexed again before
// the indexes are installed. If writes keep coming during each of a few
// such passes, the last pass holds them back (readers go on), so
// AddIndexers returns whatever the rate of writes; an index function added
// this way must therefore not write to the Indexer, nor wait for anything
// that waits for a write (an informer's AddEventHandler does).
func (x *Indexer[T]) AddIndexers(indexers Indexers[T]) error {
	names, funcs := sorted(indexers)
	for i, name := range names {
		if funcs[i] == nil {
			return fmt.Errorf("indexer: AddIndexers: index %q has a nil function", name)
		}
	}
	added := (&indexSet[T]{}).with(names, funcs) // to compute with only
	log := &changeLog{}
	var (
		st       *store[T]             // the store log is registered with
		computed map[string][][]string // key → the added indexes' values
		work     []keyed[T]            // what to compute next
	)
	holdingWrites := false
	x.mu.Lock()
	defer func() {
		if st != nil {
			x.mu.Lock()
			delete(st.changes, log)
			x.mu.Unlock()
		}
		if holdingWrites {
			x.wmu.Unlock()
		}
	}()
	// x.mu is held at the top of every pass: each pass lets it go while
	// the index functions run and takes it again for the next. From the
	// end of pass maxFreePasses, wmu is held as well, until AddIndexers
	// returns.
	for pass := 1; ; pass++ {
		if err := x.s.indexes.free(names); err != nil {
			x.mu.Unlock()
			return fmt.Errorf("indexer: AddIndexers: %w", err)
		}
		switch {
		case x.s != st: // the first pass, or Replace swapped the store
			if st != nil {
				delete(st.changes, log)
			}
			st, computed = x.s, map[string][][]string{}
			st.register(log)
			work = work[:0]
			for key, e := range st.items {
				work = append(work, keyed[T]{key, e.obj})
			}
		case len(log.keys) == 0: // every stored object computed
			st.addIndexes(names, funcs, computed)
			x.mu.Unlock()
			return nil
		default: // objects stored or removed while computing
			work = work[:0]
			for key := range log.keys {
				if e, ok := st.items[key]; ok {
					work = append(work, keyed[T]{key, e.obj})
				} else {
					delete(computed, key)
				}
			}
		}
		clear(log.keys)
		x.mu.Unlock()

		// Index functions are user code: run them without the lock.
		for _, w := range work {
			values, err := added.indexValues(w.key, w.obj)
			if err != nil {
				return fmt.Errorf("indexer: AddIndexers: %w", err)
			}
			computed[w.key] = values
		}
		if pass >= maxFreePasses && !holdingWrites {
			// From here no write is stored until the indexes are
			// installed: the next pass computes the last of them.
			x.wmu.Lock()
			holdingWrites = true
		}
		x.mu.Lock()
	}
}

// keyed is an object with its key.
type keyed[T metav1.Object] struct {
	key string
	obj T
}

// indexes returns the current index set, which is immutable.
func (x *Indexer[T]) indexes() *indexSet[T] {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.s.indexes
}

// keyOf validates obj and computes its key.
func (x *Indexer[T]) keyOf(obj T) (string, error) {
	if isNil(obj) {
		return "", fmt.Errorf("%w: object is nil", ErrInvalidObject)
	}
	if obj.GetName() == "" {
		return "", fmt.Errorf("%w: object has no name", ErrInvalidObject)
	}
	if err := objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidObject, err)
	}
	key, err := objkey.CallKeyFunc(x.keyFunc, obj)
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("%w: key function returned an empty key for %s", ErrInvalidObject, MetaNamespaceKey(obj))
	}
	return key, nil
}

// sorted returns the names and functions of indexers, ordered by name.
func sorted[T metav1.Object](indexers Indexers[T]) ([]string, []IndexFunc[T]) {
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	slices.Sort(names)
	funcs := make([]IndexFunc[T], len(names))
	for i, name := range names {
		funcs[i] = indexers[name]
	}
	return names, funcs
}
