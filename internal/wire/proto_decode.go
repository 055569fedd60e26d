package wire

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/modern-go/reflect2"
)

// The generated Unmarshal of every k8s.io/api type copies each string out
// of the frame, grows each repeated field by appending one element at a
// time and each map by inserting into an empty one: a 2.4 KB pod costs
// about 170 allocations, and slices keep the spare capacity of their last
// doubling for as long as the object is cached.
//
// protoMessage decodes the same bytes into the same Go structs, compiled
// once per type from the field numbers in the structs' protobuf tags and
// the fields' Go types (proto_compile.go):
//
//   - strings of up to maxInternLen bytes come from the codec's intern
//     table (a hash of the frame's bytes; a copy only the first time), so
//     the namespace, labels, images and condition types of a thousand pods
//     are one string each, as for JSON; a string field first compares with
//     the string it held in the object decoded last;
//   - when a repeated field or map is first met, the run of its entries
//     (written one after the other) is counted, so it is allocated once,
//     at its final size;
//   - managedFields' FieldsV1 bytes are interned like strings, and parsed
//     quantities are remembered by their bytes (intern_quantity.go).
//
// The result equals the generated Unmarshal's for every input that
// Unmarshal accepts (TestProtoDecodeMatchesGenerated on random objects of
// every kind of k8s.io/api, TestProtoDecodeForwardCompatibleEveryKind,
// TestProtoDecodeMutations); a few malformed inputs that
// the generated code reads past are refused here (groups, a map key longer
// than its entry, a map entry's field of the wrong wire type).

// protoDecoder is the state of one object's decoding.
type protoDecoder struct {
	strings *internTable // nil: copy every string
	parts   *partTable   // nil: share no parts (proto_share.go)
	depth   int
	owned   ownedSet // the values made for this object: merged into without a copy
	spare   int      // slices grown with spare capacity: a part holding one is not remembered
	decoded int      // the sizes of the maps, slices and pointers decoded, summed (ownSize)

	// a scratch value of type mapValType for the entries of maps (kMap)
	mapValType reflect2.Type
	mapVal     unsafe.Pointer
	mapKey     string
}

// maxProtoDepth bounds the nesting of messages, so that a hostile frame
// cannot exhaust the stack (no API object comes near it).
const maxProtoDepth = 1000

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

// decodeFields is decode's loop over the fields of one message.
func (m *protoMessage) decodeFields(p unsafe.Pointer, b []byte, d *protoDecoder) error {
	for len(b) > 0 {
		start := b
		tag, n := consumeVarint(b)
		if n == 0 {
			return fmt.Errorf("%w: %s: truncated field tag", errProtobuf, m.typ.Name())
		}
		b = b[n:]
		// The field number is the tag's, truncated to an int32, as the
		// generated code reads it.
		fieldNum, wt := int32(tag>>3), tag&7
		if fieldNum <= 0 || wt == 4 {
			return fmt.Errorf("%w: %s: illegal tag %d (wire type %d)", errProtobuf, m.typ.Name(), fieldNum, wt)
		}
		num := uint64(fieldNum)
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
		selfMerged, before := false, unsafe.Pointer(nil)
		// Sharing parts, maps, repeated fields and message pointers are
		// decoded a run of entries at a time (proto_share.go).
		if d.parts != nil && wt == wireBytes {
			switch {
			case f.runs:
				var err error
				if b, err = d.parts.decodeRun(f, fp, start, tag, d); err != nil {
					return err
				}
				continue
			case f.selfMerging && !emptyPart(fp, f.isSlice):
				selfMerged, before = true, d.unshare(f, fp)
			}
		}
		varint := wt == wireVarint && f.wireType == wireVarint
		if !varint && (wt != wireBytes || (f.wireType != wireBytes && f.kind != kVarints)) {
			return fmt.Errorf("%w: %s has wire type %d, want %d", errProtobuf, f.name, wt, f.wireType)
		}
		// Room for the whole run of entries, once their wire type is
		// known to fit (a packed run of varints sizes its slice itself).
		if f.repeated && f.full(fp) && !(f.kind == kVarints && wt == wireBytes) {
			run, n := spanRun(start, tag)
			f.reserve(fp, max(n, 1), len(run), d)
		}
		if varint {
			v, n := consumeVarint(b)
			if n == 0 {
				return fmt.Errorf("%w: %s: truncated varint", errProtobuf, f.name)
			}
			b = b[n:]
			f.setVarint(fp, v, d)
			continue
		}
		data, rest, err := f.lengthDelimited(b)
		if err != nil {
			return err
		}
		if err := f.decodeBytes(fp, data, d); err != nil {
			return err
		}
		if selfMerged {
			d.owned.made(fp, before) // a slice's copy is made as it grows
		}
		b = rest
	}
	return nil
}

