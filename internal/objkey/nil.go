package objkey

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsNil reports whether obj cannot answer its metadata methods: it is nil,
// a nil pointer (map, slice, ...), or a metav1.Object whose getters panic,
// as those of a struct{ *corev1.Pod } without its Pod do. The getters are
// called to find out, so that Go's rules for which embedded field a method
// comes from (the outer type's own, the shallowest embedding) decide, and
// a getter that panics for another reason counts too: the pipeline could
// not key such an object. It costs some 20 ns.
func IsNil(obj any) bool {
	if obj == nil {
		return true
	}
	switch v := reflect.ValueOf(obj); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		if v.IsNil() {
			return true
		}
	}
	m, ok := obj.(metav1.Object)
	return ok && gettersPanic(m)
}

// gettersPanic reports whether any of the getters the pipeline calls on
// every object panics.
func gettersPanic(m metav1.Object) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	m.GetNamespace()
	m.GetName()
	m.GetResourceVersion()
	m.GetUID()
	m.GetLabels()
	m.GetAnnotations()
	m.GetDeletionTimestamp()
	return false
}
