package wire

import (
	"reflect"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
)

// Reading JSON values where they lie. json-iterator copies every string it
// returns, and every value it skips and returns the bytes of; most of what
// the decoders here read is only looked at (a string the intern table
// already has, a part the sharing table already has, a timestamp to parse)
// and then dropped. These helpers read such values in json-iterator's own
// read buffer when they lie whole in it, and fall back to copying when
// they do not.

// json-iterator reads from a buffer that it refills, and its Iterator
// keeps the buffer and the read position in unexported fields. unread
// reads them through their offsets, found by name and type when the
// program starts; if json-iterator's layout ever differs, iterFields.ok is
// false, the helpers below find nothing in place, and every value is read
// by json-iterator as before (TestStringInBuffer fails, to say so).
var iterFields = func() (f struct {
	ok              bool
	buf, head, tail uintptr
}) {
	t := reflect.TypeFor[jsoniter.Iterator]()
	offset := func(name string, typ reflect.Type) (uintptr, bool) {
		sf, ok := t.FieldByName(name)
		return sf.Offset, ok && sf.Type == typ
	}
	var okBuf, okHead, okTail bool
	f.buf, okBuf = offset("buf", reflect.TypeFor[[]byte]())
	f.head, okHead = offset("head", reflect.TypeFor[int]())
	f.tail, okTail = offset("tail", reflect.TypeFor[int]())
	f.ok = okBuf && okHead && okTail
	return f
}()

// unread returns what json-iterator has read into its buffer and not yet
// consumed, and its read position, which advances by n when the caller
// consumes n bytes. buf is empty if the layout is not the one expected.
func unread(it *jsoniter.Iterator) (buf []byte, head *int) {
	if !iterFields.ok {
		return nil, nil
	}
	p := unsafe.Pointer(it)
	all := *(*[]byte)(unsafe.Add(p, iterFields.buf))
	head = (*int)(unsafe.Add(p, iterFields.head))
	tail := min(*(*int)(unsafe.Add(p, iterFields.tail)), len(all))
	if *head < 0 || *head >= tail {
		return nil, head
	}
	return all[*head:tail], head
}

// stringInBuffer reads the JSON string at the iterator's position if it
// lies whole in the read buffer and has no escapes and no control
// characters (which json-iterator would refuse), and returns its bytes:
// the buffer's own, valid until the iterator reads again, to be looked at
// and not kept. Otherwise ok is false and nothing is read. It is called
// where WhatIsNext has just reported a StringValue.
func stringInBuffer(it *jsoniter.Iterator) (b []byte, ok bool) {
	buf, head := unread(it)
	if len(buf) == 0 || buf[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(buf); i++ {
		switch c := buf[i]; {
		case c == '"':
			*head += i + 1
			return buf[1:i], true
		case c == '\\' || c < ' ':
			return nil, false
		}
	}
	return nil, false
}

// valueInBuffer reads the JSON object or array at the iterator's position
// if it lies whole in the read buffer, and returns its bytes: the buffer's
// own, valid until the iterator reads again. Otherwise ok is false and
// nothing is read. It finds the end by balancing brackets outside strings
// and does not validate what is between: the caller must, unless the bytes
// equal bytes that were validated before (a table hit).
func valueInBuffer(it *jsoniter.Iterator) (b []byte, ok bool) {
	buf, head := unread(it)
	if len(buf) == 0 || (buf[0] != '{' && buf[0] != '[') {
		return nil, false
	}
	depth := 0
	for i := 0; i < len(buf); i++ {
		switch buf[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				*head += i + 1
				return buf[:i+1], true
			}
		case '"':
			for i++; i < len(buf) && buf[i] != '"'; i++ {
				if buf[i] == '\\' {
					i++ // the escaped byte, a quote perhaps
				}
			}
		}
	}
	return nil, false
}
