package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// valueTypes decodes the small apimachinery types that bring their own
// UnmarshalJSON straight from the iterator. Left to json-iterator, each
// such value would be copied out of the stream (SkipAndReturnBytes) and
// handed to UnmarshalJSON, and metav1.Time's then runs encoding/json on the
// copy: three or four allocations and a second parse for every timestamp.
// A realistic pod has a dozen timestamps and as many quantities.
//
// Each decoder gives the result the type's own UnmarshalJSON gives for
// every input that UnmarshalJSON accepts (FuzzJSONMatchesApimachinery
// checks this against sigs.k8s.io/json). It also decodes []byte's base64
// strings where they lie (base64Bytes, json_string.go).
type valueTypes struct {
	jsoniter.DummyExtension
	table *internTable // interns map[string]string keys and values, and parsed quantities; nil: copy
}

var (
	timeType        = reflect.TypeFor[metav1.Time]()
	microTimeType   = reflect.TypeFor[metav1.MicroTime]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	stringMapType   = reflect.TypeFor[map[string]string]()
	anyType         = reflect.TypeFor[any]()
	jsonNumberType  = reflect.TypeFor[json.Number]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// CreateDecoder implements jsoniter.Extension.
func (v *valueTypes) CreateDecoder(typ reflect2.Type) jsoniter.ValDecoder {
	switch typ.Type1() {
	case timeType:
		return timeDecoder{}
	case microTimeType:
		return microTimeDecoder{}
	case quantityType:
		return quantityDecoder{v.table}
	case intOrStringType:
		return intOrStringDecoder{}
	case stringMapType:
		return stringMapDecoder{v.table}
	case fieldsV1Type:
		return fieldsV1Decoder{v.table}
	case anyType:
		return anyDecoder{}
	case jsonNumberType:
		return jsonNumberDecoder{}
	case rawMessageType:
		return rawMessageDecoder{}
	}
	if t := typ.Type1(); t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return unmarshalerDecoder{t} // runtime.RawExtension, a type of one's own
	}
	return nil
}

// unmarshalerDecoder decodes a type with its own UnmarshalJSON (other
// than those valueTypes decodes itself), as json-iterator's does and as
// encoding/json does: its bytes, null included, handed to UnmarshalJSON.
// They are collected with skipAndReturnBytes, so that a
// runtime.RawExtension keeps any value encoding/json takes.
type unmarshalerDecoder struct{ typ reflect.Type }

func (d unmarshalerDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	raw := skipAndReturnBytes(it)
	if it.Error != nil {
		return
	}
	u := reflect.NewAt(d.typ, ptr).Interface().(json.Unmarshaler)
	if err := u.UnmarshalJSON(raw); err != nil {
		it.ReportError("decode "+d.typ.String(), err.Error())
	}
}

// jsonNumberDecoder decodes a json.Number (a type of one's own may have
// them, to keep a number exact) as encoding/json does: from a number, or
// from a string that holds one; null leaves it as it was. Read as a
// string, it took no number at all, so one object with a number there
// failed every list.
type jsonNumberDecoder struct{}

func (jsonNumberDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	var s string
	switch it.WhatIsNext() {
	case jsoniter.NumberValue:
		s = string(it.ReadNumber())
	case jsoniter.StringValue:
		s = it.ReadString()
	case jsoniter.NilValue:
		it.ReadNil()
		return
	default:
		it.ReportError("decode json.Number", "expected a number")
		return
	}
	if !validJSONNumber(s) {
		it.ReportError("decode json.Number", fmt.Sprintf("invalid number literal %q", s))
		return
	}
	*(*json.Number)(ptr) = json.Number(s)
}

// rawMessageDecoder keeps a json.RawMessage's value as it came, null as
// "null", as its UnmarshalJSON does (json-iterator's made null nil).
type rawMessageDecoder struct{}

