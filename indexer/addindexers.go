package indexer

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How indexes are added to an Indexer in use: AddIndexers publishes them
// to writers first, computes their values for what is stored without a
// lock, and installs them in one step.

// pendingIndexes is an AddIndexers under way: its indexes are published to
// writers, which compute their values too, but not yet installed.
type pendingIndexes[T metav1.Object] struct {
	// indexes is the installed indexes followed by the added ones.
	indexes *indexSet[T]
	// values holds, for each key stored since the publish (by Commit or
	// Replace), the added indexes' values of the object stored under it,
	// and failed what an added index function failed with instead. A key
	// stored since is in one of them; any other stored key holds the
	// object it held at the publish. Delete drops a key from both.
	values map[string][][]string
	failed map[string]error
}

// set records the added indexes' values of the object stored under key,
// or, if err is not nil, that one of their functions failed on it.
func (p *pendingIndexes[T]) set(key string, values [][]string, err error) {
	if err != nil {
		delete(p.values, key)
		if p.failed == nil {
			p.failed = make(map[string]error)
		}
		p.failed[key] = err
		return
	}
	delete(p.failed, key)
	if p.values == nil {
		p.values = make(map[string][][]string)
	}
	p.values[key] = values
}

// forget drops a deleted key.
func (p *pendingIndexes[T]) forget(key string) {
	delete(p.values, key)
	delete(p.failed, key)
}

// failure returns the error of an added index function on a stored object,
// if any: of the least key, so that the same state fails the same way.
func (p *pendingIndexes[T]) failure() error {
	if len(p.failed) == 0 {
		return nil
	}
	return p.failed[slices.Min(slices.Collect(maps.Keys(p.failed)))]
}

// AddIndexers adds indexes, and indexes the objects already stored with
// them. Adding a name that already exists is an error; so is a nil
// function. If an index function fails or panics on a stored object (one
// stored before the call, or while it runs), AddIndexers returns the error
// and changes nothing.
//
// No lock of the Indexer is held while the index functions run: readers
// and writers go on meanwhile, and an index function may read the
// Indexer. From the moment AddIndexers is called until it returns, writes
// run the added index functions too, as they will once the indexes are
// installed (so, as for any index function, waiting in one for a write to
// the Indexer may wait for itself). A write whose object an added index
// function fails on is stored all the same, and makes AddIndexers fail
// with that error, unless the key is written again, deleted or left out of
// a Replace before AddIndexers installs the indexes: the write does not
// depend on indexes that may never be added. Calls of AddIndexers run one
// at a time: an index function must not call AddIndexers on the same
// Indexer.
func (x *Indexer[T]) AddIndexers(indexers Indexers[T]) error {
	x.ready()
	names, funcs := sorted(indexers)
	for i, name := range names {
		if funcs[i] == nil {
			return fmt.Errorf("indexer: AddIndexers: index %q has a nil function", name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	x.addMu.Lock()
	defer x.addMu.Unlock()

	// Publish the indexes to writers: every write stored from here on
	// brings the added indexes' values (Commit, Replace). Snapshot what
	// is stored, in the same step.
	x.mu.Lock()
	if err := x.s.indexes.free(names); err != nil {
		x.mu.Unlock()
		return fmt.Errorf("indexer: AddIndexers: %w", err)
	}
	p := &pendingIndexes[T]{indexes: x.s.indexes.with(names, funcs), values: map[string][][]string{}}
	x.pending, x.prep = p, p.indexes
	work := make([]keyed[T], 0, len(x.s.items))
	for key, e := range x.s.items {
		work = append(work, keyed[T]{key, e.obj})
	}
	x.mu.Unlock()
	installed := false
	defer func() {
		if !installed {
			// Withdraw: writes prepared with p are refused from here on
			// and prepared again; the values they left aside go with p.
			x.mu.Lock()
			x.pending, x.prep = nil, x.s.indexes
			x.mu.Unlock()
		}
	}()

	// Index functions are user code: run them without the lock.
	added := (&indexSet[T]{}).with(names, funcs)
	computed := make(map[string][][]string, len(work))
	for _, w := range work {
		values, err := added.indexValues(w.key, w.obj)
		if err != nil {
			return fmt.Errorf("indexer: AddIndexers: %w", err)
		}
		computed[w.key] = values
	}

	// Install: a key stored since the publish has its values aside; any
	// other still holds the object computed here.
	if err := x.install(p, computed); err != nil {
		return fmt.Errorf("indexer: AddIndexers: %w", err)
	}
	installed = true
	return nil
}

// install installs the indexes of p under the lock, released however
// addIndexes returns: the withdraw deferred in AddIndexers takes it again.
// It installs nothing if an added index function failed on an object
// stored since the publish, and returns that error.
func (x *Indexer[T]) install(p *pendingIndexes[T], computed map[string][][]string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := p.failure(); err != nil {
		return err
	}
	x.s.addIndexes(p.indexes, p.values, computed)
	x.pending = nil // x.prep stays p.indexes, now installed
	return nil
}

// keyed is an object with its key.
type keyed[T metav1.Object] struct {
	key string
	obj T
}
