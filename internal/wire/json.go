package wire

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// JSON is decoded with json-iterator, which reads a value straight from an
// io.Reader into a typed Go value in one pass and is several times faster
// than encoding/json (see BenchmarkJSONLibraries). It is configured the way
// k8s.io/apimachinery used it for years: field names match case-sensitively,
// unknown fields are skipped (checking their syntax only, as encoding/json
// does: json_skip.go), and types with their own UnmarshalJSON
// (metav1.Time, resource.Quantity, intstr.IntOrString) decode themselves.

// readBufferSize is the read size of the streaming JSON decoders. It is
// also the precision of their size limits (see window).
const readBufferSize = 32 << 10

// newJSONAPI returns a json-iterator configuration of its own (its decoder
// cache is not shared with other codecs, so the options of one codec cannot
// leak into another). It encodes maps with sorted keys, so that an event
// re-encoded for a second pass (an object sent before its type) decodes the
// same every time. Strings are read by stringInterner's decoder, which
// leaves a string as it was on null; with a table, short strings are
// interned in it (see intern.go); with parts, maps, slices and struct
// pointers are shared through it (json_share.go).
func newJSONAPI(dropManagedFields bool, table *internTable, parts *partTable) jsoniter.API {
	// With DisallowUnknownFields, json-iterator gives every struct its
	// general decoder, which exactStructs replaces with one that skips
	// unknown fields as encoding/json does.
	api := jsoniter.Config{CaseSensitive: true, SortMapKeys: true, DisallowUnknownFields: exactStructsWork}.Froze()
	if exactStructsWork {
		api.RegisterExtension(&exactStructs{}) // first: it replaces json-iterator's decoder
	}
	api.RegisterExtension(&stringInterner{table: table}) // a nil table copies
	api.RegisterExtension(&valueTypes{table: table})
	if dropManagedFields {
		api.RegisterExtension(&managedFieldsSkipper{})
	}
	api.RegisterExtension(&trimmedSlices{})
	api.RegisterExtension(&countedMaps{})
	if parts != nil {
		api.RegisterExtension(&jsonPartSharer{table: parts}) // wraps the decoders above
	}
	return api
}

// trimmedSlices decorates the decoders of slices (other than []byte) so
// that a decoded slice has no spare capacity. json-iterator grows a slice
// by doubling, so five pod conditions would end in an array of eight,
// which the cache holds for long: 360 B per pod of the benchmarks' pods,
// for an allocation and a copy of 600 B (1.7% more time decoding them).
// A slice shared between objects (WithSharedParts) must have no spare
// capacity anyway, so that appending to it copies.
type trimmedSlices struct{ jsoniter.DummyExtension }

// DecorateDecoder implements jsoniter.Extension.
func (*trimmedSlices) DecorateDecoder(typ reflect2.Type, dec jsoniter.ValDecoder) jsoniter.ValDecoder {
	t := typ.Type1()
	if t.Kind() == reflect.Struct && selfDecoding(t) {
		// runtime.RawExtension and the like append into Raw[:0].
		var offsets []uintptr
		for i := range t.NumField() {
			if f := t.Field(i); f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Uint8 {
				offsets = append(offsets, f.Offset)
			}
		}
		if len(offsets) > 0 {
			return &clippedBytesDecoder{inner: dec, offsets: offsets}
		}
	}
	if t.Kind() != reflect.Slice || t.Elem().Kind() == reflect.Uint8 || selfDecoding(t) {
		return dec
	}
	return &trimmedSliceDecoder{inner: dec, typ: t}
}

// clippedBytesDecoder clips the byte slices a type decoding itself leaves
// with spare capacity.
type clippedBytesDecoder struct {
	inner   jsoniter.ValDecoder
	offsets []uintptr
}

func (d *clippedBytesDecoder) Decode(p unsafe.Pointer, it *jsoniter.Iterator) {
	d.inner.Decode(p, it)
	for _, off := range d.offsets {
		h := (*sliceHeader)(unsafe.Add(p, off))
		h.cap = h.len
	}
}

type trimmedSliceDecoder struct {
	inner jsoniter.ValDecoder
	typ   reflect.Type
}

// Decode implements jsoniter.ValDecoder.
func (d *trimmedSliceDecoder) Decode(p unsafe.Pointer, it *jsoniter.Iterator) {
	d.inner.Decode(p, it)
	if h := (*sliceHeader)(p); h.cap > h.len {
		v := reflect.NewAt(d.typ, p).Elem()
		c := reflect.MakeSlice(d.typ, h.len, h.len)
		reflect.Copy(c, v)
		v.Set(c)
	}
}

// countedMaps decorates the decoders of map types that can hold
// themselves through maps and pointers alone (type Tree map[string]Tree),
// to count their depth. json-iterator refuses objects and arrays nested
// more than 10,000 levels deep, as encoding/json does, but counts only in
// the decoders of structs, slices, arrays and interfaces, not of maps: a
// map of its own type nested a few million levels would overflow the
// stack, a crash that no recover catches. The k8s.io/api types hold no
// such map; a type of one's own may.
type countedMaps struct{ jsoniter.DummyExtension }

// DecorateDecoder implements jsoniter.Extension.
func (*countedMaps) DecorateDecoder(typ reflect2.Type, dec jsoniter.ValDecoder) jsoniter.ValDecoder {
	t := typ.Type1()
	if t.Kind() != reflect.Map || selfDecoding(t) || !holdsItselfUncounted(t, t.Elem(), nil) {
		return dec
	}
	return &countedMapDecoder{inner: dec, name: t.String()}
}