// lengthDelimited splits b, which starts with the length of one of f's
// length-delimited values (its tag read), into that value and what
// follows it.
func (f *protoStructField) lengthDelimited(b []byte) (data, rest []byte, err error) {
	l, n := consumeVarint(b)
	if n == 0 {
		return nil, nil, fmt.Errorf("%w: %s: truncated length", errProtobuf, f.name)
	}
	b = b[n:]
	if l > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: %s: length %d exceeds the %d bytes left", errProtobuf, f.name, l, len(b))
	}
	return b[:l], b[l:], nil
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

// maxMapHint bounds the room a map is made with. Its run of entries may
// repeat keys (a hostile frame's 2-byte entries "", "", ... collapse into
// one), and a map keeps the room it was made with: sized by the run, a
// one-entry map decoded from 1 MiB held 41 MB. Larger maps grow as they
// fill.
const maxMapHint = 256

// A slice is made with room for its whole run of entries, counted before
// any is decoded, so that it holds no spare capacity. A hostile frame's
// run of 2-byte entries, each found bad only when decoded, would make a
// slice of 408-byte containers take 200 times the frame's size (13 GB for
// a frame of 64 MiB) before the first entry failed: the room made is at
// most maxHintGrowth times the run's bytes, or minHintBytes, and a slice
// that needs more grows as it fills.
const (
	maxHintGrowth = 8
	minHintBytes  = 64 << 10
)

// reserve makes room for n more elements in the slice or map at p, which
// run for runBytes bytes of the frame.
func (f *protoStructField) reserve(p unsafe.Pointer, n, runBytes int, d *protoDecoder) {
	if f.elemSize > 0 {
		n = max(1, min(n, max(minHintBytes, maxHintGrowth*runBytes)/int(f.elemSize)))
	}
	switch f.kind {
	case kStringMap:
		if m := (*map[string]string)(p); *m == nil {
			*m = make(map[string]string, min(n, maxMapHint))
		}
	case kMap:
		if m := (*unsafe.Pointer)(p); *m == nil {
			*m = *(*unsafe.Pointer)(f.mapType.UnsafeMakeMap(min(n, maxMapHint)))
		}
	default:
		f.growSlice(p, n, d)
	}
}

// growSlice makes room for n more elements in the slice at p. The new
// elements are zero: they are only ever taken by nextElem.
func (f *protoStructField) growSlice(p unsafe.Pointer, n int, d *protoDecoder) {
	h := (*sliceHeader)(p)
	if h.cap-h.len >= n {
		return
	}
	size := h.len + n
	if h.len > 0 {
		// A field seen again, its elements interleaved with other fields
		// (which no marshaler writes, but a hostile frame may): growing
		// by doubling keeps that linear, where growing to the exact size
		// copied every element again for each new one.
		size = max(size, 2*h.cap)
		if size > h.len+n {
			d.spare++ // spare capacity: not to be remembered in a part
		}
	}
	grown := *(*sliceHeader)(f.slice.UnsafeMakeSlice(h.len, size))
	for i := range h.len {
		f.slice.UnsafeSetIndex(unsafe.Pointer(&grown), i, f.slice.UnsafeGetIndex(p, i))
	}
	*h = grown
}

// nextElem appends a zero element to the slice at p and returns it.
func (f *protoStructField) nextElem(p unsafe.Pointer, d *protoDecoder) unsafe.Pointer {
	h := (*sliceHeader)(p)
	if h.len == h.cap {
		f.growSlice(p, max(h.len, 4), d)
		d.spare++
	}
	e := unsafe.Add(h.data, uintptr(h.len)*f.elemSize)
	h.len++
	return e
}

// setVarint stores a varint field's value (or appends it, kVarints).
func (f *protoStructField) setVarint(p unsafe.Pointer, v uint64, d *protoDecoder) {
	switch f.kind {
	case kBool:
		*(*bool)(p) = isTrue(v)
	case kInt32:
		*(*int32)(p) = int32(v)
	case kInt64:
		*(*int64)(p) = int64(v)
	case kInt:
		*(*int)(p) = int(v)
	case kUint32:
		*(*uint32)(p) = uint32(v)
	case kUint64:
		*(*uint64)(p) = v
	case kBoolPtr:
		b := isTrue(v)
		*(**bool)(p) = &b
	case kInt32Ptr:
		i := int32(v)
		*(**int32)(p) = &i
	case kInt64Ptr:
		i := int64(v)
		*(**int64)(p) = &i
	case kVarints:
		storeVarint(f.nextElem(p, d), f.elemKind, v)
	}
}

// storeVarint stores v as a value of kind k at p.
func storeVarint(p unsafe.Pointer, k reflect.Kind, v uint64) {
	switch k {
	case reflect.Bool:
		*(*bool)(p) = isTrue(v)
	case reflect.Int32:
		*(*int32)(p) = int32(v)
	case reflect.Int64:
		*(*int64)(p) = int64(v)
	case reflect.Int:
		*(*int)(p) = int(v)
	case reflect.Uint32:
		*(*uint32)(p) = uint32(v)
	case reflect.Uint64:
		*(*uint64)(p) = v
	}
}

