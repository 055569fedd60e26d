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
// The zero Indexer is an empty Indexer with no indexes and the default key
// function, as New(nil) makes. An Indexer is safe for concurrent use and
// must not be copied after first use; slices it returns are fresh and
// belong to the caller, but the objects in them are shared and must not be
// modified.
type Indexer[T metav1.Object] struct {
	keyFunc func(T) string

	// readyOnce makes the store, and sets the default key function if
	// there is none: in New, or at the first use of the zero Indexer.
	readyOnce sync.Once

	// No user code runs under wmu or mu. wmu orders writers' commits
	// against Delete's compaction (compact): a write takes it, then mu, to
	// store what it computed. AddIndexers takes mu alone. Lock order: wmu,
	// then mu.
	wmu sync.Mutex
	mu  sync.RWMutex
	s   *store[T] // Replace swaps in a new store
	// prep is the index set writes are prepared with: s.indexes, or while
	// an AddIndexers is under way, pending.indexes. Commit refuses a Write
	// prepared with any other.
	prep    *indexSet[T]
	pending *pendingIndexes[T] // nil unless an AddIndexers is under way

	// addMu serializes AddIndexers calls. It is held while their index
	// functions run, and only AddIndexers takes it.
	addMu sync.Mutex
}

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
	x := &Indexer[T]{}
	for _, opt := range opts {
		if opt != nil {
			opt(x)
		}
	}
	names, funcs := sorted(indexers)
	x.s = newStore((&indexSet[T]{}).with(names, funcs), 0)
	x.prep = x.s.indexes
	x.ready()
	return x
}

// ready readies x for use, once: every method calls it first, so that the
// zero Indexer works as New(nil) does.
func (x *Indexer[T]) ready() {
	x.readyOnce.Do(func() {
		if x.keyFunc == nil {
			x.keyFunc = func(obj T) string { return MetaNamespaceKey(obj) }
		}
		if x.s == nil {
			x.s = newStore(&indexSet[T]{}, 0)
			x.prep = x.s.indexes
		}
	})
}

// Add stores obj, replacing any object with the same key. If an index
// function fails, Add returns the error and changes nothing. An index
// function of an AddIndexers under way that fails does not fail the write:
// AddIndexers fails instead (see [Indexer.AddIndexers]), unless it has
// installed its indexes before the write is stored, which then fails on
// them.
func (x *Indexer[T]) Add(obj T) error { return x.put("Add", obj) }

// Update is the same as [Indexer.Add]: it stores obj, replacing any object
// with the same key, and moves the key out of the index values the old
// object had and the new one lacks.
func (x *Indexer[T]) Update(obj T) error { return x.put("Update", obj) }

func (x *Indexer[T]) put(op string, obj T) error {
	x.ready()
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
	// addErr is the error of an index function of an AddIndexers under
	// way (pending), whose values are then nil: stored, the write makes
	// that AddIndexers fail.
	addErr error
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
	x.ready()
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
	indexes, n := x.prepSet()
	values, err := indexes.valuesOf(0, n, key, obj)
	if err != nil {
		return Write[T]{}, err
	}
	w := Write[T]{key: key, obj: obj, indexes: indexes, values: values}
	if all := len(indexes.funcs); n < all {
		added, err := indexes.valuesOf(n, all, key, obj)
		if err != nil {
			added, w.addErr = make([][]string, all-n), err
		}
		w.values = append(values[:n:n], added...)
	}
	return w, nil
}

// Commit stores a prepared write's object, replacing any object with the
// same key, as Add does; it runs no user code. It reports false and stores
// nothing if the Write is the zero Write; if [Indexer.AddIndexers] began
// since the Write was prepared (unless it has failed since: writes then go
// on with the indexes they had), or was under way when it was prepared and
// has failed since; or if it installed indexes one of whose functions
// failed on the Write's object: prepare it again.
func (x *Indexer[T]) Commit(w Write[T]) bool {
	x.ready()
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if w.indexes == nil || w.indexes != x.prep {
		return false
	}
	values := w.values
	switch p := x.pending; {
	case p != nil:
		// Prepared with the pending indexes: their values wait aside,
		// or what one of their functions failed with.
		n := len(x.s.indexes.funcs)
		p.set(w.key, values[n:], w.addErr)
		values = values[:n:n]
	case w.addErr != nil:
		// The AddIndexers whose function failed on it installed its
		// indexes meanwhile (the write came after the snapshot it
		// indexed): prepared again, the write fails on them.
		return false
	}
	x.s.put(w.key, w.obj, values)
	return true
}

