// Package deltafifo is the queue between the reflector and the informer.
//
// The flow of one object through listwatch is
//
//	reflector → deltafifo → informer → indexer / processor
//
// The reflector lists and watches the apiserver and calls Add, Update,
// Delete and Replace (after every list) on a [FIFO]; the informer calls
// Resync when a handler's resync period is due. The FIFO keeps,
// for every object key, the list of changes ([Delta]s) that happened to that
// object since the consumer last looked at it. The informer calls [FIFO.Pop]
// in a loop: each call hands out one key with all of its deltas, oldest
// first, and the informer applies them to the indexer and tells the
// processor, which calls the user's handlers.
//
// Keeping every delta of a key together, instead of one queue entry per
// event, means a slow consumer sees each object once per Pop however many
// events piled up for it, yet never loses the order of what happened to it.
//
// # What the FIFO guarantees
//
//   - Keys are popped in the order they were first queued; a key's deltas
//     are in the order they arrived.
//   - Two Deleted deltas in a row for one key become one: the one whose
//     final state is known, or else the newer. (client-go keeps the older
//     of two whose final states are both known, as two watch DELETED
//     events of one object: we keep the newer, the later state the server
//     told.)
//   - Replace (a fresh list) queues a Replaced delta for every listed object
//     and a Deleted delta with FinalStateUnknown set for every key the
//     consumer knows, or the queue holds, that the list lacks. That delete
//     carries the newest state of the object we had, typed: there is no
//     tombstone wrapper to type-assert. ReplaceKeeping is Replace for a
//     list some objects were left out of (the transform failed on them, or
//     they came without a resourceVersion): their keys get nothing, so what
//     the consumer holds for them stays.
//   - Resync queues a Sync delta for every known key that is neither queued
//     nor being processed, or whose newest delta there is a Replaced (which
//     a consumer may drop when it changes nothing).
//   - Pop runs the caller's process function with the queue unlocked, so
//     producers are never blocked by a slow consumer. A key queued again
//     while its previous batch is being processed is a new entry.
//   - HasSynced and Synced report when everything from the first list has
//     been processed.
//
// The FIFO starts no goroutines. The "known objects" it consults to detect
// deletions are usually the informer's indexer, seen through the small
// [KnownObjects] interface.
package deltafifo