// isTrue reads a varint as a bool, as generated code does: through an int,
// so that where int has 32 bits, bits above them are dropped.
func isTrue(v uint64) bool { return uint(v) != 0 }

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
// in the object decoded last by any codec (f.last belongs to the compiled
// type, which all codecs share; strings are immutable, so sharing one
// across codecs is harmless): most fields repeat from object to object
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

// decodeBytes decodes a length-delimited field's data into the field at p.
func (f *protoStructField) decodeBytes(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	switch f.kind {
	case kString:
		*(*string)(p) = f.str(data, d)
	case kStringPtr:
		s := d.str(data, f.unique)
		*(**string)(p) = &s
	case kStrings:
		*(*string)(f.nextElem(p, d)) = d.str(data, false)
	case kBytes:
		if f.intern && d.strings != nil {
			*(*[]byte)(p) = d.strings.internBytesFrom(data)
		} else {
			*(*[]byte)(p) = append(make([]byte, 0, len(data)), data...)
		}
	case kVarints: // packed
		f.growSlice(p, countVarints(data), d)
		for len(data) > 0 {
			v, n := consumeVarint(data)
			if n == 0 {
				return fmt.Errorf("%w: %s: truncated packed varint", errProtobuf, f.name)
			}
			data = data[n:]
			f.setVarint(p, v, d)
		}
	case kMessage:
		return f.decodeMessage(p, data, d)
	case kQuantity:
		// Only a message that starts with field 1 (0x0a) sets the whole
		// quantity, whatever it held before: only those are remembered.
		remembered := len(data) > 0 && data[0] == 0x0a
		if remembered && d.strings.quantity(p, data) {
			return nil
		}
		if err := f.decodeMessage(p, data, d); err != nil {
			return err
		}
		if remembered {
			d.strings.rememberQuantity(p, data)
		}
	case kMessagePtr:
		q := (*unsafe.Pointer)(p)
		if *q == nil {
			*q = f.elemR2.UnsafeNew()
		}
		return f.decodeMessage(*q, data, d)
	case kMessages:
		return f.decodeMessage(f.nextElem(p, d), data, d)
	case kStringMap:
		return f.decodeStringMapEntry(p, data, d)
	case kMap:
		return f.decodeMapEntry(p, data, d)
	}
	return nil
}

// decodeMessage decodes a message into the struct at p: compiled, or
// through the type's own Unmarshal.
func (f *protoStructField) decodeMessage(p unsafe.Pointer, data []byte, d *protoDecoder) error {
	if f.msg != nil {
		return f.msg.decode(p, data, d)
	}
	if err := f.extern(p, data); err != nil {
		return fmt.Errorf("%w: %s: %v", errProtobuf, f.name, err)
	}
	return nil
}

// countVarints counts the varints of packed data (the bytes that end one).
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

// decodeStringMapEntry stores a map[string]string entry.
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
	// The value is decoded into a scratch value, which the decoder keeps
	// for the next entry; taken from d while in use, so that a map inside
	// the value gets its own.
	v := d.mapVal
	if v == nil || d.mapValType != f.mapVal.r2 {
		v = f.mapVal.r2.UnsafeNew()
	}
	d.mapVal = nil
	f.mapVal.r2.UnsafeSet(v, f.zero)
	switch {
	case !hasVal:
		// Empty, not nil, where the generated code starts the value as
		// &T{}: bytes, and the named slices and maps that have their own
		// Unmarshal (authentication's ExtraValue).
		switch vt := f.mapVal.typ; {
		case f.mapVal.kind == kBytes:
			*(*[]byte)(v) = []byte{}
		case f.mapVal.extern != nil && vt.Kind() == reflect.Slice:
			reflect.NewAt(vt, v).Elem().Set(reflect.MakeSlice(vt, 0, 0))
		case f.mapVal.extern != nil && vt.Kind() == reflect.Map:
			reflect.NewAt(vt, v).Elem().Set(reflect.MakeMap(vt))
		}
	case f.mapVal.wireType == wireVarint:
		f.mapVal.setVarint(v, val.varint, d)
	default:
		if err := f.mapVal.decodeBytes(v, val.data, d); err != nil {
			return err
		}
	}
	if *(*unsafe.Pointer)(p) == nil {
		*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(f.mapType.UnsafeMakeMap(0))
	}
	// Every key's kind is string. It goes through d, not a local: the map
	// keeps it, which the compiler cannot see through reflect2 (a local
	// string of up to 32 bytes would be built on the stack).
	d.mapKey = d.str(key, false)
	f.mapType.UnsafeSetIndex(p, unsafe.Pointer(&d.mapKey), v)
	d.mapValType, d.mapVal = f.mapVal.r2, v
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

// unshare is f.unshare, unless the value at p is one this decode made
// (d.owned). It returns the value's identity before.
func (d *protoDecoder) unshare(f *protoStructField, p unsafe.Pointer) (before unsafe.Pointer) {
	before = identity(p)
	if !d.owned.has(p) {
		f.unshare(p)
		d.owned.made(p, before)
	}
	return before
}
