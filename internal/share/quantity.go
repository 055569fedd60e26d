package share

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Some reads write: resource.Quantity.String() fills a cache inside the
// Quantity the first time it is called. Two objects that share a part
// holding a Quantity in place (behind a pointer, in a slice or array, in a
// struct reached so: an emptyDir's sizeLimit, a resourceFieldRef's
// divisor) share that Quantity, so two goroutines calling String() each on
// its own object's would race on one memory. Such parts are never shared
// (the parts inside them that hold none still are). A Quantity that is a
// map's value, directly or inside a struct, is copied by every read
// (m[k]), so maps of them, such as a container's resource lists, are
// shared all the same.

var quantityType = reflect.TypeFor[resource.Quantity]()

// MayHoldQuantity reports whether a value of type t can hold a
// resource.Quantity in place: most types cannot, and need no QuantityIn.
// Callers keep the answer with what they compile for t.
func MayHoldQuantity(t reflect.Type) bool { return mayHoldQuantity(t, false) }

// QuantityIn reports whether the value of type t at p holds a
// resource.Quantity in place (see above), so that it must not be shared.
// It looks only where t can hold one.
func QuantityIn(t reflect.Type, p unsafe.Pointer) bool {
	return MayHoldQuantity(t) && quantityIn(reflect.NewAt(t, p).Elem(), false)
}

func quantityIn(v reflect.Value, copied bool) bool {
	t := v.Type()
	if t == quantityType {
		return !copied
	}
	if !mayHoldQuantity(t, copied) {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && quantityIn(v.Elem(), false)
	case reflect.Slice:
		for i := range v.Len() {
			if quantityIn(v.Index(i), false) {
				return true
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			if quantityIn(v.Index(i), copied) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if quantityIn(v.Field(i), copied) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if quantityIn(it.Key(), true) || quantityIn(it.Value(), true) {
				return true
			}
		}
	}
	return false
}

type quantityReach struct {
	t      reflect.Type
	copied bool
}

var mayHold sync.Map // quantityReach → bool

// mayHoldQuantity reports whether a value of type t can hold a Quantity in
// place; copied says the value itself is a copy made by the read (a map's
// value, or inside one).
func mayHoldQuantity(t reflect.Type, copied bool) bool {
	k := quantityReach{t, copied}
	if v, ok := mayHold.Load(k); ok {
		return v.(bool)
	}
	held := reaches(t, copied, map[quantityReach]bool{})
	mayHold.Store(k, held)
	return held
}

// reaches is mayHoldQuantity computed; types met again on the way
// (recursive ones) add nothing.
func reaches(t reflect.Type, copied bool, seen map[quantityReach]bool) bool {
	if t == quantityType {
		return !copied
	}
	k := quantityReach{t, copied}
	if seen[k] {
		return false
	}
	seen[k] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return reaches(t.Elem(), false, seen)
	case reflect.Array:
		return reaches(t.Elem(), copied, seen)
	case reflect.Map:
		return reaches(t.Key(), true, seen) || reaches(t.Elem(), true, seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if reaches(t.Field(i).Type, copied, seen) {
				return true
			}
		}
	}
	return false
}