// Delete removes the object with obj's key. Deleting an absent key is not
// an error.
func (x *Indexer[T]) Delete(obj T) error {
	x.ready()
	key, err := x.keyOf(obj)
	if err != nil {
		return fmt.Errorf("indexer: Delete: %w", err)
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	x.s.remove(key)
	if x.pending != nil {
		x.pending.forget(key)
	}
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
// installs its indexes under mu alone, changed them meanwhile; then the
// next Delete tries again. (The values an AddIndexers under way keeps
// aside are not the store's: compaction leaves them be.)
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
// error and changes nothing; an index function of an AddIndexers under way
// that fails makes AddIndexers fail instead, as for Add. Of two objects
// with the same key, the later wins.
func (x *Indexer[T]) Replace(list []T, resourceVersion string) error {
	x.ready()
	for {
		x.mu.RLock()
		prep, installed := x.prep, x.s.indexes
		x.mu.RUnlock()
		n, all := len(installed.funcs), len(prep.funcs)
		fresh := newStore(installed, len(list))
		// The values of the indexes an AddIndexers under way added, and
		// what their functions failed with.
		var aside pendingIndexes[T]
		for i, obj := range list {
			key, err := x.keyOf(obj)
			if err != nil {
				return fmt.Errorf("indexer: Replace: list item %d: %w", i, err)
			}
			values, err := prep.valuesOf(0, n, key, obj)
			if err != nil {
				return fmt.Errorf("indexer: Replace: list item %d: %w", i, err)
			}
			if n < all {
				added, err := prep.valuesOf(n, all, key, obj)
				aside.set(key, added, err)
			}
			fresh.put(key, obj, values)
		}
		x.wmu.Lock()
		x.mu.Lock()
		done := x.prep == prep
		if done {
			switch {
			case x.pending != nil: // the AddIndexers prep came from is under way
				x.pending.values, x.pending.failed = aside.values, aside.failed
			case len(aside.failed) > 0:
				// It installed its indexes meanwhile, and one of their
				// functions fails on an item: built again, the list
				// fails on it.
				done = false
			case n < all: // it installed its indexes meanwhile
				fresh.addIndexes(prep, aside.values, nil)
			}
			if done {
				x.s = fresh
			}
		}
		x.mu.Unlock()
		x.wmu.Unlock()
		if done {
			return nil
		}
		// AddIndexers began or failed meanwhile: build again
	}
}

// Get returns the stored object with obj's key.
func (x *Indexer[T]) Get(obj T) (T, bool) {
	x.ready()
	key, err := x.keyOf(obj)
	if err != nil {
		var zero T
		return zero, false
	}
	return x.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (x *Indexer[T]) GetByKey(key string) (T, bool) {
	x.ready()
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.s.items[key]
	return e.obj, ok
}

// List returns all stored objects, in no particular order.
func (x *Indexer[T]) List() []T {
	x.ready()
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
	x.ready()
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
	x.ready()
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.s.items)
}

// Index returns the stored objects that share at least one value of the
// named index with obj (obj itself need not be stored), each once, in no
// particular order.
func (x *Indexer[T]) Index(name string, obj T) ([]T, error) {
	x.ready()
	if objkey.IsNil(obj) {
		return nil, fmt.Errorf("indexer: Index: %w: object is nil", ErrInvalidObject)
	}
	indexes := x.installed()
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
	x.ready()
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
	x.ready()
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
	x.ready()
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

// installed returns the installed index set, which is immutable.
func (x *Indexer[T]) installed() *indexSet[T] {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.s.indexes
}

// prepSet returns the index set to prepare a write with (prep), and how
// many of its indexes are installed: the rest are an AddIndexers' under
// way.
func (x *Indexer[T]) prepSet() (_ *indexSet[T], installed int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.prep, len(x.s.indexes.funcs)
}

// keyOf validates obj and computes its key.
func (x *Indexer[T]) keyOf(obj T) (string, error) {
	if objkey.IsNil(obj) {
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
