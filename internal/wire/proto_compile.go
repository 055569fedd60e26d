package wire

import (
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/modern-go/reflect2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A protobuf message type is compiled into a protoMessage once, from its
// Go struct: which field number goes to which Go field (the protobuf
// tags), and how that field is decoded (its Go type). A message type is
// compiled when its Unmarshal was generated (it lives in a
// generated.pb.go), so its fields and tags say everything that Unmarshal
// does; and metav1.FieldsV1, whose Unmarshal only copies Raw. The few
// hand-written ones (metav1.Time and MicroTime, resource.Quantity) and any
// message with a field this file does not know how to decode are handed
// to their own Unmarshal, as the generated code of their parent does.

// protoMessage decodes one generated message type.
type protoMessage struct {
	typ    reflect.Type
	fields []*protoStructField // indexed by field number; nil: skipped
}

// protoKind is how one field is decoded.
type protoKind uint8

const (
	kString     protoKind = iota // string: interned or copied
	kStringPtr                   // *string
	kStrings                     // []string
	kBytes                       // []byte: copied, or interned (FieldsV1)
	kBool                        // varint → bool
	kInt32                       // varint → int32
	kInt64                       // varint → int64
	kInt                         // varint → int: its low 32 bits where int has 32, as generated code keeps
	kUint32                      // varint → uint32
	kUint64                      // varint → uint64
	kBoolPtr                     // varint → *bool
	kInt32Ptr                    // varint → *int32
	kInt64Ptr                    // varint → *int64
	kVarints                     // []int32, []int64, ...: packed or not
	kMessage                     // a struct field
	kQuantity                    // resource.Quantity: parsed once per distinct value
	kMessagePtr                  // *struct
	kMessages                    // []struct
	kStringMap                   // map[string]string
	kMap                         // any other map, through reflect2
)

// protoStructField is one field of a message type.
type protoStructField struct {
	name     string // Type.Field, for errors
	num      uint64
	wireType uint64 // what its Go type encodes to (packed varints also take wireBytes)
	kind     protoKind
	offset   uintptr
	repeated bool // a slice or map, sized by the run of its entries

	// WithSharedParts (proto_share.go): runs is a map, repeated field or
	// message pointer, decoded a run of entries at a time, shared (the
	// run's value remembered) unless it differs in every object;
	// selfMerging a named map or slice with its own Unmarshal.
	runs, share, selfMerging bool
	isSlice                  bool   // held as a slice header (else one word)
	id                       uint32 // a shared field's number, for partTable.stats

	// strings and bytes
	unique bool                   // a string that differs in every object: never interned
	intern bool                   // kBytes: interned (FieldsV1.Raw)
	last   atomic.Pointer[string] // kString: the string decoded last (see str)

	// messages: compiled (msg), or decoded by their own Unmarshal (extern);
	// elemR2 is the struct a kMessagePtr allocates
	msg    *protoMessage
	extern func(p unsafe.Pointer, data []byte) error
	elemR2 reflect2.Type

	// typ is the field's type; r2 (and slice or mapType) is it for
	// reflect2, which allocates and copies slices, maps and structs
	// without reflect's type lookups. elemSize and elemKind describe a
	// slice's elements.
	typ      reflect.Type
	r2       reflect2.Type
	slice    *reflect2.UnsafeSliceType
	mapType  *reflect2.UnsafeMapType
	elemSize uintptr
	elemKind reflect.Kind

	// maps: the entry's key and value, and a zero value of the value's
	// type, to reset the scratch value an entry is decoded into
	mapKey, mapVal *protoStructField
	zero           unsafe.Pointer
}

var protoMessages sync.Map // reflect.Type → *protoMessage (nil: not compiled)

// protoMessageFor returns the compiled decoder of struct type typ, nil if
// typ is not a generated message.
func protoMessageFor(typ reflect.Type) *protoMessage {
	if m, ok := protoMessages.Load(typ); ok {
		return m.(*protoMessage)
	}
	m := compileProtoMessage(typ, map[reflect.Type]*protoMessage{})
	protoMessages.Store(typ, m)
	return m
}

var protoUnmarshalerType = reflect.TypeFor[protoUnmarshaler]()

// generatedUnmarshal reports whether *typ has an Unmarshal method written
// by the protobuf generator.
func generatedUnmarshal(typ reflect.Type) bool {
	m, ok := reflect.PointerTo(typ).MethodByName("Unmarshal")
	if !ok || !reflect.PointerTo(typ).Implements(protoUnmarshalerType) {
		return false
	}
	fn := runtime.FuncForPC(m.Func.Pointer())
	if fn == nil {
		return false
	}
	file, _ := fn.FileLine(fn.Entry())
	return path.Base(file) == "generated.pb.go"
}

// rawFieldsV1 reports whether typ is metav1.FieldsV1 holding its bytes in
// Raw, as it does unless apimachinery is built with the fieldsv1string
// tag. Its Unmarshal is hand-written but does what a generated one would
// (Raw, field 1, copied), so it is compiled, and the bytes interned.
func rawFieldsV1(typ reflect.Type) bool {
	f, ok := typ.FieldByName("Raw")
	return typ == fieldsV1Type && typ.NumField() == 1 && ok && f.Type == reflect.TypeFor[[]byte]() && f.Tag.Get("protobuf") == "bytes,1,opt,name=Raw"
}

// compileProtoMessage compiles typ, or returns nil when typ is not a
// generated message or has a field this file cannot decode. Types being
// compiled (recursive messages) are found in inProgress.
func compileProtoMessage(typ reflect.Type, inProgress map[reflect.Type]*protoMessage) *protoMessage {
	if m, ok := protoMessages.Load(typ); ok {
		return m.(*protoMessage)
	}
	if m, ok := inProgress[typ]; ok {
		return m
	}
	if typ.Kind() != reflect.Struct || !(generatedUnmarshal(typ) || rawFieldsV1(typ)) {
		return nil
	}
	m := &protoMessage{typ: typ}
	inProgress[typ] = m
	defer delete(inProgress, typ)
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok || tag == "-" {
			continue // the generated code does not know it either
		}
		f, ok := compileProtoField(typ, sf, tag, inProgress)
		if !ok {
			return nil
		}
		for uint64(len(m.fields)) <= f.num {
			m.fields = append(m.fields, nil)
		}
		if m.fields[f.num] != nil {
			return nil // two fields, one number: not a generated type
		}
		m.fields[f.num] = f
	}
	return m
}

