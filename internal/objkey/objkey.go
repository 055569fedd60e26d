// Package objkey computes the cache key of a Kubernetes object, shared by
// the deltafifo, indexer and processor packages so that all three agree.
package objkey

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrInvalidObject is deltafifo's and indexer's ErrInvalidObject: one
// error, so that errors.Is with either package's matches both.
var ErrInvalidObject = errors.New("invalid object")

// Key returns "namespace/name" for a namespaced object and "name" for a
// cluster-scoped one.
func Key(obj metav1.Object) string { return Of(obj.GetNamespace(), obj.GetName()) }

// Of returns the key of the object namespace/name: "namespace/name", or
// "name" for namespace "" (a cluster-scoped object).
func Of(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
