package apisim

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/strategy"
)

// writeKind says which of kube-apiserver's update rules a write follows.
type writeKind int

const (
	// writeWhole stores the object as given, status included: the direct
	// Go API (Objects.Update), where a test stands for every writer of the
	// cluster at once.
	writeWhole writeKind = iota
	// writePut is a PUT to the object: its status, if it has a status
	// subresource, is the stored one.
	writePut
	// writePutStatus is a PUT to its status subresource: the status is
	// the request's, the rest mostly the stored object's (see
	// statusStrategy.prepare).
	writePutStatus
	// writePutFinalize is a PUT to a Namespace's finalize subresource:
	// the request's spec (its finalizers) and metadata, the stored status
	// (namespaceFinalizeStrategy).
	writePutFinalize
	// writePutApproval is a PUT to a CertificateSigningRequest's approval
	// subresource: the request's conditions and metadata, the rest the
	// stored object's (csrApprovalStrategy).
	writePutApproval
)

// statusStrategy is the part of a kind's update strategy in kube-apiserver
// (its PrepareForUpdate, and that of its status strategy) that decides what
// a PUT takes from the stored object.
type statusStrategy struct {
	// has: the kind has a status subresource (.../{name}/status).
	has bool
	// custom: a custom resource, whose /status takes everything but the
	// status from the stored object (apiextensions-apiserver's
	// statusStrategy). Built-in kinds keep the spec and keepMeta.
	custom bool
	// keepMeta copies the metadata a built-in kind's /status takes from
	// the stored object; nil when it takes none.
	keepMeta func(obj, old metav1.Object)
	// typed is the Go type of a kind the scheme knows (a pointer), for
	// the rules of package strategy, which read typed objects; nil for
	// others.
	typed reflect.Type
}

// newStatusStrategy returns the strategy of res. A kind the scheme knows
// has a status subresource when its Go type has a Status field; another,
// a custom resource or a built-in kind the scheme does not know, when
// res.StatusSubresource says so.
func newStatusStrategy(res Resource, scheme *runtime.Scheme) statusStrategy {
	gk := res.GroupVersionKind().GroupKind()
	if !kinds.BuiltIn(res.Group) {
		return statusStrategy{has: res.StatusSubresource, custom: true}
	}
	obj, err := scheme.New(res.GroupVersionKind())
	if err != nil {
		return statusStrategy{has: res.StatusSubresource, keepMeta: strategy.StatusMeta(gk)}
	}
	f, ok := reflect.TypeOf(obj).Elem().FieldByName("Status")
	return statusStrategy{has: ok && f.Type.Kind() == reflect.Struct, keepMeta: strategy.StatusMeta(gk), typed: reflect.TypeOf(obj)}
}

// prepare applies the strategy to obj, the request's object (a private
// canonical copy), given old, the stored one, and returns the object to
// store:
//
//   - a PUT to the object keeps old's status (every built-in strategy's
//     PrepareForUpdate, and a custom resource's with a status
//     subresource), and what strategy.KeepOnUpdate keeps;
//   - a PUT to /status of a built-in kind keeps old's spec, what
//     strategy.KeepOnStatusUpdate keeps of its status, and the metadata
//     keepMeta names;
//   - a PUT to /status of a custom resource keeps all of old but its status;
//   - a PUT to a Namespace's /finalize keeps old's status alone;
//   - a PUT to a CertificateSigningRequest's /approval keeps old's spec
//     and all of its status but the conditions (strategy.KeepOnApproval).
//
// The caller then applies what every update shares (uid, creationTimestamp,
// generation, resourceVersion, the deletion marks).
func (st statusStrategy) prepare(kind writeKind, obj, old runtime.Object) runtime.Object {
	switch {
	case kind == writePut:
		if st.has {
			copyField(obj, old, "status")
		}
		st.applyTyped(obj, old, "spec", strategy.KeepOnUpdate)
	case kind == writePutFinalize:
		copyField(obj, old, "status")
	case kind == writePutApproval:
		copyField(obj, old, "spec")
		st.applyTyped(obj, old, "status", strategy.KeepOnApproval)
	case kind == writePutStatus && st.custom:
		out := old.DeepCopyObject()
		copyField(out, obj, "status")
		return out
	case kind == writePutStatus:
		copyField(obj, old, "spec")
		st.applyTyped(obj, old, "status", strategy.KeepOnStatusUpdate)
		if st.keepMeta != nil {
			st.keepMeta(obj.(metav1.Object), old.DeepCopyObject().(metav1.Object))
		}
	}
	return obj
}

// applyTyped applies rule, a rule of package strategy that changes only
// the top-level field ("spec", "status"), to obj given old: directly to
// typed objects; to the typed form of unstructured ones of a kind the
// scheme knows, writing that field back only if the rule changed it (in
// the typed form's shape: the fields it always has, and none it lacks).
func (st statusStrategy) applyTyped(obj, old runtime.Object, field string, rule func(obj, old runtime.Object)) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		rule(obj, old)
		return
	}
	if st.typed == nil {
		return
	}
	typedObj, typedOld := reflect.New(st.typed.Elem()).Interface().(runtime.Object), reflect.New(st.typed.Elem()).Interface().(runtime.Object)
	conv := runtime.DefaultUnstructuredConverter
	if conv.FromUnstructured(u.Object, typedObj) != nil || conv.FromUnstructured(old.(*unstructured.Unstructured).Object, typedOld) != nil {
		return // not of the kind's shape: the server would not have stored it
	}
	before := typedObj.DeepCopyObject()
	rule(typedObj, typedOld)
	if equality.Semantic.DeepEqual(before, typedObj) {
		return
	}
	m, err := conv.ToUnstructured(typedObj)
	if err != nil {
		return
	}
	if v, ok := m[field]; ok {
		u.Object[field] = v
	} else {
		delete(u.Object, field)
	}
}

// copyField sets the top-level field name ("spec", "status") of dst to a
// copy of src's: dst and src are of the same canonical form, typed or
// unstructured. An unstructured dst loses the field when src has none.
func copyField(dst, src runtime.Object, name string) {
	if u, ok := dst.(*unstructured.Unstructured); ok {
		if v, ok := src.(*unstructured.Unstructured).Object[name]; ok {
			u.Object[name] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(u.Object, name)
		}
		return
	}
	goName := strings.ToUpper(name[:1]) + name[1:]
	to := reflect.ValueOf(dst).Elem().FieldByName(goName)
	from := reflect.ValueOf(src.DeepCopyObject()).Elem().FieldByName(goName)
	if to.IsValid() && from.IsValid() && to.CanSet() {
		to.Set(from)
	}
}