// protoFieldNumber reads the field number from a tag such as
// "bytes,1,opt,name=metadata". Only the number is trusted: the wire type
// and label of the tags in k8s.io/api's types.go are stale in places
// (PodSpec.Priority, an *int32, says "bytes"; repeated fields say "opt";
// maps have no protobuf_key and protobuf_val), while the number is what
// go-to-protobuf keeps stable. How a field is encoded follows from its Go
// type, as it did for the generator.
func protoFieldNumber(tag string) (uint64, bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, false
	}
	n, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil || n == 0 || n > 1<<16 {
		return 0, false
	}
	return n, true
}

// compileProtoField compiles field sf of struct type parent, whose
// protobuf tag is tag.
func compileProtoField(parent reflect.Type, sf reflect.StructField, tag string, inProgress map[reflect.Type]*protoMessage) (*protoStructField, bool) {
	num, ok := protoFieldNumber(tag)
	if !ok {
		return nil, false
	}
	f := &protoStructField{name: parent.Name() + "." + sf.Name, num: num, offset: sf.Offset}
	if !compileProtoType(f, parent, sf.Name, sf.Type, inProgress) {
		return nil, false
	}
	switch f.kind {
	case kStrings, kVarints, kMessages, kStringMap, kMap:
		f.repeated = true
	}
	f.isSlice = f.typ.Kind() == reflect.Slice
	switch f.kind {
	case kStrings, kMessages, kStringMap, kMap, kMessagePtr:
		f.runs, f.share = true, sharedField(f)
		if f.share {
			f.id = sharedFieldIDs.Add(1)
		}
	case kMessage:
		f.selfMerging = f.extern != nil && (f.mapType != nil || f.slice != nil)
	}
	return f, true
}

var varintKinds = map[reflect.Kind]protoKind{
	reflect.Bool: kBool, reflect.Int32: kInt32, reflect.Int64: kInt64, reflect.Int: kInt,
	reflect.Uint32: kUint32, reflect.Uint64: kUint64,
}

// pointerVarintKinds are the optional scalars: *bool, *int32, *int64.
var pointerVarintKinds = map[reflect.Kind]protoKind{reflect.Bool: kBoolPtr, reflect.Int32: kInt32Ptr, reflect.Int64: kInt64Ptr}

