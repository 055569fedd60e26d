package wire

import (
	"fmt"
	"hash/maphash"

	"github.com/modern-go/reflect2"
	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
	"path"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The generated Unmarshal of every k8s.io/api type copies each string out
// of the frame, grows each repeated field by appending one element at a
// time and each map by inserting into an empty one: a 2.4 KB pod costs
// about 170 allocations, and slices keep the spare capacity of their last
// doubling for as long as the object is cached.
//
// protoMessage decodes the same bytes into the same Go structs, guided by
// the protobuf struct tags the generator left on every field:
//
//   - strings of up to maxInternLen bytes come from the codec's intern
//     table (a hash of the frame's bytes; a copy only the first time), so
//     the namespace, labels, images and condition types of a thousand pods
//     are one string each, as for JSON;
//   - before a message is decoded, its fields are counted in one pass over
//     the tags, so each repeated field and map is allocated once, at its
//     final size;
//   - managedFields' FieldsV1 bytes are interned like strings.
//
// A message type is compiled when its Unmarshal was generated (it lives
// in a generated.pb.go), so its fields and tags say everything that
// Unmarshal does; and metav1.FieldsV1, whose Unmarshal only copies Raw. The few hand-written ones (metav1.Time and MicroTime,
// resource.Quantity) and any message with a field this file does not know
// how to decode are handed to their own Unmarshal, as the generated code
// of their parent does. The result equals the generated Unmarshal's for
// every input that Unmarshal accepts (TestProtoDecodeMatchesGenerated,
// FuzzProtoDecodeMatchesGenerated); a few malformed inputs it accepts are
// refused here (groups, a map entry with a field of the wrong wire type).

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
	kInt64                       // varint → int64 (also int)
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
	unique   bool // a string that differs in every object: never interned
	intern   bool // kBytes: intern (FieldsV1.Raw)

	// varints: the element's size in bytes (kVarints) and its kind
	elemKind reflect.Kind
	elemSize uintptr

	msg    *protoMessage // kMessage, kMessagePtr, kMessages; or the map's value
	extern func(p unsafe.Pointer, data []byte) error
	// typ is the field's type; r2 is it for reflect2, which allocates and
	// copies slices, maps and structs without reflect's lookups.
	typ reflect.Type
	r2  reflect2.Type
	// zero is a zero value of a map's value type, to reset the scratch
	// value an entry is decoded into.
	zero unsafe.Pointer

	// maps: the entry's key and value
	mapKey, mapVal *protoStructField

	repeated bool                      // a slice or map, sized by the run of its entries
	last     atomic.Pointer[string]    // kString: the string decoded last (see str)
	elemR2   reflect2.Type             // kMessagePtr: the struct to allocate
	slice    *reflect2.UnsafeSliceType // slices
	mapType  *reflect2.UnsafeMapType   // maps
}

// protoDecoder is the state of one object's decoding.
type protoDecoder struct {
	strings *internTable // nil: copy every string
	depth   int

	// a scratch value of type mapValType for the entries of maps (kMap)
	mapValType reflect2.Type
	mapVal     unsafe.Pointer
	mapKey     string
}

// maxProtoDepth bounds the nesting of messages, so that a hostile frame
// cannot exhaust the stack (no API object comes near it).
const maxProtoDepth = 1000

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

func compileProtoField(parent reflect.Type, sf reflect.StructField, tag string, inProgress map[reflect.Type]*protoMessage) (*protoStructField, bool) {
	num, ok := protoFieldNumber(tag)
	if !ok {
		return nil, false
	}
	f := &protoStructField{name: parent.Name() + "." + sf.Name, num: num, offset: sf.Offset}
	return f, compileProtoType(f, parent, sf.Name, sf.Type, inProgress)
}

var varintKinds = map[reflect.Kind]protoKind{
	reflect.Bool: kBool, reflect.Int32: kInt32, reflect.Int64: kInt64, reflect.Int: kInt64,
	reflect.Uint32: kUint32, reflect.Uint64: kUint64,
}

