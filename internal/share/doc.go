// Package share makes the objects of a cache share their identical parts.
//
// A cache of pods holds thousands of copies of the same few values: every
// pod of a ReplicaSet carries the same labels, owner reference, containers,
// tolerations, volumes and resource lists. The Reflector decodes each
// object on its own, so each copy is a separate allocation that the cache
// holds and the garbage collector marks. A Table replaces, after the
// transform and before the object reaches the DeltaFIFO, every map, slice
// and pointed-to value that equals one it has seen recently by that one
// copy: hash-consing, bottom up, so a parent compares its children by
// identity once they are shared.
//
// Where it sits in the flow:
//
//	server ─▶ Reflector: decode ─▶ transform ─▶ share ─▶ DeltaFIFO ─▶ Indexer, handlers
//
// Without a transform, sharing moves into the decoder (internal/wire's
// WithSharedParts): typed objects share their parts by their bytes while
// they are decoded. The walk does not look inside interface values, so an
// unstructured object (nested map[string]interface{}) shares nothing.
//
// Sharing is sound only while nobody modifies a cached object: client-go's
// rule and listwatch's (deep-copy before changing one). A handler that
// breaks the rule with sharing on changes other objects too, so sharing is
// opt-in (reflector.WithSharing).
//
// The Table is a bounded cache, not a set: it remembers up to a fixed
// number of values, and once it has all its slots, a value that finds its
// bucket full replaces one of the four it holds, at random. An object whose
// parts were forgotten keeps its own copies: sharing is lost, never
// correctness. A remembered value stays in memory after the objects that
// held it left the cache, until it is pushed out, so the Table bounds
// bytes as well: a value of more than 64 KiB is never remembered (so never
// shared), nor one that holds a value it did not remember, nor a map whose
// values hold references (a Secret's data: its values are not shared, so
// two such maps never match); and once the values remembered would pass
// 32 MiB the Table forgets them all.
package share
