package wire

import (
	"reflect"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Protobuf objects are decoded by their generated Unmarshal, which copies
// every string out of the frame: nothing can be shared while decoding. So
// after decoding, a codec built WithProtobufInterning walks the object once
// and swaps each string for the table's copy, and each managedFields
// FieldsV1 for the table's copy of those bytes. The rules are the JSON
// decoder's (strings up to maxInternLen, uniqueField strings left alone),
// plus a floor (minWalkIntern): a hash per string is a larger share of a
// protobuf decode than of a JSON one. The walk is compiled once per Go type
// into a tree of small functions over the object's memory, so it costs no
// reflection per object.
//
// Map keys are left alone (a key cannot be replaced in place); map values
// are interned when the map's underlying type is map[string]string
// (labels, annotations, node selectors).

// minWalkIntern is the shortest string the walk interns. Shorter ones
// ("True", "TCP", "Running") come from Go's tiny allocator, several to a
// 16-byte block: sharing them saves a few bytes for the cost of a hash.
const minWalkIntern = 16

// internWalk interns the strings of the object p points to, of type t.
type internWalk func(p unsafe.Pointer, t *internTable)

var internWalks sync.Map // reflect.Type → internWalk (nil: nothing to intern)

// internWalkFor returns the walk of type typ, nil if values of typ hold no
// string to intern.
func internWalkFor(typ reflect.Type) internWalk {
	if w, ok := internWalks.Load(typ); ok {
		return w.(internWalk)
	}
	w := compileInternWalk(typ, map[reflect.Type]*internWalk{})
	internWalks.Store(typ, w)
	return w
}

// compileInternWalk builds the walk of typ. inProgress breaks cycles in
// recursive types: a type met again while it is being compiled is walked
// through the pointer its compilation will fill in.
func compileInternWalk(typ reflect.Type, inProgress map[reflect.Type]*internWalk) internWalk {
	if w, ok := internWalks.Load(typ); ok {
		return w.(internWalk)
	}
	if slot, ok := inProgress[typ]; ok {
		return func(p unsafe.Pointer, t *internTable) {
			if *slot != nil {
				(*slot)(p, t)
			}
		}
	}
	slot := new(internWalk)
	inProgress[typ] = slot
	defer delete(inProgress, typ)

	var w internWalk
	switch {
	case typ == fieldsV1Type:
		w = func(p unsafe.Pointer, t *internTable) { internFieldsV1((*metav1.FieldsV1)(p), t) }
	case typ.Kind() == reflect.String:
		w = func(p unsafe.Pointer, t *internTable) {
			if s := (*string)(p); len(*s) >= minWalkIntern {
				*s = t.intern(*s)
			}
		}
	case typ.Kind() == reflect.Struct:
		w = compileStructWalk(typ, inProgress)
	case typ.Kind() == reflect.Pointer:
		if elem := compileInternWalk(typ.Elem(), inProgress); elem != nil {
			w = func(p unsafe.Pointer, t *internTable) {
				if q := *(*unsafe.Pointer)(p); q != nil {
					elem(q, t)
				}
			}
		}
	case typ.Kind() == reflect.Slice:
		if elem, size := compileInternWalk(typ.Elem(), inProgress), typ.Elem().Size(); elem != nil {
			w = func(p unsafe.Pointer, t *internTable) {
				s := (*sliceHeader)(p)
				for i := range s.len {
					elem(unsafe.Add(s.data, uintptr(i)*size), t)
				}
			}
		}
	case typ.ConvertibleTo(stringMapType): // for a map: the same underlying type
		w = func(p unsafe.Pointer, t *internTable) {
			m := *(*map[string]string)(p)
			for k, v := range m {
				if len(v) < minWalkIntern {
					continue
				}
				if s := t.intern(v); unsafe.StringData(s) != unsafe.StringData(v) {
					m[k] = s
				}
			}
		}
	}
	*slot = w
	return w
}

// compileStructWalk walks the exported fields that hold strings, except
// the fields that differ in every object (uniqueField). String fields are
// interned in a loop over their offsets; only fields that lead to more
// strings (structs, pointers, slices, maps) get a walk of their own.
func compileStructWalk(typ reflect.Type, inProgress map[reflect.Type]*internWalk) internWalk {
	type fieldWalk struct {
		offset uintptr
		walk   internWalk
	}
	var (
		strs   []uintptr // offsets of string fields
		fields []fieldWalk
	)
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch {
		case !f.IsExported() && !f.Anonymous:
		case f.Type.Kind() == reflect.String:
			if !uniqueField(typ.Name(), f.Name) {
				strs = append(strs, f.Offset)
			}
		default:
			if w := compileInternWalk(f.Type, inProgress); w != nil {
				fields = append(fields, fieldWalk{f.Offset, w})
			}
		}
	}
	if len(strs) == 0 && len(fields) == 0 {
		return nil
	}
	return func(p unsafe.Pointer, t *internTable) {
		for _, off := range strs {
			if s := (*string)(unsafe.Add(p, off)); len(*s) >= minWalkIntern {
				*s = t.intern(*s)
			}
		}
		for _, f := range fields {
			f.walk(unsafe.Add(p, f.offset), t)
		}
	}
}

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}
