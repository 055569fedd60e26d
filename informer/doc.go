// Package informer wires the list-watch stages into a SharedIndexInformer:
//
//	Reflector ──▶ deltafifo.FIFO ──Pop──▶ informer ──▶ indexer.Indexer (the cache)
//	                                          └──────▶ processor ──▶ your handlers
//
// The informer's loop pops one key's Deltas at a time from the FIFO and, for
// each Delta, first updates the cache (the old state comes from the cache)
// and then hands a notification — add, update or delete — to the processor,
// which delivers it to every handler on the handler's own goroutines.
//
// Three rules make the handlers' view exact:
//
//   - A relist that finds an object unchanged (same resourceVersion and
//     same content) tells no handler anything; resync periods are the
//     explicit way to get objects again. One the server now serves
//     otherwise under the same resourceVersion (a CRD's new schema prunes
//     a field, or a resource has no resourceVersions, as
//     componentstatuses, listed on a timer rather than watched) is an
//     update, so that what the handlers were told stays what the cache
//     holds. (Comparing a pod costs a relist about three quarters of what
//     decoding it from JSON does, BenchmarkRelistUnchanged; client-go
//     sends updates of every relisted object instead: see the README.)
//   - An object deleted and created again under the same name while the
//     informer was not watching (its UID changed) is delivered as a delete
//     and then an add, not as an update.
//   - A handler added to a running informer first gets every cached object
//     as an add with isInInitialList set, then every later change, with
//     nothing lost or repeated in between.
//
// The cache, the handlers and Lister callers share one copy of each object,
// so none of them may change it (change a DeepCopy instead);
// WithMutationDetector finds code that does, in tests.
//
// A Factory shares one informer per Go type and Target (resource, kind,
// namespace and selectors) among everyone who asks, talks to the apiserver
// over HTTP with the reflector package's ListerWatcher, gives every cache
// the namespace index, and can wait for all of its caches to sync. An
// informer runs until the context of the Start that ran it ends; after
// that, For makes a new one in its place for the next Start.
// WaitForSync waits for any informers and handler registrations, a
// Factory's or not, and says why those that did not sync did not.
package informer
