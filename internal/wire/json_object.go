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
	var key string
	if !walkObject(it, "decode object",
		func(it *jsoniter.Iterator) { key = readStringValue(it, t) },
		func(it *jsoniter.Iterator) bool { return f(it, key) }) {
		it.ReadMapCB(f)
	}
}

// walkObject reads an object in the read buffer (the caller has seen
// WhatIsNext report an ObjectValue): for each member, key reads its key
// (the iterator at the key's opening quote) and value its value (after
// the colon), returning false to stop; it stops on the iterator's error
// too, reporting a malformed object as what ("decode object"). Its
// nesting is counted in the iterator's own depth, as json-iterator's
// ReadMapCB counts it. It reports false, having read nothing, where
// json-iterator's fields are out of reach: read the object with ReadMapCB
// then. (key and value are only called: closures over the caller's
// variables stay on its stack.)
func walkObject(it *jsoniter.Iterator, what string, key func(*jsoniter.Iterator), value func(*jsoniter.Iterator) bool) bool {
	buf, head := unread(it)
	if len(buf) == 0 || buf[0] != '{' || iterDepthOffset == 0 {
		return false
	}
	depth := iterDepth(it)
	if *depth++; *depth > maxDepth {
		it.ReportError(what, "exceeded max depth")
		return true
	}
	*head++ // {
	c, head := peek(it)
	if c == '}' {
		*head++
		*depth--
		return true
	}
	for {
		if c != '"' {
			if it.Error == nil {
				it.ReportError(what, `expect " to start a key`)
			}
			return true
		}
		if key(it); it.Error != nil {
			return true
		}
		if c, head = peek(it); c != ':' {
			if it.Error == nil {
				it.ReportError(what, "expect : after a key")
			}
			return true
		}
		*head++
		if !value(it) || it.Error != nil {
			return true
		}
		switch c, head = peek(it); c {
		case ',':
			*head++
			c, _ = peek(it)
		case '}':
			*head++
			*depth--
			return true
		default:
			if it.Error == nil {
				it.ReportError(what, "expect , or } after a value")
			}
			return true
		}
	}
}

// iterDepthOffset is where json-iterator's Iterator keeps its nesting
// depth (0: not found), which walkObject counts in as ReadMapCB does.
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
