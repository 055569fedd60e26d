package wire

import (
	"io"
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
//
// refill also needs the reader the buffer is filled from and the bytes
// being captured (SkipAndReturnBytes); without them, canRefill is false.
// skipAndReturnBytes captures as SkipAndReturnBytes does, with those bytes
// and where the capture started in the buffer.
var iterFields = func() (f struct {
	ok, refill, capture                                 bool
	buf, head, tail, reader, captured, captureStartedAt uintptr
}) {
	t := reflect.TypeFor[jsoniter.Iterator]()
	offset := func(name string, typ reflect.Type) (uintptr, bool) {
		sf, ok := t.FieldByName(name)
		return sf.Offset, ok && sf.Type == typ
	}
	var okBuf, okHead, okTail, okReader, okCaptured, okStartedAt bool
	f.buf, okBuf = offset("buf", reflect.TypeFor[[]byte]())
	f.head, okHead = offset("head", reflect.TypeFor[int]())
	f.tail, okTail = offset("tail", reflect.TypeFor[int]())
	f.reader, okReader = offset("reader", reflect.TypeFor[io.Reader]())
	f.captured, okCaptured = offset("captured", reflect.TypeFor[[]byte]())
	f.captureStartedAt, okStartedAt = offset("captureStartedAt", reflect.TypeFor[int]())
	f.ok = okBuf && okHead && okTail
	f.refill = f.ok && okReader && okCaptured
	f.capture = f.ok && okCaptured && okStartedAt
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

// canRefill reports whether refill may read the iterator's next chunk: it
// reads from a stream (not from a byte slice, whose bytes are all in the
// buffer already) and is not capturing what it reads.
func canRefill(it *jsoniter.Iterator) bool {
	if !iterFields.refill {
		return false
	}
	p := unsafe.Pointer(it)
	return *(*io.Reader)(unsafe.Add(p, iterFields.reader)) != nil &&
		*(*[]byte)(unsafe.Add(p, iterFields.captured)) == nil
}

// refill reads the next chunk of the stream into the iterator's buffer,
// once the caller has consumed all of it, as the iterator itself does then
// (its loadMore): it reports whether it read anything, and at the end of
// the stream, or on an error, sets the iterator's Error to the reader's.
// Callers check canRefill first. A reader that keeps returning nothing
// and no error is given up on (io.ErrNoProgress), as bufio does.
func refill(it *jsoniter.Iterator) bool {
	p := unsafe.Pointer(it)
	r := *(*io.Reader)(unsafe.Add(p, iterFields.reader))
	buf := *(*[]byte)(unsafe.Add(p, iterFields.buf))
	err := io.ErrNoProgress
	for range 100 {
		n, rerr := r.Read(buf)
		if n > 0 {
			*(*int)(unsafe.Add(p, iterFields.head)) = 0
			*(*int)(unsafe.Add(p, iterFields.tail)) = n
			return true
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if it.Error == nil {
		it.Error = err
	}
	return false
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
	n := 1 + plainRun(buf[1:])
	if n == len(buf) || buf[n] != '"' {
		return nil, false
	}
	*head += n + 1
	return buf[1:n], true
}

// valueInBuffer reads the JSON object or array at the iterator's position
// if it lies whole in the read buffer and is at most maxLen bytes long,
// and returns its bytes: the buffer's own, valid until the iterator reads
// again. Otherwise ok is false and nothing is read. It finds the end by
// balancing brackets outside strings and does not validate what is
// between: the caller must, unless the bytes equal bytes that were
// validated before (a table hit).
func valueInBuffer(it *jsoniter.Iterator, maxLen int) (b []byte, ok bool) {
	buf, head := unread(it)
	if len(buf) == 0 || (buf[0] != '{' && buf[0] != '[') {
		return nil, false
	}
	depth := 0
	for i := 0; i < min(len(buf), maxLen); i++ {
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
