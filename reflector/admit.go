package reflector

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/share"
)

// What the Reflector lets into the Store, from a list or a watch: an
// object that can be cached, transformed (WithTransform) and its parts
// shared (WithSharing).

// admit checks that an object from the server can be cached, applies the
// transform, and then (WithSharing) shares its parts with the objects
// before it. An object without a name, or with a "/" in its name or
// namespace, is rejected (ErrRejected, and no rv), and so is one without a
// resourceVersion unless unversioned (the item of a list that has none
// either: see list); otherwise rv is its resourceVersion, which the
// transform keeps, also when the transform fails (ErrSkipped).
func (r *Reflector[T]) admit(obj T, unversioned bool) (_ T, rv string, _ error) {
	var zero T
	if objkey.IsNil(obj) {
		return zero, "", fmt.Errorf("%w: no object", ErrRejected)
	}
	if obj.GetName() == "" {
		return zero, "", fmt.Errorf("%w: object has no metadata.name", ErrRejected)
	}
	if err := objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()); err != nil {
		return zero, "", fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if rv = obj.GetResourceVersion(); rv == "" && !unversioned {
		return zero, "", fmt.Errorf("%w: %s has %w", ErrRejected, objkey.Key(obj), errNoResourceVersion)
	}
	if r.opt.transform != nil {
		id := identityOf(obj) // before f, which may change obj
		out, err := r.transform(obj)
		if err != nil {
			return zero, rv, fmt.Errorf("transforming %s: %w: %w", id, ErrSkipped, err)
		}
		if err := id.keptBy(out); err != nil {
			return zero, rv, fmt.Errorf("transforming %s: %w: %w", id, ErrSkipped, err)
		}
		obj = out
	}
	if r.parts != nil {
		share.Share(r.parts, obj)
	}
	return obj, rv, nil
}

// transform calls the transform; a panic in it is an error about this
// object, which is skipped, as a handler's panic is recovered.
func (r *Reflector[T]) transform(obj T) (out T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the transform panicked: %v", p)
		}
	}()
	return r.opt.transform(obj)
}

// identity is what the pipeline goes by, which a transform must keep: the
// object's key (namespace and name) and its resourceVersion, which tells
// the informer whether a relisted object changed.
type identity struct{ namespace, name, rv string }

func identityOf(obj metav1.Object) identity {
	return identity{obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion()}
}

func (id identity) String() string {
	if id.namespace == "" {
		return id.name
	}
	return id.namespace + "/" + id.name
}

// keptBy checks that out, a transform's result, is an object with identity
// id.
func (id identity) keptBy(out metav1.Object) error {
	switch {
	case objkey.IsNil(out):
		return errors.New("the transform returned no object")
	case out.GetNamespace() != id.namespace || out.GetName() != id.name:
		return fmt.Errorf("the transform changed the object's key to %s", objkey.Key(out))
	case out.GetResourceVersion() != id.rv:
		return fmt.Errorf("the transform changed the object's resourceVersion to %q", out.GetResourceVersion())
	}
	return nil
}