// holdsItselfUncounted reports whether values of type t can hold a map of
// type m through maps and pointers alone, with none of the decoders that
// count between them.
func holdsItselfUncounted(m, t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == m:
		return true
	case t.Kind() != reflect.Map || selfDecoding(t) || seen[t]:
		return false
	}
	if seen == nil {
		seen = make(map[reflect.Type]bool)
	}
	seen[t] = true
	return holdsItselfUncounted(m, t.Elem(), seen)
}

// maxDepth is json-iterator's nesting limit, encoding/json's too:
// walkObject keeps it for every object it reads, and countedMapDecoder for
// the maps json-iterator does not count.
const maxDepth = 10_000

// countedMapDecoder counts the levels of its maps in the iterator's state.
type countedMapDecoder struct {
	inner jsoniter.ValDecoder
	name  string
}

// iterState is what the decoders here keep on an iterator, as its
// attachment (nothing else sets it.Attachment; an iterator borrowed from
// its pool has none).
type iterState struct {
	// mapLevels: the levels of the maps countedMapDecoder is decoding.
	mapLevels int
	// owned: the values a sharedJSONDecoder made for the object being
	// read on this iterator (forgetOwned forgets them after it).
	owned ownedSet
	// decoded: the sizes of the values the sharedJSONDecoders decoded on
	// this iterator, summed (ownSize).
	decoded int
}

// stateOf returns the iterator's state, attaching a new one to it if it has
// none yet.
func stateOf(it *jsoniter.Iterator) *iterState {
	st, _ := it.Attachment.(*iterState)
	if st == nil {
		st = new(iterState)
		it.Attachment = st
	}
	return st
}

// Decode implements jsoniter.ValDecoder.
func (d *countedMapDecoder) Decode(p unsafe.Pointer, it *jsoniter.Iterator) {
	st := stateOf(it)
	if st.mapLevels == maxDepth {
		it.ReportError("decode "+d.name, "exceeded max depth")
		return
	}
	st.mapLevels++
	d.inner.Decode(p, it)
	st.mapLevels--
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// managedFieldsSkipper unbinds ObjectMeta.ManagedFields from its JSON name:
// the decoder then treats "managedFields" as an unknown field and skips its
// value without allocating anything.
type managedFieldsSkipper struct{ jsoniter.DummyExtension }

// UpdateStructDescriptor implements jsoniter.Extension.
func (*managedFieldsSkipper) UpdateStructDescriptor(sd *jsoniter.StructDescriptor) {
	if sd.Type.Type1() != objectMetaType {
		return
	}
	for _, b := range sd.Fields {
		if b.Field.Name() == "ManagedFields" {
			b.FromNames = nil
		}
	}
}

// readUnstructured decodes the next JSON object into an Unstructured in one
// pass, with k8s.io/apimachinery's number rules (int64 when the number is
// an integer that fits, float64 otherwise).
func readUnstructured(it *jsoniter.Iterator, dropManagedFields bool) *unstructured.Unstructured {
	if it.WhatIsNext() != jsoniter.ObjectValue {
		it.ReportError("decode object", "expected a JSON object")
		return nil
	}
	m := make(map[string]any)
	readObjectCB(it, nil, func(it *jsoniter.Iterator, key string) bool {
		if key == "metadata" && dropManagedFields && it.WhatIsNext() == jsoniter.ObjectValue {
			m[key] = readMap(it, "managedFields")
		} else {
			m[key] = readAny(it)
		}
		return it.Error == nil
	})
	return &unstructured.Unstructured{Object: m}
}

// readMap reads an object, skipping the value of the key named skip.
func readMap(it *jsoniter.Iterator, skip string) map[string]any {
	m := make(map[string]any)
	readObjectCB(it, nil, func(it *jsoniter.Iterator, key string) bool {
		if skip != "" && key == skip {
			skipValueInRange(it)
		} else {
			m[key] = readAny(it)
		}
		return it.Error == nil
	})
	return m
}

// readAny reads any JSON value as map[string]any, []any, string, int64,
// float64, bool or nil. json-iterator bounds the nesting depth (10000).
func readAny(it *jsoniter.Iterator) any {
	switch it.WhatIsNext() {
	case jsoniter.StringValue:
		return readInterned(it, nil) // a nil table copies
	case jsoniter.NumberValue:
		n := it.ReadNumber()
		v, err := convertNumber(string(n))
		if err != nil {
			it.ReportError("decode number", err.Error())
		}
		return v
	case jsoniter.NilValue:
		it.ReadNil()
		return nil
	case jsoniter.BoolValue:
		return it.ReadBool()
	case jsoniter.ArrayValue:
		s := make([]any, 0)
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			s = append(s, readAny(it))
			return it.Error == nil
		})
		return s
	case jsoniter.ObjectValue:
		return readMap(it, "")
	default:
		it.ReportError("decode value", "expected a JSON value")
		return nil
	}
}

// convertNumber applies sigs.k8s.io/json's rule: an integer that fits is an
// int64, anything else a float64, and a number out of float64's range is an
// error.
func convertNumber(s string) (any, error) {
	// json-iterator's ReadNumber collects the characters a number may
	// have without checking its grammar ("01", "1." pass), which
	// encoding/json refuses.
	if !validJSONNumber(s) {
		return nil, fmt.Errorf("invalid number %q", s)
	}
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return f, nil
}

// validJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validJSONNumber[S string | []byte](s S) bool {
	digits := func(i int) int { // the end of a run of digits from i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}
