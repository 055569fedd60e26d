package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/internal/objkey"
)

// Lister is a typed, read-only view of an informer's cache. It is safe for
// concurrent use; the objects it returns are shared with the cache and must
// not be modified.
type Lister[T metav1.Object] struct {
	indexer *indexer.Indexer[T]
}

// List returns the cached objects whose labels match selector (nil matches
// everything).
func (l *Lister[T]) List(selector labels.Selector) []T {
	all := l.indexer.List()
	if selector == nil || selector.Empty() {
		return all
	}
	return matching(all, selector)
}

// Get returns the cached object namespace/name (namespace "" for a
// cluster-scoped object). A namespace or name holding a "/" names no
// object, and finds none.
func (l *Lister[T]) Get(namespace, name string) (T, bool) {
	if objkey.CheckSlashes(namespace, name) != nil {
		// Else name "b/z" of no namespace would find z of namespace b.
		var zero T
		return zero, false
	}
	return l.indexer.GetByKey(objkey.Of(namespace, name))
}

// ByNamespace returns the cached objects of one namespace whose labels match
// selector; namespace "" (metav1.NamespaceAll) means every namespace, as in
// client-go. It reads the index named indexer.NamespaceIndex if the cache
// has one, trusting it to be indexer.NamespaceIndexFunc's (as client-go's
// listers do), and otherwise goes through every cached object.
func (l *Lister[T]) ByNamespace(namespace string, selector labels.Selector) []T {
	if namespace == metav1.NamespaceAll {
		return l.List(selector)
	}
	objs, err := l.indexer.ByIndex(indexer.NamespaceIndex, namespace)
	if err != nil {
		objs = nil
		for _, obj := range l.indexer.List() {
			if obj.GetNamespace() == namespace {
				objs = append(objs, obj)
			}
		}
	}
	if selector == nil || selector.Empty() {
		return objs
	}
	return matching(objs, selector)
}

// matching returns the objects whose labels match selector, in a slice of
// their own. Filtering objs in place would return a slice whose backing
// array still points at every object left out: a caller holding fifty
// matches of a cache of 50,000 would keep all 50,000 alive after they left
// the cache (147 MiB in a review's test).
func matching[T metav1.Object](objs []T, selector labels.Selector) []T {
	var out []T
	for _, obj := range objs {
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out
}
