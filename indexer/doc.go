// Package indexer is the informer's local cache: a thread-safe map from
// object key to object, plus named secondary indexes.
//
// The flow of one object through listwatch is
//
//	reflector → deltafifo → informer → indexer / processor
//
// The informer pops each key's deltas from the deltafifo and applies them
// here (Prepare and Commit for a new state, so that the index functions run
// outside its own lock; Delete for a deletion), then tells the processor,
// taking the old state of an object from the indexer. Add, Update and
// Replace are there for other callers. Readers (listers,
// controllers) call Get, List and ByIndex at any time from any goroutine.
// The deltafifo also reads the indexer, through its small KnownObjects
// interface, to find which objects a relist implies were deleted.
//
// # Indexes
//
// An index is a named [IndexFunc] that maps an object to zero or more index
// values; the indexer keeps, for every index and value, the set of keys of
// the objects that have that value. [NamespaceIndexFunc] is the common one:
// ByIndex(NamespaceIndex, "kube-system") lists the objects of a namespace
// without scanning the whole cache.
//
// Index values are computed before anything is changed, without the lock: a
// write whose index function fails returns an error and leaves the store
// exactly as it was. [Indexer.Prepare] and [Indexer.Commit] are those two
// steps of a write apart, for a caller that stores under a lock of its own
// and must not run user code under it (the informer). A
// Replace is built aside and swapped in at once, so readers see either the
// old contents or the new, never a mix.
//
// The implementation is an unlocked store (store.go) wrapped by the locking
// [Indexer] (indexer.go).
package indexer
