package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the partTable remembers is shared by every object that gets it, so
// nothing in a remembered part may be written: no slice in it has room to
// append into, and no value in it is one a decode will merge into without
// a copy (in that decode's ownedSet). This walks every remembered part
// after each decode of random objects of every type, alone and merged
// with others (a protobuf message after another merges into it: every
// field is met again), each decode also matching the generated Unmarshal.
func TestRememberedPartsHoldNothingWritable(t *testing.T) {
	for _, typ := range append(protoTypes(t), reflect.TypeFor[metav1.APIResourceList]()) {
		objs := randomObjects(t, typ, kindSeed(typ, 11), 6)
		m, parts := protoMessageFor(typ), newPartTable()
		for i, a := range objs {
			b := objs[(i+1)%len(objs)]
			for _, data := range [][]byte{a, bytes.Join([][]byte{a, b}, nil), bytes.Join([][]byte{a, b, a}, nil), bytes.Join([][]byte{b, a, a}, nil)} {
				want := reflect.New(typ)
				if want.Interface().(protoUnmarshaler).Unmarshal(bytes.Clone(data)) != nil {
					continue
				}
				got := reflect.New(typ)
				d := protoDecoder{parts: parts, strings: newInternTable()}
				if err := m.decode(got.UnsafePointer(), bytes.Clone(data), &d); err != nil {
					t.Errorf("%v: %v", typ, err)
					continue
				}
				if !reflect.DeepEqual(want.Interface(), got.Interface()) {
					t.Errorf("%v: differs from the generated Unmarshal", typ)
				}
				checkRememberedParts(t, parts, d.owned, typ.String())
			}
		}
		if t.Failed() {
			return
		}
	}
}

// checkRememberedParts fails t if a part parts remembers holds a slice
// with room or a value in owned, or decodes to more than its bytes allow
// (smallEnough).
func checkRememberedParts(t *testing.T, parts *partTable, owned ownedSet, what string) {
	t.Helper()
	for i := range parts.slots {
		e := parts.slots[i].Load()
		if e == nil {
			continue
		}
		if size := walkedSize(partValue(e)); !smallEnough(size, len(e.raw)) {
			t.Errorf("%s: remembered part %s takes %d bytes, decoded from %d", what, e.typ, size, len(e.raw))
		}
		walkValues(partValue(e), e.typ.String(), map[unsafe.Pointer]bool{}, func(path string, v reflect.Value) {
			if v.Kind() == reflect.Slice && v.Cap() > v.Len() {
				t.Errorf("%s: remembered part %s holds a slice with room (len %d, cap %d)", what, path, v.Len(), v.Cap())
			}
			if _, ok := owned[v.UnsafePointer()]; ok {
				t.Errorf("%s: remembered part %s holds a value the decode merges into", what, path)
			}
		})
	}
}

// partValue is a remembered part as a value of its type.
func partValue(e *sharedPart) reflect.Value {
	if e.typ.Kind() == reflect.Slice {
		h := e.val
		return reflect.NewAt(e.typ, unsafe.Pointer(&h)).Elem()
	}
	p := e.val.data
	return reflect.NewAt(e.typ, unsafe.Pointer(&p)).Elem()
}

// walkValues calls visit with every non-nil slice, map and pointer
// reachable from v through exported fields, each map and pointer once.
func walkValues(v reflect.Value, path string, seen map[unsafe.Pointer]bool, visit func(path string, v reflect.Value)) {
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		visit(path, v)
		for i := range v.Len() {
			walkValues(v.Index(i), fmt.Sprintf("%s[%d]", path, i), seen, visit)
		}
	case reflect.Map:
		if v.IsNil() || seen[v.UnsafePointer()] {
			return
		}
		seen[v.UnsafePointer()] = true
		visit(path, v)
		for it := v.MapRange(); it.Next(); {
			walkValues(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()), seen, visit)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.UnsafePointer()] {
			return
		}
		seen[v.UnsafePointer()] = true
		visit(path, v)
		walkValues(v.Elem(), path, seen, visit)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				walkValues(v.Field(i), path+"."+f.Name, seen, visit)
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			walkValues(v.Elem(), path, seen, visit)
		}
	}
}
