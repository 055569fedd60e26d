package listwatchtest

import (
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	holdsTime     sync.Map // reflect.Type → bool
)

// asStored cuts obj's times to what kube-apiserver keeps of them: a
// metav1.Time to the second (its protobuf and JSON forms hold no more), a
// metav1.MicroTime to the microsecond. An Update that differs from what is
// stored only below that then writes nothing, as the server's.
func asStored(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		cutTimes(v.Elem())
	}
}

func cutTimes(v reflect.Value) {
	if !mayHoldTime(v.Type()) {
		return
	}
	switch v.Type() {
	case timeType:
		if t := v.Addr().Interface().(*metav1.Time); !t.IsZero() {
			*t = t.Rfc3339Copy()
		}
		return
	case microTimeType:
		if t := v.Addr().Interface().(*metav1.MicroTime); !t.IsZero() {
			t.Time = t.Time.Truncate(time.Microsecond)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			cutTimes(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				cutTimes(f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			cutTimes(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			cutTimes(e)
			v.SetMapIndex(k, e)
		}
	}
}

// mayHoldTime reports whether a value of t may hold a time cutTimes cuts.
func mayHoldTime(t reflect.Type) bool {
	if r, ok := holdsTime.Load(t); ok {
		return r.(bool)
	}
	r := typeHoldsTime(t, map[reflect.Type]bool{})
	holdsTime.Store(t, r)
	return r
}

// typeHoldsTime reports whether a value of t may hold a metav1.Time or
// MicroTime that cutTimes can reach (not through an interface).
func typeHoldsTime(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == timeType || t == microTimeType {
		return true
	}
	if seen[t] {
		return false // a cycle: its other paths decide
	}
	seen[t] = true
	r := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		r = typeHoldsTime(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && typeHoldsTime(f.Type, seen) {
				r = true
				break
			}
		}
	}
	return r
}