func (rawMessageDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	raw := skipAndReturnBytes(it) // a copy, validated
	if it.Error == nil {
		*(*json.RawMessage)(ptr) = raw[:len(raw):len(raw)] // no spare capacity: it may be shared
	}
}

// anyDecoder decodes an interface{} field (a type of one's own may have
// them; no k8s.io/api type does) as sigs.k8s.io/json does for client-go:
// integers that fit are int64, other numbers float64. json-iterator's own
// made every number a float64, which cannot hold integers beyond 2^53.
type anyDecoder struct{}

func (anyDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	*(*any)(ptr) = readAny(it)
}

// DecorateDecoder implements jsoniter.Extension.
func (*valueTypes) DecorateDecoder(typ reflect2.Type, dec jsoniter.ValDecoder) jsoniter.ValDecoder {
	t := typ.Type1()
	switch {
	case t == bytesType || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && !selfDecoding(t):
		return base64Bytes{inner: dec}
	case t.Kind() != reflect.Pointer && textOnly(t):
		return textNullDecoder{inner: dec}
	}
	return dec
}

// textOnly reports whether values of t decode themselves from text only
// (encoding.TextUnmarshaler, not json.Unmarshaler).
func textOnly(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return (t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)) &&
		!t.Implements(jsonUnmarshalerType) && !p.Implements(jsonUnmarshalerType)
}

// textNullDecoder leaves a value that decodes itself from text as it was
// on null, as encoding/json does (it calls no UnmarshalText for null).
// json-iterator called UnmarshalText with "", which a type that checks
// its text (an enum, a UUID) refuses, so that one object with a null
// there (a nullable field of a custom resource) failed every list.
type textNullDecoder struct{ inner jsoniter.ValDecoder }

func (d textNullDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	if it.ReadNil() {
		return
	}
	d.inner.Decode(ptr, it)
}

var (
	fieldsV1Type = reflect.TypeFor[metav1.FieldsV1]()
	bytesType    = reflect.TypeFor[[]byte]()
)

// fieldsV1Decoder is metav1.FieldsV1.UnmarshalJSON (the raw JSON kept as
// is; null leaves it empty), with the bytes interned: identical managed
// fields share one copy. Bytes the table has are found where they lie in
// the read buffer, without being parsed again: they were validated when
// they were first kept.
type fieldsV1Decoder struct{ table *internTable }

func (d fieldsV1Decoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	f := (*metav1.FieldsV1)(ptr)
	if it.ReadNil() {
		return
	}
	raw, inBuffer := valueInBuffer(it, math.MaxInt)
	if !inBuffer {
		raw = skipAndReturnBytes(it) // a fresh copy, validated
		if it.Error == nil {
			setFieldsV1(f, d.table.internBytes(raw))
		}
		return
	}
	if kept, _ := d.table.lookupBytes(raw); kept != nil {
		setFieldsV1(f, kept)
		return
	}
	sub := it.Pool().BorrowIterator(raw)
	skipValue(sub) // validated as skipAndReturnBytes would
	err := sub.Error
	it.Pool().ReturnIterator(sub)
	if err != nil {
		it.ReportError("decode FieldsV1", err.Error())
		return
	}
	setFieldsV1(f, d.table.internBytesFrom(raw))
}

// parseTime is metav1.Time.UnmarshalJSON (and MicroTime's, with its
// layout): null is the zero time, a string is parsed and made local.
func parseTime(it *jsoniter.Iterator, layout string) time.Time {
	switch it.WhatIsNext() {
	case jsoniter.NilValue:
		it.ReadNil()
		return time.Time{}
	case jsoniter.StringValue:
		var s string
		if b, ok := stringInBuffer(it); ok {
			// time.Time's UnmarshalText reads RFC 3339 from the bytes,
			// without a string to allocate, with the parser time.Parse
			// tries first for this layout; it may refuse more than
			// time.Parse (Go means to make it stricter), so what it
			// refuses is left to time.Parse.
			var pt time.Time
			if layout == time.RFC3339 && pt.UnmarshalText(b) == nil {
				return pt.Local()
			}
			s = string(b)
		} else {
			s = it.ReadString()
		}
		pt, err := time.Parse(layout, s)
		if err != nil {
			it.ReportError("decode time", err.Error())
			return time.Time{}
		}
		return pt.Local()
	default:
		it.ReportError("decode time", "expected a string or null")
		return time.Time{}
	}
}

