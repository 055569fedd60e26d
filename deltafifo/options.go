package deltafifo

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// KnownObjects is the consumer's view of the objects it already holds,
// usually the informer's indexer. The FIFO reads it to find the deletions a
// fresh list implies ([FIFO.Replace]), to resync ([FIFO.Resync]) and to drop
// deletes of objects nobody knows ([FIFO.Delete]).
//
// The FIFO calls these methods with its lock held: they must not call back
// into the FIFO. They must be safe for concurrent use with the consumer's
// writes, since the consumer writes to them while it processes a popped key.
// A panic in them fails the call that read them (Replace, Resync, Delete)
// with an error, and that call changes nothing.
type KnownObjects[T metav1.Object] interface {
	// GetByKey returns the object stored under key, if any (a nil object
	// counts as none).
	GetByKey(key string) (T, bool)
	// ListKeys returns the keys of all stored objects, as the FIFO's key
	// function makes them: a relist takes a known key it did not list for
	// an object deleted.
	ListKeys() []string
}

// Option configures a [FIFO] made by [New].
type Option[T metav1.Object] func(*config[T])

type config[T metav1.Object] struct {
	keyFunc   func(T) string
	known     KnownObjects[T]
	transform func(T) (T, error)
}

// WithKeyFunc sets the function that computes an object's key. The default
// is "namespace/name", or "name" for a cluster-scoped object. A nil f keeps
// the default. The key function must not return an empty key for a valid
// object: the FIFO rejects such objects, and those it panics on
// (ErrInvalidObject).
func WithKeyFunc[T metav1.Object](f func(T) string) Option[T] {
	return func(c *config[T]) {
		if f != nil {
			c.keyFunc = f
		}
	}
}

// WithKnownObjects tells the FIFO which objects the consumer already holds,
// usually the informer's indexer. Without it, Replace detects deletions only
// among keys queued or being processed, Resync does nothing, and Delete
// always queues. A nil one, typed or not, is none.
func WithKnownObjects[T metav1.Object](known KnownObjects[T]) Option[T] {
	return func(c *config[T]) {
		c.known = known
		if isNilValue(known) {
			c.known = nil
		}
	}
}

// WithTransform sets a function applied once to every object handed to Add,
// Update, Delete and Replace, before it is stored anywhere; a typical use is
// dropping managedFields to save memory. If it fails (or panics), that call
// fails and the queue is unchanged. It is not applied by Resync, whose objects come from
// the known objects and were transformed on their way in. The transform must
// not change the object's key (an object whose key it changes is refused
// with ErrInvalidObject), and may be called concurrently from several
// goroutines if the FIFO is.
func WithTransform[T metav1.Object](f func(T) (T, error)) Option[T] {
	return func(c *config[T]) { c.transform = f }
}

func defaultKey[T metav1.Object](obj T) string { return objkey.Key(obj) }

// isNil reports whether obj would panic on its first method call: see
// objkey.IsNil.
func isNil[T metav1.Object](obj T) bool { return objkey.IsNil(obj) }

// isNilValue is isNil for any value, such as an interface's.
func isNilValue(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
