// Package generation holds kube-apiserver's rule for metadata.generation,
// shared by internal/apisim and listwatchtest: which writes move it on.
package generation

import (
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/semantic"
)

// Tracked reports whether objects of Go type typ have a generation, by the
// rule listwatchtest documents: a pointer to a struct with a Spec field
// (a Deployment, a Pod), or an *unstructured.Unstructured (a custom
// resource). A ConfigMap or a Secret has none.
func Tracked(typ reflect.Type) bool {
	if typ == reflect.TypeFor[*unstructured.Unstructured]() {
		return true
	}
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return false
	}
	if _, ok := noSpec[typ]; ok {
		return true
	}
	_, ok := typ.Elem().FieldByName("Spec")
	return ok
}

// noSpec are the k8s.io/api kinds with no Spec field to which
// kube-apiserver's strategies give a generation all the same (1 on
// create): an EndpointSlice (pkg/registry/discovery/endpointslice,
// moved on by any change but to metadata, or to its labels), a
// PodTemplate (by its template), webhook configurations (by their
// webhooks) and a PriorityClass (never moved on).
var noSpec = map[reflect.Type]struct{}{
	reflect.TypeFor[*discoveryv1.EndpointSlice]():                              {},
	reflect.TypeFor[*corev1.PodTemplate]():                                     {},
	reflect.TypeFor[*schedulingv1.PriorityClass]():                             {},
	reflect.TypeFor[*admissionregistrationv1.ValidatingWebhookConfiguration](): {},
	reflect.TypeFor[*admissionregistrationv1.MutatingWebhookConfiguration]():   {},
}

// SpecChanged reports whether anything but metadata and status differs
// between old and cur, which is when kube-apiserver adds 1 to
// metadata.generation; of a Deployment, a change to its annotations counts
// too, as its strategy has it (they are copied to its ReplicaSets). Fields
// are compared with semantic.Equal, so that any Go type compares without
// a panic. Objects of different Go types, or of a type that is neither a
// pointer to a struct nor an *unstructured.Unstructured, differ.
//
// The kinds with rules of their own are told by the Go type of old (a
// k8s.io/api type) or its apiVersion and kind (an Unstructured), else by
// gk, the kind of the resource the objects are of (a type of one's own
// that embeds a Deployment).
func SpecChanged(gk schema.GroupKind, old, cur runtime.Object) bool {
	k := kindOf(old)
	if k.Empty() {
		k = gk
	}
	switch k {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		if annotationsChanged(old, cur) {
			return true
		}
	case schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:
		return false // its strategy's PrepareForUpdate does nothing
	case schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:
		if labelsChanged(old, cur) {
			return true
		}
	}
	ou, ok1 := old.(*unstructured.Unstructured)
	cu, ok2 := cur.(*unstructured.Unstructured)
	if ok1 && ok2 {
		skip := map[string]bool{"metadata": true, "status": true, "apiVersion": true, "kind": true}
		for k := range merged(ou.Object, cu.Object) {
			if !skip[k] && !equality.Semantic.DeepEqual(ou.Object[k], cu.Object[k]) {
				return true
			}
		}
		return false
	}
	ov, cv := reflect.ValueOf(old), reflect.ValueOf(cur)
	if ov.Type() != cv.Type() || ov.Kind() != reflect.Pointer || ov.Elem().Kind() != reflect.Struct {
		return true
	}
	return specDiffers(ov.Elem(), cv.Elem())
}

// CustomStatusChanged reports whether the status of two custom resources
// differs: apiextensions-apiserver's strategy moves the generation on for
// that too when the CustomResourceDefinition enables no status
// subresource (PrepareForUpdate leaves out only metadata; with /status,
// an update keeps the stored status instead). Other objects: false.
func CustomStatusChanged(old, cur runtime.Object) bool {
	ou, ok1 := old.(*unstructured.Unstructured)
	cu, ok2 := cur.(*unstructured.Unstructured)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(ou.Object["status"], cu.Object["status"])
}

// specDiffers reports whether any field of the structs a and b other than
// TypeMeta, ObjectMeta and Status differs. An embedded struct or pointer
// to one (a type of one's own embedding a Pod) is gone into, so that its
// metadata and status are left out too; unexported fields count
// (semantic.FieldEqual).
func specDiffers(a, b reflect.Value) bool {
	for i := range a.NumField() {
		f := a.Type().Field(i)
		switch {
		case f.Name == "TypeMeta" || f.Name == "ObjectMeta" || f.Name == "Status":
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			if specDiffers(a.Field(i), b.Field(i)) {
				return true
			}
		case f.Anonymous && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			pa, pb := a.Field(i), b.Field(i)
			if pa.IsNil() || pb.IsNil() {
				if pa.IsNil() != pb.IsNil() {
					return true
				}
			} else if specDiffers(pa.Elem(), pb.Elem()) {
				return true
			}
		case !semantic.FieldEqual(a.Field(i), b.Field(i), f):
			return true
		}
	}
	return false
}

// kindOf returns the group and kind of the k8s.io/api kinds with rules of
// their own, typed or not; the zero GroupKind for others.
func kindOf(obj runtime.Object) schema.GroupKind {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return schema.GroupKind{Group: "apps", Kind: "Deployment"}
	case *schedulingv1.PriorityClass:
		return schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}
	case *discoveryv1.EndpointSlice:
		return schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}
	case *unstructured.Unstructured:
		return o.GroupVersionKind().GroupKind()
	}
	return schema.GroupKind{}
}

func annotationsChanged(old, cur runtime.Object) bool {
	oa, ok1 := old.(metav1.Object)
	ca, ok2 := cur.(metav1.Object)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(oa.GetAnnotations(), ca.GetAnnotations())
}

func labelsChanged(old, cur runtime.Object) bool {
	oa, ok1 := old.(metav1.Object)
	ca, ok2 := cur.(metav1.Object)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(oa.GetLabels(), ca.GetLabels())
}

func merged(a, b map[string]any) map[string]struct{} {
	out := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		out[k] = struct{}{}
	}
	for k := range b {
		out[k] = struct{}{}
	}
	return out
}
