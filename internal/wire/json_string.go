package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
)

// Reading the JSON strings that stringInBuffer leaves: those with escapes,
// and those that do not lie whole in json-iterator's read buffer (every
// string longer than the buffer). json-iterator reads such a string one
// byte at a time, appending each byte to a slice that grows by doubling,
// and copies the slice into the string at the end: a ConfigMap holding
// 100 KB of text cost 553 KB of allocations and a function call per byte
// (BenchmarkJSONLargeStrings). readString copies the raw string out of
// the buffer in runs, eight bytes tested at a time (plainRun), into a
// scratch buffer kept between strings, refilling json-iterator's buffer
// itself as the string goes on (refill); then it decodes the escapes in
// place and allocates the string once, at its size.
//
// It decodes what encoding/json, and so k8s.io/apimachinery, decodes: the
// escapes \" \\ \/ \b \f \n \r \t and \uXXXX, a surrogate pair into one
// rune and a lone surrogate into U+FFFD; it refuses control characters.
// Like json-iterator, it keeps bytes that are not valid UTF-8 as they are
// (encoding/json replaces them; kube-apiserver never sends them).

// readString reads the JSON string at the iterator's position, where
// WhatIsNext has just reported a StringValue. ok is false, with nothing
// read, when the string runs past the buffer of an iterator that cannot be
// refilled from here (a capture in progress, json-iterator's fields out of
// reach): the caller then reads it with ReadString. Bad input (a control
// character, a bad escape, the end of the input) is reported on the
// iterator, and ok is true.
func readString(it *jsoniter.Iterator) (s string, ok bool) {
	b, sp, ok := readStringBytes(it)
	if ok {
		s = string(b)
		putStringScratch(sp)
	}
	return s, ok
}

// readStringBytes is readString giving the string's bytes in a scratch
// buffer, valid until the caller gives it back (putStringScratch).
func readStringBytes(it *jsoniter.Iterator) (b []byte, sp *[]byte, ok bool) {
	buf, head := unread(it)
	if len(buf) == 0 || buf[0] != '"' {
		return nil, nil, false
	}
	n, closed, escaped, err := scanString(buf[1:], false)
	if err == "" && !closed && !canRefill(it) {
		return nil, nil, false
	}
	sp = stringScratch.Get().(*[]byte)
	raw := append((*sp)[:0], buf[1:1+n]...)
	*head += 1 + n
	for err == "" && !closed {
		if !refill(it) {
			err = "unexpected end of input"
			break
		}
		buf, head = unread(it)
		n, closed, escaped, err = scanString(buf, escaped)
		raw = append(raw, buf[:n]...)
		*head += n
	}
	if err == "" {
		*head++ // the closing quote
		if bytes.IndexByte(raw, '\\') >= 0 {
			raw, err = unescape(raw[:0], raw)
		}
	}
	*sp = raw
	if err != "" {
		it.ReportError("readString", err)
		return nil, sp, true
	}
	return raw, sp, true
}

// stringScratch holds the buffers readString collects raw strings in; one
// grown past maxStringScratch by a huge string is dropped after use rather
// than kept.
var stringScratch = sync.Pool{New: func() any { return new([]byte) }}

const maxStringScratch = 1 << 20

func putStringScratch(sp *[]byte) {
	if cap(*sp) <= maxStringScratch {
		stringScratch.Put(sp)
	}
}

// scanString scans b, a part of a JSON string's body, for the string's
// closing quote: escaped says whether the part before b ended in a
// backslash. It returns how many bytes of b belong to the string (those
// before the closing quote, or all of b), whether the quote was found,
// whether b ends in a backslash, and what is wrong with the string if
// something is. The escapes themselves are judged by unescape.
func scanString(b []byte, escaped bool) (n int, closed, escapedAtEnd bool, err string) {
	i := 0
	if escaped {
		if len(b) == 0 {
			return 0, false, true, ""
		}
		i = 1
	}
	for {
		i += plainRun(b[i:])
		switch {
		case i == len(b):
			return i, false, false, ""
		case b[i] == '"':
			return i, true, false, ""
		case b[i] == '\\' && i+1 == len(b):
			return i + 1, false, true, ""
		case b[i] == '\\':
			i += 2
		default:
			return i, false, false, fmt.Sprintf("invalid control character found: %d", b[i])
		}
	}
}

// plainRun returns how many bytes at the start of b are neither a quote,
// a backslash nor a control character: the bytes a JSON string holds as
// they are. It tests eight bytes at a time, with the bit tricks that tell
// whether a word holds a byte equal to, or less than, a given one.
func plainRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if ((q-ones)&^q|(bs-ones)&^bs|(x-ones*' ')&^x)&highs != 0 {
			break
		}
	}
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= ' ' {
		i++
	}
	return i
}

// unescape appends to dst the string whose raw JSON body (between the
// quotes, the escapes undone by nobody yet) is src. dst may be src[:0]:
// every escape is at least as long as what it decodes to, so the decoding
// never overtakes the reading.
func unescape(dst, src []byte) ([]byte, string) {
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...), ""
		}
		dst = append(dst, src[:i]...)
		src = src[i:]
		if len(src) < 2 {
			return dst, "unfinished escape"
		}
		var c byte
		switch src[1] {
		case '"', '\\', '/':
			c = src[1]
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, ok := hex4(src)
			if !ok {
				return dst, `invalid \u escape`
			}
			src = src[6:]
			if utf16.IsSurrogate(r) {
				// A surrogate pair is one rune; a lone surrogate, or one
				// followed by anything but its pair, is U+FFFD and what
				// follows it is read on its own.
				r2, ok := hex4(src)
				if pair := utf16.DecodeRune(r, r2); ok && pair != utf8.RuneError {
					r, src = pair, src[6:]
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, fmt.Sprintf(`invalid escape \%c`, src[1])
		}
		dst = append(dst, c)
		src = src[2:]
	}
	return dst, ""
}

// hex4 decodes the \uXXXX escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// base64Bytes decorates json-iterator's decoder of []byte (Secret data,
// ConfigMap binaryData), which copies the base64 string out of the stream
// and then decodes the copy: the string is decoded where it lies in the
// read buffer, or from readString's scratch buffer, into a slice of the
// decoded size. Anything but a string (null, an array of numbers) is left
// to json-iterator. The result is encoding/json's: the standard base64
// alphabet with padding, line breaks ignored.
type base64Bytes struct{ inner jsoniter.ValDecoder }

func (d base64Bytes) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	if it.WhatIsNext() != jsoniter.StringValue {
		d.inner.Decode(ptr, it)
		return
	}
	if b, ok := stringInBuffer(it); ok {
		decodeBase64(ptr, b, it)
		return
	}
	if b, sp, ok := readStringBytes(it); ok {
		if it.Error == nil {
			decodeBase64(ptr, b, it)
		}
		putStringScratch(sp)
		return
	}
	d.inner.Decode(ptr, it)
}

func decodeBase64(ptr unsafe.Pointer, b []byte, it *jsoniter.Iterator) {
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(dst, b)
	if err != nil {
		it.ReportError("decode base64", err.Error())
		return
	}
	*(*[]byte)(ptr) = dst[:n:n] // clipped: a shared part must have no spare capacity
}
