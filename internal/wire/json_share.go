package wire

import (
	"reflect"
	"sync/atomic"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"

	"github.com/listwatch/listwatch/internal/share"
)

// JSON objects of a codec built WithSharedParts share their parts the way
// protobuf ones do (proto_share.go): each map, slice and pointed-to struct
// is read as raw bytes first, looked up by its Go type and those bytes,
// and decoded from them only when the table does not have it. The
// apiserver writes an object's JSON the same way every time (fields in
// order, map keys sorted), so equal parts have equal bytes. A part is
// remembered only if it is small enough for its bytes (smallEnough): each
// decoder counts the size of what it decoded on its iterator, so a part
// decoded on an iterator of its own is as large as what is counted there,
// the parts inside it included however they were decoded.
//
// json-iterator decodes a key met twice in one object into what the field
// holds: into a map's entries, a pointed-to struct, and a slice's elements
// in place. So a field that already holds something is first given a copy
// of it (unshare), which the second value then changes.

// jsonPartSharer is the json-iterator extension that decorates the
// decoders of maps, slices and pointers to structs.
type jsonPartSharer struct {
	jsoniter.DummyExtension
	table *partTable
}

// DecorateDecoder implements jsoniter.Extension.
func (s *jsonPartSharer) DecorateDecoder(typ reflect2.Type, dec jsoniter.ValDecoder) jsoniter.ValDecoder {
	t := typ.Type1()
	switch {
	case selfDecoding(t) || t.Kind() == reflect.Pointer && selfDecoding(t.Elem()):
		return dec // its JSON need not be an object or array
	case t.Kind() == reflect.Map, t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
	default:
		return dec
	}
	return &sharedJSONDecoder{inner: dec, typ: t, table: s.table, id: sharedFieldIDs.Add(1),
		isSlice: t.Kind() == reflect.Slice, quantity: share.QuantityPlanOf(t)}
}

// selfDecoding reports whether values of type t decode their own JSON.
func selfDecoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// sharedJSONDecoder decodes one map, slice or struct pointer type.
type sharedJSONDecoder struct {
	inner    jsoniter.ValDecoder
	typ      reflect.Type
	table    *partTable
	id       uint32 // its counts in table.stats
	isSlice  bool
	quantity *share.QuantityPlan // where it may hold a Quantity in place
}

// Decode implements jsoniter.ValDecoder. A value met again (a key given
// twice in one object) is merged into a copy (decodeAgain); an empty one
// gets the part remembered for its bytes, or remembers what they decode to
// (share), unless it is null or of a type whose parts rarely repeat
// (worthLookingUp).
func (d *sharedJSONDecoder) Decode(p unsafe.Pointer, it *jsoniter.Iterator) {
	switch {
	case !emptyPart(p, d.isSlice):
		d.decodeAgain(p, it)
	case it.WhatIsNext() == jsoniter.NilValue || !d.table.worthLookingUp(d.id):
		d.decode(p, it)
	default:
		d.share(p, it)
	}
}

// decodeAgain decodes into the value at p, which holds what an earlier
// key of the object gave it and may be shared with other objects: into a
// deep copy of it, made once per object (the iterator's owned values).
func (d *sharedJSONDecoder) decodeAgain(p unsafe.Pointer, it *jsoniter.Iterator) {
	st := stateOf(it)
	before := identity(p)
	if !st.owned.has(p) {
		d.unshare(p)
	}
	d.inner.Decode(p, it)
	if it.Error == nil {
		st.owned.made(p, before)
	}
	st.decoded += ownSize(d.typ, p)
}

// share gives the empty value at p the part remembered for its bytes, or
// decodes them and remembers the part.
//
// A part is looked up by its bytes where they lie in the read buffer; a
// hit has the bytes of a part decoded before, so they need no parsing. A
// part that does not lie whole in the buffer is copied out first, unless
// the buffer holds more than maxPartLen of it: then it is too long to be
// remembered, and is decoded from the stream.
//
// Decoding from the stream also keeps json-iterator's depth limit, which
// counts on one iterator: a part decoded from its bytes gets an iterator of
// its own, counting from nothing, so parts are taken from the buffer only
// up to maxPartLen, which no more than maxPartLen/2 levels fit in. (And a
// part copied out was skipped, within the limit, by the stream's
// iterator.)
func (d *sharedJSONDecoder) share(p unsafe.Pointer, it *jsoniter.Iterator) {
	raw, inBuffer := valueInBuffer(it, maxPartLen)
	if !inBuffer {
		if buf, _ := unread(it); len(buf) > maxPartLen {
			d.decode(p, it)
			return
		}
		if raw = skipAndReturnBytes(it); it.Error != nil {
			return
		}
	}
	var slot *atomic.Pointer[sharedPart] // nil: too long to remember
	if len(raw) <= maxPartLen {
		v, ok, s := d.table.lookup(d.id, d.typ, raw)
		if ok {
			setPart(p, v.val, d.isSlice)
			addDecoded(it, v.size)
			return
		}
		slot = s
	}
	sub := it.Pool().BorrowIterator(raw)
	defer it.Pool().ReturnIterator(sub)
	d.decode(p, sub)
	if sub.Error != nil {
		it.ReportError("decode "+d.typ.String(), sub.Error.Error())
		return
	}
	size := 0
	if st, _ := sub.Attachment.(*iterState); st != nil {
		size = st.decoded
	}
	addDecoded(it, size)
	// A part holding a Quantity in place is not remembered: its reads
	// write (share.QuantityPlan).
	if slot != nil && smallEnough(size, len(raw)) && !d.quantity.In(p) {
		slot.Store(&sharedPart{typ: d.typ, raw: string(raw), val: partAt(p, d.isSlice), size: size})
	}
}

// decode decodes the empty value at p from it, counting its size on it.
func (d *sharedJSONDecoder) decode(p unsafe.Pointer, it *jsoniter.Iterator) {
	d.inner.Decode(p, it)
	addDecoded(it, ownSize(d.typ, p))
}

// addDecoded counts n bytes more decoded on it (ownSize): a part decoded
// on an iterator of its own is as large as what is counted on that
// iterator.
func addDecoded(it *jsoniter.Iterator, n int) {
	if n > 0 {
		stateOf(it).decoded += n
	}
}

// unshare gives the value at p, which may be shared, a deep copy of its
// own, before a key met again merges into it. One level would not do:
// merging decodes into the parts below too, and a type that decodes itself
// may write into the memory it holds (runtime.RawExtension appends into
// Raw[:0]), which the objects sharing the part would see change.
func (d *sharedJSONDecoder) unshare(p unsafe.Pointer) {
	v := reflect.NewAt(d.typ, p).Elem()
	v.Set(deepCopy(v))
}

// deepCopy returns a copy of v that shares no map, slice or pointed-to
// value with it. Unexported fields are copied as they are: nothing decodes
// into them in place.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		if v.Type().Elem().Kind() == reflect.Uint8 {
			reflect.Copy(c, v)
			return c
		}
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(deepCopy(v.Elem()))
		return c
	case reflect.Array:
		c := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range c.NumField() {
			if f := c.Field(i); f.CanSet() {
				f.Set(deepCopy(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// forgetOwned drops what the object just read owns (sharedJSONDecoder), so
// that an iterator reading a stream of objects does not keep them alive.
func forgetOwned(it *jsoniter.Iterator) {
	if st, _ := it.Attachment.(*iterState); st != nil {
		st.owned = nil
	}
}
