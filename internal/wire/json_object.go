package wire

import (
	"reflect"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
)

// readObjectCB is json-iterator's ReadMapCB (for an object: the caller has
// seen WhatIsNext report an ObjectValue) with each key read as readString
// reads strings, through table t: ReadMapCB reads keys with json-iterator's
// ReadString, which decodes a high surrogate followed by a surrogate pair
// ("\ud800\ud800\udc00") unlike encoding/json. Its nesting is counted as
// ReadMapCB counts it, in the iterator's own depth.
func readObjectCB(it *jsoniter.Iterator, t *internTable, f func(*jsoniter.Iterator, string) bool) {
	buf, head := unread(it)
	if len(buf) == 0 || buf[0] != '{' || iterDepthOffset == 0 {
		it.ReadMapCB(f) // json-iterator's fields out of reach
		return
	}
	depth := iterDepth(it)
	if *depth++; *depth > maxMapDepth {
		it.ReportError("decode object", "exceeded max depth")
		return
	}
	*head++ // {
	readObjectBody(it, t, f)
	*depth--
}

// iterDepthOffset is where json-iterator's Iterator keeps its nesting
// depth (0: not found), which readObjectCB counts in as ReadMapCB does.
var iterDepthOffset = func() uintptr {
	sf, ok := reflect.TypeFor[jsoniter.Iterator]().FieldByName("depth")
	if !ok || sf.Type != reflect.TypeFor[int]() || sf.Offset == 0 {
		return 0
	}
	return sf.Offset
}()

func iterDepth(it *jsoniter.Iterator) *int {
	return (*int)(unsafe.Add(unsafe.Pointer(it), iterDepthOffset))
}

// peek returns the next byte that is not white space, without consuming
// it (0 at the end of the input or on an error).
func peek(it *jsoniter.Iterator) (byte, *int) {
	if buf, head := unread(it); len(buf) > 0 && buf[0] > ' ' {
		return buf[0], head // the usual case: no white space, no refill
	}
	it.WhatIsNext() // skips white space, refilling the buffer
	buf, head := unread(it)
	if len(buf) == 0 || it.Error != nil {
		return 0, head
	}
	return buf[0], head
}

func readObjectBody(it *jsoniter.Iterator, t *internTable, f func(*jsoniter.Iterator, string) bool) {
	c, head := peek(it)
	if c == '}' {
		*head++
		return
	}
	for {
		if c != '"' {
			it.ReportError("decode object", `expect " to start a key`)
			return
		}
		key := readStringValue(it, t)
		if it.Error != nil {
			return
		}
		if c, head = peek(it); c != ':' {
			it.ReportError("decode object", "expect : after a key")
			return
		}
		*head++
		if !f(it, key) || it.Error != nil {
			return
		}
		switch c, head = peek(it); c {
		case ',':
			*head++
			c, _ = peek(it)
		case '}':
			*head++
			return
		default:
			it.ReportError("decode object", "expect , or } after a value")
			return
		}
	}
}
