// Package objkey computes the cache key of a Kubernetes object, shared by
// the deltafifo, indexer and processor packages so that all three agree.
package objkey

import (
	"errors"
	"fmt"
	"strings"

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

// CheckSlashes returns an error if namespace or name holds a "/", which the
// apiserver allows in neither: the key would be another object's ("a/b"
// in namespace "" is "b" in namespace "a").
func CheckSlashes(namespace, name string) error {
	switch {
	case strings.Contains(name, "/"):
		return fmt.Errorf("the name %q holds a \"/\", which no object's name may", name)
	case strings.Contains(namespace, "/"):
		return fmt.Errorf("the namespace %q holds a \"/\", which no namespace may", namespace)
	}
	return nil
}

// CallKeyFunc runs a key function of deltafifo's or indexer's, a panic in
// it being its error (ErrInvalidObject): the write fails, as for an
// invalid object, rather than take down the caller's goroutine (the
// reflector's, in a pipeline built by hand). obj must not be nil.
func CallKeyFunc[T metav1.Object](f func(T) string, obj T) (key string, err error) {
	defer func() {
		if r := recover(); r != nil {
			key, err = "", fmt.Errorf("%w: key function panicked on %s: %v", ErrInvalidObject, Key(obj), r)
		}
	}()
	return f(obj), nil
}
