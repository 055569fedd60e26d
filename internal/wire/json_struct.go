package wire

import (
	"fmt"
	"io"
	"reflect"
	"sync"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
)

// exactStructs gives every struct a decoder of its own (structDecoder),
// which skips a field it does not know with skipValue, as encoding/json
// does: json-iterator's skips it with Skip, which fails on numbers beyond
// float64's range (json_skip.go), so a newer server's field holding 1e400
// failed every list. The fields are json-iterator's: newJSONAPI sets
// DisallowUnknownFields, with which every struct's decoder is
// json-iterator's general one, holding a decoder per JSON name, with the
// names resolved as json-iterator resolves them (tags, embedded structs);
// structDecoder takes them from it and replaces it. A name matches
// exactly (case-sensitively), and a field given twice is decoded twice
// into the same value, as encoding/json does: a scalar takes the last
// value, an object or a map merges into what the first value made, and an
// array's elements merge into the first's, one by one (its length is the
// last's).
type exactStructs struct{ jsoniter.DummyExtension }

// DecorateDecoder implements jsoniter.Extension.
func (*exactStructs) DecorateDecoder(typ reflect2.Type, dec jsoniter.ValDecoder) jsoniter.ValDecoder {
	t := typ.Type1()
	if t.Kind() != reflect.Struct {
		return dec
	}
	if fields, ok := structFields(dec); ok {
		return newStructDecoder(t, fields)
	}
	if inner, ok := placeholderOf(dec); ok {
		// A struct met again while its outermost type's decoders are
		// built: json-iterator hands out a placeholder, filled once the
		// struct's own decoder is built, later if the struct holds
		// itself.
		if fields, ok := structFields(inner()); ok {
			return newStructDecoder(t, fields)
		}
		return &lazyStructDecoder{typ: t, inner: inner}
	}
	return dec // a decoder of valueTypes', or a type decoding itself
}

// exactStructsWork reports whether structFields finds the fields in
// json-iterator's general struct decoder; if not (its layout differs),
// newJSONAPI leaves json-iterator's struct decoders as they are.
var exactStructsWork = func() bool {
	type probe struct{ A int }
	api := jsoniter.Config{CaseSensitive: true, DisallowUnknownFields: true}.Froze()
	fields, ok := structFields(api.DecoderOf(reflect2.TypeOf(&probe{})))
	return ok && len(fields) == 1 && fields["A"] != nil
}()

// structFields returns the field decoders of json-iterator's general
// struct decoder by JSON name, or false if dec is not one.
func structFields(dec jsoniter.ValDecoder) (map[string]jsoniter.ValDecoder, bool) {
	e, ok := jsoniterStruct(dec, "generalStructDecoder")
	if !ok {
		return nil, false
	}
	f := e.FieldByName("fields")
	if !f.IsValid() || f.Kind() != reflect.Map || f.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // readable
	fields := make(map[string]jsoniter.ValDecoder, f.Len())
	for k, d := range f.Seq2() {
		fd, ok := d.Interface().(jsoniter.ValDecoder)
		if !ok {
			return nil, false
		}
		fields[k.String()] = fd
	}
	return fields, true
}

// jsoniterStruct returns the struct dec points to if it is json-iterator's
// type of that name, or false.
func jsoniterStruct(dec jsoniter.ValDecoder, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(dec)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}, false
	}
	e := v.Elem()
	if e.Kind() != reflect.Struct || e.Type().Name() != name || e.Type().PkgPath() != "github.com/json-iterator/go" {
		return reflect.Value{}, false
	}
	return e, true
}

// placeholderOf returns what json-iterator's placeholder decoder stands
// for (nil until it is filled), or false if dec is not one.
func placeholderOf(dec jsoniter.ValDecoder) (func() jsoniter.ValDecoder, bool) {
	e, ok := jsoniterStruct(dec, "placeholderDecoder")
	if !ok {
		return nil, false
	}
	f := e.FieldByName("decoder")
	if !f.IsValid() || f.Type() != reflect.TypeFor[jsoniter.ValDecoder]() {
		return nil, false
	}
	p := (*jsoniter.ValDecoder)(unsafe.Pointer(f.UnsafeAddr()))
	return func() jsoniter.ValDecoder { return *p }, true
}

// lazyStructDecoder is a structDecoder made at its first use, from a
// placeholder filled since.
type lazyStructDecoder struct {
	typ   reflect.Type
	inner func() jsoniter.ValDecoder
	once  sync.Once
	dec   jsoniter.ValDecoder
}

func (d *lazyStructDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	d.once.Do(func() {
		d.dec = d.inner()
		if fields, ok := structFields(d.dec); ok {
			d.dec = newStructDecoder(d.typ, fields)
		}
	})
	d.dec.Decode(ptr, it)
}

// structDecoder decodes a struct's object: a key it has a field for by
// that field's decoder, any other by skipValue. null leaves the struct as
// it was. Keys without escapes are looked up where they lie in the read
// buffer.
type structDecoder struct {
	typ    reflect.Type
	what   string // "decode " and typ, for errors
	fields map[string]jsoniter.ValDecoder
	// few: the fields, when they are few enough that comparing the key
	// with each is quicker than hashing it.
	few []namedDecoder
}

type namedDecoder struct {
	name string
	dec  jsoniter.ValDecoder
}

// maxFewFields is where looking a key up in a map becomes quicker than
// comparing it with each name (BenchmarkJSONWatchDecode).
const maxFewFields = 8

func newStructDecoder(t reflect.Type, fields map[string]jsoniter.ValDecoder) *structDecoder {
	d := &structDecoder{typ: t, what: "decode " + t.String(), fields: fields}
	if len(fields) <= maxFewFields {
		for name, dec := range fields {
			d.few = append(d.few, namedDecoder{name, dec})
		}
	}
	return d
}

// lookup returns the decoder of the field named key, nil if none.
func (d *structDecoder) lookup(key []byte) jsoniter.ValDecoder {
	if d.few == nil {
		return d.fields[string(key)] // no allocation
	}
	for _, f := range d.few {
		if f.name == string(key) {
			return f.dec
		}
	}
	return nil
}

func (d *structDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	switch it.WhatIsNext() {
	case jsoniter.NilValue:
		it.ReadNil()
		return
	case jsoniter.ObjectValue:
	default:
		if it.Error == nil {
			it.ReportError(d.what, "expect { or null")
		}
		return
	}
	d.readObject(ptr, it)
	if it.Error != nil && it.Error != io.EOF && d.typ.Name() != "" {
		it.Error = fmt.Errorf("%v.%s", d.typ, it.Error.Error()) // the path, as json-iterator gives it
	}
}

func (d *structDecoder) readObject(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	var fd jsoniter.ValDecoder // the field of the key read
	if !walkObject(it, d.what,
		func(it *jsoniter.Iterator) {
			if b, ok := stringInBuffer(it); ok {
				fd = d.lookup(b)
			} else if key := readStringValue(it, nil); it.Error == nil {
				fd = d.fields[key]
			}
		},
		func(it *jsoniter.Iterator) bool {
			if fd != nil {
				fd.Decode(ptr, it)
			} else {
				skipValue(it)
			}
			return true
		}) {
		it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
			d.field(ptr, it, key)
			return it.Error == nil
		})
	}
}

// field decodes the value of key into its field, or skips it.
func (d *structDecoder) field(ptr unsafe.Pointer, it *jsoniter.Iterator, key string) {
	if fd := d.lookup([]byte(key)); fd != nil {
		fd.Decode(ptr, it)
	} else {
		skipValue(it)
	}
}
