package objkey

import (
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsNil reports whether obj cannot answer its metadata methods: it is nil,
// a nil pointer (map, slice, ...), or a metav1.Object whose getters panic,
// as those of a struct{ *corev1.Pod } without its Pod do.
//
// Only a type that embeds a pointer or an interface, itself or through
// embedded structs, can be such an object; for it the getters are called
// to find out, under a recover, so that Go's rules for which embedded
// field a method comes from decide, and a getter that panics for another
// reason counts too: the pipeline could not key such an object. Whether a
// type embeds one is found once: for the types of k8s.io/api,
// *unstructured.Unstructured and *metav1.PartialObjectMetadata, which do
// not, IsNil costs some 10 ns and calls no getter.
func IsNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		if v.IsNil() {
			return true
		}
	}
	m, ok := obj.(metav1.Object)
	return ok && embedsReference(v.Type()) && gettersPanic(m)
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

// typeEmbeds caches embedsReference for one type.
type typeEmbeds struct {
	t      reflect.Type
	embeds bool
}

var (
	embedsCache sync.Map                   // reflect.Type → *typeEmbeds
	lastEmbeds  atomic.Pointer[typeEmbeds] // the last looked up: most callers see one type
)

// embedsReference reports whether t, or the struct t points to, embeds a
// pointer or an interface, itself or through embedded structs: whether a
// method it promotes could be called through a nil one.
func embedsReference(t reflect.Type) bool {
	if e := lastEmbeds.Load(); e != nil && e.t == t {
		return e.embeds
	}
	if e, ok := embedsCache.Load(t); ok {
		lastEmbeds.Store(e.(*typeEmbeds))
		return e.(*typeEmbeds).embeds
	}
	s := t
	if s.Kind() == reflect.Pointer {
		s = s.Elem()
	}
	var walk func(s reflect.Type) bool
	walk = func(s reflect.Type) bool {
		for i := range s.NumField() {
			f := s.Field(i)
			switch {
			case !f.Anonymous:
			case f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Interface:
				return true
			case f.Type.Kind() == reflect.Struct && walk(f.Type):
				return true
			}
		}
		return false
	}
	e := &typeEmbeds{t: t, embeds: s.Kind() == reflect.Struct && walk(s)}
	actual, _ := embedsCache.LoadOrStore(t, e)
	lastEmbeds.Store(actual.(*typeEmbeds))
	return e.embeds
}
