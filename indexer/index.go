package indexer

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// IndexFunc computes the index values of an object, for example its
// namespace or the node it runs on. It may return no value (the object is
// not in that index) or several; the Indexer keeps a copy of them, so
// what becomes of the returned slice afterwards does not change the index.
// It must be a pure function of the object (values that depend on anything
// else go stale in the index) and safe to call from several goroutines at
// once. It is called without any lock of
// the Indexer held, so reading the Indexer from it does not deadlock; it
// is called by the writes themselves, so waiting in it for a write to the
// Indexer may wait for itself. If it fails or panics, the write it was
// called for fails with its error and changes nothing. One given to
// [Indexer.AddIndexers] is called for writes from the moment AddIndexers
// is called.
type IndexFunc[T metav1.Object] func(obj T) ([]string, error)

// Indexers maps index names to index functions. A nil Indexers means no
// index.
type Indexers[T metav1.Object] map[string]IndexFunc[T]

// NamespaceIndex is the conventional name of the index made by
// [NamespaceIndexFunc].
const NamespaceIndex = "namespace"

// NamespaceIndexFunc indexes an object by its namespace; a cluster-scoped
// object has the value "".
func NamespaceIndexFunc[T metav1.Object](obj T) ([]string, error) {
	if objkey.IsNil(obj) {
		return nil, errors.New("namespace index: object is nil")
	}
	return []string{obj.GetNamespace()}, nil
}

// MetaNamespaceKey returns the key the indexer stores obj under by default:
// "namespace/name", or "name" for a cluster-scoped object; "" for nil.
func MetaNamespaceKey(obj metav1.Object) string {
	if objkey.IsNil(obj) {
		return ""
	}
	return objkey.Key(obj)
}

// SplitMetaNamespaceKey splits a key made by MetaNamespaceKey into its
// namespace and name: "namespace/name" gives both, "name" a cluster-scoped
// object's name and namespace "". A key with an empty name, an empty
// namespace before its "/" ("/name", which client-go reads as "name"), or
// more than one "/" is an error: no object is stored under it.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	namespace, name, found := strings.Cut(key, "/")
	if !found {
		namespace, name = "", key
	}
	if name == "" || strings.Contains(name, "/") || (found && namespace == "") {
		return "", "", fmt.Errorf("%q is not a namespace/name or name key", key)
	}
	return namespace, name, nil
}
