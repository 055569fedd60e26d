package wire

import (
	"fmt"
	"slices"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
)

// Skipping values as encoding/json does. Where apimachinery skips a value
// (a field it does not know) or keeps its bytes (runtime.RawExtension,
// metav1.FieldsV1, json.RawMessage), it checks only the value's syntax.
// json-iterator's Skip also parses a number with an exponent, or one that
// reaches the end of its read buffer, as a float64, and fails on one
// beyond float64's range: 1e400, or an integer of 400 digits lying across
// two reads. One such value in one object failed the whole list or watch.

// skipValue skips the next JSON value, checking its syntax and converting
// nothing: a number is checked against JSON's grammar only. Objects and
// arrays count their nesting in the iterator's depth, within
// json-iterator's limit. Strings, true, false and null are skipped by
// json-iterator.
func skipValue(it *jsoniter.Iterator) { skip(it, false) }

// skipValueInRange is skipValue that also refuses, as readAny does, a
// number beyond float64's range: apimachinery reads unstructured objects
// into map[string]any whole, and refuses one such number anywhere, in
// the managedFields WithoutManagedFields skips too.
func skipValueInRange(it *jsoniter.Iterator) { skip(it, true) }

func skip(it *jsoniter.Iterator, inRange bool) {
	switch it.WhatIsNext() {
	case jsoniter.NumberValue:
		skipNumber(it, inRange)
	case jsoniter.ArrayValue:
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			skip(it, inRange)
			return it.Error == nil
		})
	case jsoniter.ObjectValue:
		skipObject(it, inRange)
	default:
		it.Skip() // a string, true, false or null; anything else is an error
	}
}

// skipNumber skips a number where it lies in the read buffer, or reads
// it with ReadNumber (which converts nothing) when it runs to the end of
// the buffer. With inRange it always reads it with ReadNumber, and refuses
// what convertNumber refuses.
func skipNumber(it *jsoniter.Iterator, inRange bool) {
	buf, head := unread(it)
	n := 0
	for n < len(buf) && isNumberByte(buf[n]) {
		n++
	}
	if n < len(buf) && !inRange {
		if !validJSONNumber(buf[:n]) {
			it.ReportError("skip number", fmt.Sprintf("invalid number %q", buf[:n]))
			return
		}
		*head += n
		return
	}
	s := string(it.ReadNumber())
	if inRange {
		if _, err := convertNumber(s); err != nil {
			it.ReportError("skip number", err.Error())
		}
		return
	}
	if !validJSONNumber(s) {
		it.ReportError("skip number", fmt.Sprintf("invalid number %q", s))
	}
}

// isNumberByte reports whether c may be part of a number, as
// json-iterator's ReadNumber collects them.
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// skipObject skips an object (the caller has seen WhatIsNext report an
// ObjectValue) through walkObject, which counts its nesting, its keys with
// json-iterator's Skip, which copies none of them.
func skipObject(it *jsoniter.Iterator, inRange bool) {
	skipMember := func(it *jsoniter.Iterator) bool {
		skip(it, inRange)
		return it.Error == nil
	}
	if !walkObject(it, "skip object", func(it *jsoniter.Iterator) { it.Skip() }, skipMember) {
		it.ReadMapCB(func(it *jsoniter.Iterator, _ string) bool { return skipMember(it) })
	}
}

// skipAndReturnBytes skips the next value as skipValue does and returns a
// copy of its bytes, from its first byte (white space before it is not
// part of it, as for encoding/json) to its last; nil on an error. It
// collects the bytes with json-iterator's own capture (as its
// SkipAndReturnBytes does), which appends the buffer to them at each
// refill; if that is out of reach (json-iterator's layout differs), it is
// SkipAndReturnBytes.
func skipAndReturnBytes(it *jsoniter.Iterator) []byte {
	if !iterFields.capture {
		return it.SkipAndReturnBytes()
	}
	it.WhatIsNext() // past white space
	if it.Error != nil {
		return nil
	}
	p := unsafe.Pointer(it)
	buf := (*[]byte)(unsafe.Add(p, iterFields.buf))
	head := (*int)(unsafe.Add(p, iterFields.head))
	captured := (*[]byte)(unsafe.Add(p, iterFields.captured))
	startedAt := (*int)(unsafe.Add(p, iterFields.captureStartedAt))
	if *captured != nil {
		// Inside a capture already: the value is the end of that one,
		// from where it stands now.
		from := len(*captured) + *head - *startedAt
		skipValue(it)
		if it.Error != nil {
			return nil
		}
		all := append(slices.Clip(*captured), (*buf)[*startedAt:*head]...)
		return slices.Clip(all[from:])
	}
	*captured, *startedAt = []byte{}, *head // not nil: capturing
	skipValue(it)
	raw := append(*captured, (*buf)[*startedAt:*head]...)
	*captured = nil
	if it.Error != nil {
		return nil
	}
	return raw
}