type timeDecoder struct{}

func (timeDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	(*metav1.Time)(ptr).Time = parseTime(it, time.RFC3339)
}

type microTimeDecoder struct{}

func (microTimeDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	(*metav1.MicroTime)(ptr).Time = parseTime(it, metav1.RFC3339Micro)
}

// quantityDecoder is resource.Quantity.UnmarshalJSON: null clears the
// value and keeps the format and the cached string (String still gives
// the value before the null); a string or a bare number is parsed.
type quantityDecoder struct{ table *internTable }

func (d quantityDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	q := (*resource.Quantity)(ptr)
	switch it.WhatIsNext() {
	case jsoniter.NilValue:
		it.ReadNil()
		_ = q.UnmarshalJSON([]byte("null")) // never fails
	case jsoniter.StringValue:
		// A string is parsed once per table: the parsed quantity is
		// remembered by the string's bytes (which, having no control
		// characters, never look like a protobuf key, which starts with
		// 0x0a: see intern_quantity.go).
		b, ok := stringInBuffer(it)
		if !ok {
			parseQuantity(it, q, it.ReadString())
			return
		}
		if d.table.quantity(ptr, b) {
			return
		}
		if parseQuantity(it, q, string(b)) {
			d.table.rememberQuantity(ptr, b)
		}
	case jsoniter.NumberValue:
		// ReadNumber does not check the grammar ("-", "1.", "01" pass),
		// which encoding/json, and so apimachinery, refuses.
		n := string(it.ReadNumber())
		if !validJSONNumber(n) {
			it.ReportError("decode quantity", fmt.Sprintf("invalid number %q", n))
			return
		}
		parseQuantity(it, q, n)
	default:
		it.ReportError("decode quantity", "expected a string or a number")
	}
}

// parseQuantity parses s into q, or reports why it cannot.
func parseQuantity(it *jsoniter.Iterator, q *resource.Quantity, s string) bool {
	parsed, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		it.ReportError("decode quantity", err.Error())
		return false
	}
	*q = parsed
	return true
}

// intOrStringDecoder is intstr.IntOrString.UnmarshalJSON: a string is a
// string, anything else must be an int32 (null leaves the value alone).
type intOrStringDecoder struct{}

func (intOrStringDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	v := (*intstr.IntOrString)(ptr)
	switch it.WhatIsNext() {
	case jsoniter.StringValue:
		v.Type, v.StrVal = intstr.String, readStringValue(it, nil) // encoding/json's escapes
	case jsoniter.NilValue:
		it.ReadNil()
		v.Type = intstr.Int
	case jsoniter.NumberValue:
		v.Type, v.IntVal = intstr.Int, it.ReadInt32()
	default:
		it.ReportError("decode int-or-string", "expected a string or a number")
	}
}

// stringMapDecoder fills a map[string]string (labels, annotations, data)
// without the two temporary allocations per entry of json-iterator's
// generic map decoder.
type stringMapDecoder struct{ table *internTable }

func (d stringMapDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	mp := (*map[string]string)(ptr)
	if it.ReadNil() {
		*mp = nil
		return
	}
	if *mp == nil {
		*mp = make(map[string]string)
	}
	m := *mp
	if it.WhatIsNext() != jsoniter.ObjectValue {
		it.ReportError("decode map[string]string", "expected an object")
		return
	}
	readObjectCB(it, d.table, func(it *jsoniter.Iterator, key string) bool {
		m[key] = readInterned(it, d.table)
		return it.Error == nil
	})
}
