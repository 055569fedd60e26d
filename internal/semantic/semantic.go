// Package semantic compares API objects as kube-apiserver and client-go do,
// with equality.Semantic.DeepEqual (a Quantity by its value, a nil map or
// slice the same as an empty one), for any Go type: DeepEqual panics on a
// struct with unexported fields, and a type of one's own embedding a Pod
// may have some. The informer's mutation detector uses it, and so does
// every relist, on each object listed with the resourceVersion it has in
// the cache; so do listwatchtest's Source and internal/generation, which
// decide whether an Update changes anything.
package semantic

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
)

// Equal is equality.Semantic.DeepEqual, except that a value with
// unexported fields is compared field by field (see FieldEqual) instead
// of panicking.
//
// Values equal to the last bit (two decodes of one object, as a relist
// compares) are found so by reflect.DeepEqual first, which costs a third
// of equality.Semantic.DeepEqual and a tenth of its allocations
// (BenchmarkRelistUnchanged in informer); what it finds equal, the
// semantic comparison would too.
func Equal(a, b any) (equal bool) {
	if reflect.DeepEqual(a, b) {
		return true
	}
	defer func() {
		if recover() != nil {
			equal = fieldwise(addressable(reflect.ValueOf(a)), addressable(reflect.ValueOf(b)))
		}
	}()
	return equality.Semantic.DeepEqual(a, b)
}

// FieldEqual compares two values of the same field of addressable structs
// (reached through a pointer): an exported field as Equal does, an
// unexported one with reflect.DeepEqual.
func FieldEqual(a, b reflect.Value, field reflect.StructField) bool {
	if field.IsExported() {
		return equalAt(a, b)
	}
	ua := reflect.NewAt(a.Type(), unsafe.Pointer(a.UnsafeAddr())).Elem().Interface()
	ub := reflect.NewAt(b.Type(), unsafe.Pointer(b.UnsafeAddr())).Elem().Interface()
	return reflect.DeepEqual(ua, ub)
}

// fieldwise goes down pointers and structs field by field (FieldEqual), so
// that a Quantity's string cache, or a nil map made empty, is still not a
// difference where DeepEqual alone would panic.
func fieldwise(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Pointer() == b.Pointer() || fieldwise(a.Elem(), b.Elem())
	case reflect.Struct:
		if !a.CanAddr() || !b.CanAddr() {
			break
		}
		for i := range a.NumField() {
			if !FieldEqual(a.Field(i), b.Field(i), a.Type().Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// equalAt is Equal for two addressable values, compared field by field
// where they lie if DeepEqual panics: Equal would get copies, whose
// structs are not addressable, and fieldwise would compare those with
// reflect.DeepEqual, a Quantity inside by its form, not its value.
func equalAt(a, b reflect.Value) (equal bool) {
	defer func() {
		if recover() != nil {
			equal = fieldwise(a, b)
		}
	}()
	return equality.Semantic.DeepEqual(a.Interface(), b.Interface())
}

// addressable returns v, or an addressable copy of a struct that is not.
func addressable(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Struct || v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}