// compileProtoType sets how f, a field of type t, is decoded.
func compileProtoType(f *protoStructField, parent reflect.Type, name string, t reflect.Type, inProgress map[reflect.Type]*protoMessage) bool {
	f.typ, f.r2, f.wireType = t, reflect2.Type2(t), wireBytes
	f.slice, _ = f.r2.(*reflect2.UnsafeSliceType)
	f.mapType, _ = f.r2.(*reflect2.UnsafeMapType)
	if k, ok := varintKinds[t.Kind()]; ok {
		f.kind, f.wireType = k, wireVarint
		return true
	}
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) && reflect.PointerTo(t).Implements(protoUnmarshalerType) {
		// A named slice or map with an Unmarshal of its own (a message
		// wrapping a repeated field, such as metav1.Verbs). The generated
		// code makes it non-nil first, so an empty message is an empty
		// slice.
		unmarshal, mt, st := externUnmarshal(t), f.mapType, f.slice
		f.kind, f.extern = kMessage, func(p unsafe.Pointer, data []byte) error {
			if *(*unsafe.Pointer)(p) == nil { // a map, or a slice's data
				if mt != nil {
					*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(mt.UnsafeMakeMap(0))
				} else {
					*(*sliceHeader)(p) = *(*sliceHeader)(st.UnsafeMakeSlice(0, 0))
				}
			}
			return unmarshal(p, data)
		}
		return true
	}
	switch t.Kind() {
	case reflect.String:
		f.kind, f.unique = kString, uniqueField(parent.Name(), name)
		return true
	case reflect.Struct:
		f.kind = kMessage
		if t == quantityType && quantityDecOffset != noQuantityCache {
			f.kind = kQuantity
		}
		return compileMessageRef(f, t, inProgress)
	case reflect.Pointer:
		e := t.Elem()
		switch k := e.Kind(); {
		case k == reflect.String:
			f.kind = kStringPtr
			return true
		case pointerVarintKinds[k] != 0:
			f.kind, f.wireType = pointerVarintKinds[k], wireVarint
			return true
		case k == reflect.Struct:
			f.kind, f.elemR2 = kMessagePtr, reflect2.Type2(e)
			return compileMessageRef(f, e, inProgress)
		}
	case reflect.Slice:
		e := t.Elem()
		f.elemSize = e.Size()
		if _, ok := varintKinds[e.Kind()]; ok {
			f.kind, f.wireType, f.elemKind = kVarints, wireVarint, e.Kind()
			return true
		}
		switch e.Kind() {
		case reflect.Uint8:
			f.kind, f.intern = kBytes, parent == fieldsV1Type
			return true
		case reflect.String:
			f.kind = kStrings
			return true
		case reflect.Struct:
			f.kind = kMessages
			return compileMessageRef(f, e, inProgress)
		}
	case reflect.Map:
		return compileMapField(f, t, inProgress)
	}
	return false
}

// compileMessageRef makes f decode messages of struct type t: compiled when
// t is generated, else through t's own Unmarshal.
func compileMessageRef(f *protoStructField, t reflect.Type, inProgress map[reflect.Type]*protoMessage) bool {
	if m := compileProtoMessage(t, inProgress); m != nil {
		f.msg = m
		return true
	}
	if !reflect.PointerTo(t).Implements(protoUnmarshalerType) {
		return false
	}
	f.extern = externUnmarshal(t)
	return true
}

// externUnmarshal calls (*t).Unmarshal on the value at p.
func externUnmarshal(t reflect.Type) func(p unsafe.Pointer, data []byte) error {
	switch t {
	case timeType:
		return func(p unsafe.Pointer, data []byte) error { return (*metav1.Time)(p).Unmarshal(data) }
	case microTimeType:
		return func(p unsafe.Pointer, data []byte) error { return (*metav1.MicroTime)(p).Unmarshal(data) }
	case quantityType:
		return func(p unsafe.Pointer, data []byte) error { return (*resource.Quantity)(p).Unmarshal(data) }
	}
	r2 := reflect2.Type2(t)
	if t.Kind() == reflect.Slice {
		// A named slice's Unmarshal appends, leaving spare capacity,
		// which the objects sharing the value would share too.
		return func(p unsafe.Pointer, data []byte) error {
			h := (*sliceHeader)(p)
			first := h.len == 0 // met again, it is the object's own (protoDecoder.owned)
			err := r2.PackEFace(p).(protoUnmarshaler).Unmarshal(data)
			if first {
				h.cap = h.len
			}
			return err
		}
	}
	return func(p unsafe.Pointer, data []byte) error {
		return r2.PackEFace(p).(protoUnmarshaler).Unmarshal(data) // a *t
	}
}

// compileMapField compiles a map, whose entries are messages of a key
// (field 1, a string) and a value (field 2).
func compileMapField(f *protoStructField, t reflect.Type, inProgress map[reflect.Type]*protoMessage) bool {
	entry := reflect.StructOf([]reflect.StructField{{Name: "Key", Type: t.Key()}, {Name: "Value", Type: t.Elem()}})
	key := &protoStructField{name: f.name + ".key", num: 1}
	if !compileProtoType(key, entry, "Key", t.Key(), inProgress) || key.kind != kString {
		return false
	}
	val := &protoStructField{name: f.name + ".value", num: 2}
	if !compileProtoType(val, entry, "Value", t.Elem(), inProgress) {
		return false
	}
	switch val.kind {
	case kString, kBytes, kBool, kInt32, kInt64, kInt, kUint32, kUint64, kMessage, kQuantity:
	default:
		return false
	}
	f.mapKey, f.mapVal = key, val
	f.kind, f.zero = kMap, val.r2.UnsafeNew()
	if t.ConvertibleTo(stringMapType) {
		f.kind = kStringMap
	}
	return true
}
