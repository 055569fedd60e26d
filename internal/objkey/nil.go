package objkey

import (
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsNil reports whether obj cannot answer its metadata methods, which
// would panic: it is nil, a nil pointer (map, slice, ...), or a struct, or
// a pointer to one, that embeds its metadata through a nil pointer, itself
// or through embedded structs (a struct{ *corev1.Pod } without its Pod).
// The embedded pointers of a type are found once; for a type with none, as
// every type of k8s.io/api, IsNil then costs about 10 ns.
func IsNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	case reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	for _, path := range metaPointers(v.Type()) {
		f, err := v.FieldByIndexErr(path)
		if err == nil && f.IsNil() {
			return true
		}
		// err: a nil embedded pointer on the way, to a struct that does
		// not give the metadata (else the path would end there).
	}
	return false
}

// typePaths are the metaPointers of a type.
type typePaths struct {
	t     reflect.Type
	paths [][]int
}

var (
	paths sync.Map                  // reflect.Type → *typePaths
	last  atomic.Pointer[typePaths] // the last looked up: most callers see one type
)

// metaPointers returns the index paths, through embedded fields of the
// struct type t, of its embedded pointers that give a metav1.Object.
func metaPointers(t reflect.Type) [][]int {
	if p := last.Load(); p != nil && p.t == t {
		return p.paths
	}
	if p, ok := paths.Load(t); ok {
		last.Store(p.(*typePaths))
		return p.(*typePaths).paths
	}
	var out [][]int
	var walk func(t reflect.Type, at []int, depth int)
	walk = func(t reflect.Type, at []int, depth int) {
		if depth > 8 { // an embedding this deep is a cycle through pointers
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.Anonymous {
				continue
			}
			path := append(at[:len(at):len(at)], i)
			switch {
			case f.Type.Kind() == reflect.Pointer && f.Type.Implements(reflect.TypeFor[metav1.Object]()):
				out = append(out, path)
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem(), path, depth+1)
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, path, depth+1)
			}
		}
	}
	walk(t, nil, 0)
	p, _ := paths.LoadOrStore(t, &typePaths{t, out})
	last.Store(p.(*typePaths))
	return out
}
