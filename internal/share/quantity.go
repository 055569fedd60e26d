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
// (m[k]), and String() fills the copy's cache, so maps of them, such as a
// container's resource lists, are shared all the same. (Writing to such a
// copy, q.Add(x), can still write into memory the copies share, a big
// decimal's: that is modifying the cache, which no one may do.) Interface
// fields are not looked into: the decoders never put a Quantity in one,
// and the walk compares interfaces by identity.

var quantityType = reflect.TypeFor[resource.Quantity]()

// QuantityPlan says where a value of one type can hold a Quantity in
// place. Most types cannot: their plan is nil, whose In is false.
type QuantityPlan struct {
	kind     reflect.Kind  // Pointer, Slice, Array, Struct, Map; Invalid: the Quantity itself
	elem     *QuantityPlan // Pointer, Slice, Array
	elemSize uintptr       // Slice, Array
	n        int           // Array: its length
	fields   []quantityField
	mapType  reflect.Type  // Map
	key, val *QuantityPlan // Map: its keys and values, copies
}

type quantityField struct {
	offset uintptr
	plan   *QuantityPlan
}

var quantityPlans sync.Map // reflect.Type → *QuantityPlan

// QuantityPlanOf returns the plan of type t; callers keep it with what
// they compile for t.
func QuantityPlanOf(t reflect.Type) *QuantityPlan {
	if p, ok := quantityPlans.Load(t); ok {
		return p.(*QuantityPlan)
	}
	p := compileQuantityPlan(t, false, map[quantityReach]*QuantityPlan{})
	quantityPlans.Store(t, p)
	return p
}

// In reports whether the value at p, of the plan's type, holds a Quantity
// in place, so that it must not be shared.
func (qp *QuantityPlan) In(p unsafe.Pointer) bool {
	if qp == nil {
		return false
	}
	switch qp.kind {
	case reflect.Invalid:
		return true
	case reflect.Pointer:
		q := *(*unsafe.Pointer)(p)
		return q != nil && qp.elem.In(q)
	case reflect.Slice:
		h := (*node)(p)
		for i := range h.len {
			if qp.elem.In(unsafe.Add(h.ptr, uintptr(i)*qp.elemSize)) {
				return true
			}
		}
	case reflect.Array:
		for i := range qp.n {
			if qp.elem.In(unsafe.Add(p, uintptr(i)*qp.elemSize)) {
				return true
			}
		}
	case reflect.Struct:
		for _, f := range qp.fields {
			if f.plan.In(unsafe.Add(p, f.offset)) {
				return true
			}
		}
	case reflect.Map: // rare: a map whose values hold pointers to Quantities
		for it := reflect.NewAt(qp.mapType, p).Elem().MapRange(); it.Next(); {
			if qp.key.inCopy(it.Key()) || qp.val.inCopy(it.Value()) {
				return true
			}
		}
	}
	return false
}

// inCopy is In for a map's key or value, which reflect hands over as a
// copy.
func (qp *QuantityPlan) inCopy(v reflect.Value) bool {
	if qp == nil {
		return false
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return qp.In(c.Addr().UnsafePointer())
}

type quantityReach struct {
	t      reflect.Type
	copied bool
}

// compileQuantityPlan builds the plan of t; copied says a value of t is a
// copy made by the read (a map's key or value, or inside one). A type met
// again on the way (a recursive one) gets the plan being built.
func compileQuantityPlan(t reflect.Type, copied bool, plans map[quantityReach]*QuantityPlan) *QuantityPlan {
	k := quantityReach{t, copied}
	if p, ok := plans[k]; ok {
		return p
	}
	if !reaches(t, copied, map[quantityReach]bool{}) {
		plans[k] = nil
		return nil
	}
	p := &QuantityPlan{kind: t.Kind()}
	plans[k] = p
	switch {
	case t == quantityType:
		p.kind = reflect.Invalid
	case t.Kind() == reflect.Pointer:
		p.elem = compileQuantityPlan(t.Elem(), false, plans)
	case t.Kind() == reflect.Slice:
		p.elem, p.elemSize = compileQuantityPlan(t.Elem(), false, plans), t.Elem().Size()
	case t.Kind() == reflect.Array:
		p.elem, p.elemSize, p.n = compileQuantityPlan(t.Elem(), copied, plans), t.Elem().Size(), t.Len()
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if fp := compileQuantityPlan(f.Type, copied, plans); fp != nil {
				p.fields = append(p.fields, quantityField{f.Offset, fp})
			}
		}
	case t.Kind() == reflect.Map:
		p.mapType = t
		p.key = compileQuantityPlan(t.Key(), true, plans)
		p.val = compileQuantityPlan(t.Elem(), true, plans)
	}
	return p
}

// reaches reports whether a value of type t can hold a Quantity in place;
// types met again on the way (recursive ones) add nothing.
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