// compileProtoType sets how f, a field of type t, is decoded.
func compileProtoType(f *protoStructField, parent reflect.Type, name string, t reflect.Type, inProgress map[reflect.Type]*protoMessage) bool {
	f.typ, f.r2, f.wireType = t, reflect2.Type2(t), wireBytes
	f.slice, _ = f.r2.(*reflect2.UnsafeSliceType)
	f.mapType, _ = f.r2.(*reflect2.UnsafeMapType)
	defer func() {
		switch f.kind {
		case kStrings, kVarints, kMessages, kStringMap, kMap:
			f.repeated = true
		}
	}()
	if k, ok := varintKinds[t.Kind()]; ok {
		f.kind, f.wireType = k, wireVarint
		return true
	}
	if (t.Kind() == reflect.Slice || t.Kind() == reflect.Map) && reflect.PointerTo(t).Implements(protoUnmarshalerType) {
		// A named slice or map with an Unmarshal of its own (a message
		// wrapping a repeated field, such as metav1.Verbs). The generated
		// code makes it non-nil first, so an empty message is an empty
		// slice.
		unmarshal, r2 := externUnmarshal(t), f.r2
		f.kind, f.extern = kMessage, func(p unsafe.Pointer, data []byte) error {
			if *(*unsafe.Pointer)(p) == nil { // a map, or a slice's data
				if t.Kind() == reflect.Map {
					*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(r2.(reflect2.MapType).UnsafeMakeMap(0))
				} else {
					*(*sliceHeader)(p) = *(*sliceHeader)(r2.(reflect2.SliceType).UnsafeMakeSlice(0, 0))
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
		case k == reflect.Bool || k == reflect.Int32 || k == reflect.Int64:
			f.kind, f.wireType = map[reflect.Kind]protoKind{reflect.Bool: kBoolPtr, reflect.Int32: kInt32Ptr, reflect.Int64: kInt64Ptr}[k], wireVarint
			return true
		case k == reflect.Struct:
			f.kind, f.elemR2 = kMessagePtr, reflect2.Type2(e)
			return compileMessageRef(f, e, inProgress)
		}
	case reflect.Slice:
		e := t.Elem()
		f.elemSize = e.Size()
		if _, ok := varintKinds[e.Kind()]; ok && e.Kind() != reflect.Uint8 {
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
	case kString, kBytes, kBool, kInt32, kInt64, kUint32, kUint64, kMessage, kQuantity:
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

// decode decodes the message in b into the struct at p, merging into what
// is there as the generated code does.
func (m *protoMessage) decode(p unsafe.Pointer, b []byte, d *protoDecoder) error {
	if d.depth++; d.depth > maxProtoDepth {
		return fmt.Errorf("%w: messages nested more than %d deep", errProtobuf, maxProtoDepth)
	}
	err := m.decodeFields(p, b, d)
	d.depth--
	return err
}

func (m *protoMessage) decodeFields(p unsafe.Pointer, b []byte, d *protoDecoder) error {
	for len(b) > 0 {
		start := b
		tag, n := consumeVarint(b)
		if n == 0 {
			return fmt.Errorf("%w: %s: truncated field tag", errProtobuf, m.typ.Name())
		}
		b = b[n:]
		num, wt := tag>>3, tag&7
		if int32(num) <= 0 || wt == 4 { // as the generated code
			return fmt.Errorf("%w: %s: illegal tag %d (wire type %d)", errProtobuf, m.typ.Name(), int32(num), wt)
		}
		var f *protoStructField
		if num < uint64(len(m.fields)) {
			f = m.fields[num]
		}
		if f == nil {
			var err error
			if b, err = skipProtoField(b, num, wt); err != nil {
				return fmt.Errorf("%s: %w", m.typ.Name(), err)
			}
			continue
		}
		fp := unsafe.Add(p, f.offset)
		if f.repeated && f.full(fp) {
			f.reserve(fp, countRun(start, tag))
		}
		if wt == wireVarint && f.wireType == wireVarint {
			v, n := consumeVarint(b)
			if n == 0 {
				return fmt.Errorf("%w: %s: truncated varint", errProtobuf, f.name)
			}
			b = b[n:]
			f.setVarint(fp, v)
			continue
		}
		if wt != wireBytes || (f.wireType != wireBytes && f.kind != kVarints) {
			return fmt.Errorf("%w: %s has wire type %d, want %d", errProtobuf, f.name, wt, f.wireType)
		}
		l, n := consumeVarint(b)
		if n == 0 {
			return fmt.Errorf("%w: %s: truncated length", errProtobuf, f.name)
		}
		b = b[n:]
		if l > uint64(len(b)) {
			return fmt.Errorf("%w: %s: length %d exceeds the %d bytes left", errProtobuf, f.name, l, len(b))
		}
		if err := f.decodeBytes(fp, b[:l], d); err != nil {
			return err
		}
		b = b[l:]
	}
	return nil
}

// countRun counts the fields at the start of b that have this tag: the
// elements of a repeated field or the entries of a map, which the
// generated marshalers write one after the other.
func countRun(b []byte, tag uint64) int {
	n := 0
	for len(b) > 0 {
		t, k := consumeVarint(b)
		if k == 0 || t != tag {
			break
		}
		rest, err := skipProtoField(b[k:], t>>3, t&7)
		if err != nil {
			break
		}
		b, n = rest, n+1
	}
	return max(n, 1)
}

// full reports whether the repeated field at p has no room for one more
// element: a slice at its capacity or a nil map.
func (f *protoStructField) full(p unsafe.Pointer) bool {
	if f.kind == kStringMap || f.kind == kMap {
		return *(*unsafe.Pointer)(p) == nil
	}
	h := (*sliceHeader)(p)
	return h.len == h.cap
}

// reserve makes room for n more elements in the slice or map at p.
func (f *protoStructField) reserve(p unsafe.Pointer, n int) {
	switch f.kind {
	case kStringMap:
		if m := (*map[string]string)(p); *m == nil {
			*m = make(map[string]string, n)
		}
	case kMap:
		if m := (*unsafe.Pointer)(p); *m == nil {
			*m = *(*unsafe.Pointer)(f.mapType.UnsafeMakeMap(n))
		}
	default:
		f.growSlice(p, n)
	}
}

// growSlice makes room for n more elements in the slice at p. The new
// elements are zero: they are only ever taken by nextElem.
func (f *protoStructField) growSlice(p unsafe.Pointer, n int) {
	h := (*sliceHeader)(p)
	if h.cap-h.len >= n {
		return
	}
	grown := *(*sliceHeader)(f.slice.UnsafeMakeSlice(h.len, h.len+n))
	for i := range h.len { // a field seen again: rare
		f.slice.UnsafeSetIndex(unsafe.Pointer(&grown), i, f.slice.UnsafeGetIndex(p, i))
	}
	*h = grown
}

// nextElem appends a zero element to the slice at p and returns it.
func (f *protoStructField) nextElem(p unsafe.Pointer) unsafe.Pointer {
	h := (*sliceHeader)(p)
	if h.len == h.cap {
		f.growSlice(p, max(h.len, 4))
	}
	e := unsafe.Add(h.data, uintptr(h.len)*f.elemSize)
	h.len++
	return e
}

func (f *protoStructField) setVarint(p unsafe.Pointer, v uint64) {
	switch f.kind {
	case kBool:
		*(*bool)(p) = v != 0
	case kInt32:
		*(*int32)(p) = int32(v)
	case kInt64:
		*(*int64)(p) = int64(v)
	case kUint32:
		*(*uint32)(p) = uint32(v)
	case kUint64:
		*(*uint64)(p) = v
	case kBoolPtr:
		b := v != 0
		*(**bool)(p) = &b
	case kInt32Ptr:
		i := int32(v)
		*(**int32)(p) = &i
	case kInt64Ptr:
		i := int64(v)
		*(**int64)(p) = &i
	case kVarints:
		storeVarint(f.nextElem(p), f.elemKind, v)
	}
}

func storeVarint(p unsafe.Pointer, k reflect.Kind, v uint64) {
	switch k {
	case reflect.Bool:
		*(*bool)(p) = v != 0
	case reflect.Int32:
		*(*int32)(p) = int32(v)
	case reflect.Int64, reflect.Int:
		*(*int64)(p) = int64(v)
	case reflect.Uint32:
		*(*uint32)(p) = uint32(v)
	case reflect.Uint64:
		*(*uint64)(p) = v
	}
}

// str returns b as a string: the intern table's copy when it may be
// shared, else a copy.
func (d *protoDecoder) str(b []byte, unique bool) string {
	if len(b) == 0 {
		return ""
	}
	if unique || d.strings == nil {
		return string(b)
	}
	return d.strings.internFrom(b)
}

// str is d.str for a string field, trying first the string the field held
// in the object decoded last: most fields repeat from object to object
// (namespace, kind, image, node, ...), and one comparison with a string
// still in the cache costs less than a lookup in the table.
func (f *protoStructField) str(b []byte, d *protoDecoder) string {
	if f.unique || d.strings == nil || len(b) == 0 || len(b) > maxInternLen {
		return d.str(b, f.unique)
	}
	if last := f.last.Load(); last != nil && *last == string(b) {
		return *last
	}
	s := d.strings.internPointer(b)
	f.last.Store(s)
	return *s
}

func (f *protoStructField) decodeBytes(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	switch f.kind {
	case kString:
		*(*string)(p) = f.str(data, d)
	case kStringPtr:
		s := d.str(data, f.unique)
		*(**string)(p) = &s
	case kStrings:
		*(*string)(f.nextElem(p)) = d.str(data, false)
	case kBytes:
		if f.intern && d.strings != nil {
			*(*[]byte)(p) = d.strings.internBytesFrom(data)
		} else {
			*(*[]byte)(p) = append(make([]byte, 0, len(data)), data...)
		}
	case kVarints: // packed
		f.growSlice(p, countVarints(data))
		for len(data) > 0 {
			v, n := consumeVarint(data)
			if n == 0 {
				return fmt.Errorf("%w: %s: truncated packed varint", errProtobuf, f.name)
			}
			data = data[n:]
			f.setVarint(p, v)
		}
	case kMessage:
		return f.decodeMessage(p, data, d)
	case kQuantity:
		if d.strings.quantity(p, data) {
			return nil
		}
		if err := f.decodeMessage(p, data, d); err != nil {
			return err
		}
		d.strings.rememberQuantity(p, data)
	case kMessagePtr:
		q := (*unsafe.Pointer)(p)
		if *q == nil {
			*q = f.elemR2.UnsafeNew()
		}
		return f.decodeMessage(*q, data, d)
	case kMessages:
		return f.decodeMessage(f.nextElem(p), data, d)
	case kStringMap:
		return f.decodeStringMapEntry(p, data, d)
	case kMap:
		return f.decodeMapEntry(p, data, d)
	}
	return nil
}

func (f *protoStructField) decodeMessage(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	if f.msg != nil {
		return f.msg.decode(p, data, d)
	}
	if err := f.extern(p, data); err != nil {
		return fmt.Errorf("%w: %s: %v", errProtobuf, f.name, err)
	}
	return nil
}

func countVarints(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// mapEntry reads a map entry: its key (field 1) and value (field 2), the
// last of each when one repeats; other fields are skipped. A key or value
// of the wrong wire type is an error.
func (f *protoStructField) mapEntry(data []byte, d *protoDecoder) (key []byte, val protoField, hasVal bool, err error) {
	for len(data) > 0 {
		var field protoField
		if field, data, err = nextField(data); err != nil {
			return nil, val, false, fmt.Errorf("%s: %w", f.name, err)
		}
		var want uint64
		switch field.num {
		case 1:
			want = wireBytes
		case 2:
			want = f.mapVal.wireType
		default:
			continue
		}
		if field.typ != want {
			return nil, val, false, fmt.Errorf("%w: %s: map entry field %d has wire type %d, want %d", errProtobuf, f.name, field.num, field.typ, want)
		}
		if field.num == 1 {
			key = field.data
			continue
		}
		if hasVal && (f.mapVal.kind == kMessage || f.mapVal.kind == kQuantity) {
			// The generated code decodes every value and keeps the
			// last: an earlier one can still fail.
			if err := f.mapVal.decodeMessage(f.mapVal.r2.UnsafeNew(), val.data, d); err != nil {
				return nil, val, false, err
			}
		}
		val, hasVal = field, true
	}
	return key, val, hasVal, nil
}

func (f *protoStructField) decodeStringMapEntry(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	key, val, _, err := f.mapEntry(data, d)
	if err != nil {
		return err
	}
	m := (*map[string]string)(p)
	if *m == nil {
		*m = make(map[string]string)
	}
	(*m)[d.str(key, false)] = d.str(val.data, false)
	return nil
}

// decodeMapEntry decodes an entry of a map other than map[string]string
// into scratch values and stores it. A missing key or value is zero.
func (f *protoStructField) decodeMapEntry(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	key, val, hasVal, err := f.mapEntry(data, d)
	if err != nil {
		return err
	}
	if d.mapValType != f.mapVal.r2 { // a scratch value of this type
		d.mapValType, d.mapVal = f.mapVal.r2, f.mapVal.r2.UnsafeNew()
	}
	// Every key's kind is string. It goes through d, not a local: the map
	// keeps it, which the compiler cannot see through reflect2 (a local
	// string of up to 32 bytes would be built on the stack).
	d.mapKey = d.str(key, false)
	f.mapVal.r2.UnsafeSet(d.mapVal, f.zero)
	switch {
	case !hasVal:
		if f.mapVal.kind == kBytes {
			*(*[]byte)(d.mapVal) = []byte{} // as the generated code
		}
	case f.mapVal.wireType == wireVarint:
		f.mapVal.setVarint(d.mapVal, val.varint)
	default:
		if err := f.mapVal.decodeBytes(d.mapVal, val.data, d); err != nil {
			return err
		}
	}
	if *(*unsafe.Pointer)(p) == nil {
		*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(f.mapType.UnsafeMakeMap(0))
	}
	f.mapType.UnsafeSetIndex(p, unsafe.Pointer(&d.mapKey), d.mapVal)
	return nil
}

// skipProtoField skips the value of an unknown field (num, wire type wt)
// at the start of b.
func skipProtoField(b []byte, num, wt uint64) ([]byte, error) {
	switch wt {
	case wireVarint:
		if _, n := consumeVarint(b); n > 0 {
			return b[n:], nil
		}
	case wireFixed64:
		if len(b) >= 8 {
			return b[8:], nil
		}
	case wireFixed32:
		if len(b) >= 4 {
			return b[4:], nil
		}
	case wireBytes:
		if l, n := consumeVarint(b); n > 0 && l <= uint64(len(b)-n) {
			return b[n+int(l):], nil
		}
	default:
		return nil, fmt.Errorf("%w: field %d: unsupported wire type %d", errProtobuf, num, wt)
	}
	return nil, fmt.Errorf("%w: field %d: truncated", errProtobuf, num)
}

// Every container's requests and limits hold a few quantities ("100m",
// "128Mi"), the same in every pod of a workload; resource.Quantity's
// Unmarshal parses each again. The intern table remembers the quantities
// it parsed, keyed by their protobuf bytes, and hands out copies.
//
// Only quantities held as a scaled int64 are remembered: one that needed
// an *inf.Dec would share that pointer with every copy. And only messages
// that start with field 1 (the string), for which the result does not
// depend on what the field held before.

// quantitySlots is the number of parsed quantities an internTable keeps.
const quantitySlots = 512

type parsedQuantity struct {
	raw string
	q   resource.Quantity
}

// quantityDecOffset is where a Quantity keeps its *inf.Dec (its unexported
// field d, whose first word is that pointer); noQuantityCache if the
// layout is not the one this code knows.
var quantityDecOffset = func() uintptr {
	f, ok := quantityType.FieldByName("d")
	if !ok || f.Type.Kind() != reflect.Struct || f.Type.NumField() == 0 ||
		f.Type.Field(0).Type != reflect.TypeFor[*inf.Dec]() || f.Type.Field(0).Offset != 0 {
		return noQuantityCache
	}
	return f.Offset
}()

const noQuantityCache = ^uintptr(0)

// quantity copies the remembered quantity of these bytes to p, if any.
func (t *internTable) quantity(p unsafe.Pointer, data []byte) bool {
	if t == nil || len(data) == 0 || data[0] != 0x0a || len(data) > maxInternLen {
		return false
	}
	h := maphash.Bytes(t.seed, data)
	bucket := t.quantities[h%(quantitySlots/2)*2:][:2]
	for i := range bucket {
		if e := bucket[i].Load(); e != nil && e.raw == string(data) {
			*(*resource.Quantity)(p) = e.q
			return true
		}
	}
	return false
}

// rememberQuantity remembers the quantity at p, just parsed from data.
func (t *internTable) rememberQuantity(p unsafe.Pointer, data []byte) {
	q := (*resource.Quantity)(p)
	if t == nil || len(data) == 0 || data[0] != 0x0a || len(data) > maxInternLen ||
		*(*unsafe.Pointer)(unsafe.Add(p, quantityDecOffset)) != nil {
		return
	}
	h := maphash.Bytes(t.seed, data)
	bucket := t.quantities[h%(quantitySlots/2)*2:][:2]
	victim(bucket, h).Store(&parsedQuantity{raw: string(data), q: *q})
}
