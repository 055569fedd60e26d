package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// A framer cuts a watch stream into events without decoding them, so that
// the events can be decoded elsewhere (ParallelWatchDecoder decodes them on
// several goroutines). Cutting is cheap next to decoding: a protobuf frame
// says its length; a JSON event ends where its braces balance.
type framer interface {
	// next reads the next event's bytes into dst[:0] (growing it as
	// needed) and returns them, with the number of the event from 1.
	// At a clean end between events it returns io.EOF; every other error
	// ends the stream.
	next(dst []byte) (frame []byte, n int, err error)
}

// protobufFramer reads the length-prefixed frames of a protobuf watch
// stream: a 4-byte big-endian length, then that many bytes.
type protobufFramer struct {
	r      io.Reader
	max    int
	hdr    [4]byte
	frames int
}

func (f *protobufFramer) next(dst []byte) ([]byte, int, error) {
	_, err := io.ReadFull(f.r, f.hdr[:])
	if err == io.EOF {
		return nil, f.frames, io.EOF
	}
	f.frames++
	if err != nil {
		return nil, f.frames, f.readFailure("length prefix", err)
	}
	size := binary.BigEndian.Uint32(f.hdr[:])
	if uint64(size) > uint64(f.max) {
		return nil, f.frames, fmt.Errorf("%s: %w: %d bytes (limit %d)", f.what(), ErrFrameTooLarge, size, f.max)
	}
	frame, err := readN(f.r, dst, int(size))
	if err != nil {
		return nil, f.frames, f.readFailure("frame", err)
	}
	return frame, f.frames, nil
}

// readN reads n bytes from r into dst's array (grown if need be) and
// returns them, or what it read before an error. Past maxRetainedFrame, or
// dst's capacity, it grows as the bytes arrive: a length that a peer only
// claims costs no memory until its bytes come.
func readN(r io.Reader, dst []byte, n int) ([]byte, error) {
	dst = dst[:0]
	if n <= cap(dst) || n <= maxRetainedFrame {
		dst = slices.Grow(dst, n)[:n]
		m, err := io.ReadFull(r, dst)
		return dst[:m], err
	}
	dst = slices.Grow(dst, maxRetainedFrame)
	for len(dst) < n {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(cap(dst), n-len(dst)))
		}
		m, err := io.ReadFull(r, dst[len(dst):min(cap(dst), n)])
		dst = dst[:len(dst)+m]
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (f *protobufFramer) readFailure(part string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%s: the stream ended inside the %s: %w", f.what(), part, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("%s: reading the %s: %w", f.what(), part, err)
}

func (f *protobufFramer) what() string {
	return fmt.Sprintf("protobuf watch event %d", f.frames)
}

// jsonFramer reads the events of a JSON watch stream: top-level objects,
// usually separated by newlines, which it does not rely on. It finds the
// end of an object by counting brackets outside strings; it checks
// nothing else, so a malformed event is a frame like any other and its
// decoder reports it.
type jsonFramer struct {
	r          io.Reader
	max        int
	buf        []byte // read buffer: buf[head:tail] not yet framed
	head, tail int
	readErr    error // the error that ended reading, once buf is drained
	events     int
	partial    []byte // the unfinished event, after errNotOnePerLine
}

// errNotOnePerLine is the jsonFramer's way of saying that the stream must
// be decoded sequentially from here on: see rest.
var errNotOnePerLine = errors.New("JSON watch stream is not one event per line")

// rest returns the stream from the start of the event the framer gave up
// on (after errNotOnePerLine): the event's bytes so far, the bytes
// buffered after them, and the unread body.
func (f *jsonFramer) rest() io.Reader {
	tail := f.r
	if f.readErr != nil {
		tail = errReader{f.readErr}
	}
	return io.MultiReader(bytes.NewReader(f.partial), bytes.NewReader(f.buf[f.head:f.tail]), tail)
}

// errReader is a reader whose every Read fails with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func newJSONFramer(r io.Reader, max int) *jsonFramer {
	return &jsonFramer{r: r, max: max, buf: make([]byte, readBufferSize)}
}

func (f *jsonFramer) next(dst []byte) ([]byte, int, error) {
	// Whitespace between events counts towards the next event's limit, as
	// in JSONWatchDecoder: a stream of nothing but spaces is refused too.
	space := 0
	for {
		for f.head < f.tail && isJSONSpace(f.buf[f.head]) {
			f.head++
			space++
		}
		if space > f.max {
			f.events++
			return nil, f.events, fmt.Errorf("%s: %w (limit %d bytes)", f.what(), ErrFrameTooLarge, f.max)
		}
		if f.head < f.tail {
			break
		}
		if err := f.fill(); err == io.EOF {
			return nil, f.events, io.EOF
		} else if err != nil {
			f.events++
			return nil, f.events, fmt.Errorf("%s: reading the body: %w", f.what(), err)
		}
	}
	f.events++
	if f.buf[f.head] != '{' {
		return nil, f.events, fmt.Errorf("%w: %s: expected a JSON object, found %q", ErrMalformed, f.what(), f.buf[f.head])
	}
	var (
		depth         int
		inString, esc bool
	)
	dst = dst[:0]
	for {
		i, end := f.head, -1
	scan:
		for ; i < f.tail; i++ {
			c := f.buf[i]
			if inString {
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inString = false
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '\n':
				// kube-apiserver writes each event on one line. A line
				// break inside an event means the stream is not one
				// event per line (pretty-printed, or broken, as in
				// `{"object":{"kind":` followed by the next event, whose
				// braces would balance the count): only a decoder that
				// follows the syntax can tell, so hand the rest of the
				// stream to one.
				if depth > 0 {
					f.partial = append(dst, f.buf[f.head:i]...)
					f.head = i
					return nil, f.events, errNotOnePerLine
				}
			case '{', '[':
				if depth++; depth > maxJSONDepth {
					return nil, f.events, fmt.Errorf("%w: %s: nested deeper than %d", ErrMalformed, f.what(), maxJSONDepth)
				}
			case '}', ']':
				if depth--; depth == 0 {
					end = i + 1
					break scan
				}
			}
		}
		stop := f.tail
		if end >= 0 {
			stop = end
		}
		if space+len(dst)+stop-f.head > f.max {
			return nil, f.events, fmt.Errorf("%s: %w (limit %d bytes)", f.what(), ErrFrameTooLarge, f.max)
		}
		dst = append(dst, f.buf[f.head:stop]...)
		f.head = stop
		if end >= 0 {
			return dst, f.events, nil
		}
		if err := f.fill(); err == io.EOF {
			return nil, f.events, fmt.Errorf("%s: the body ended in the middle of a value: %w", f.what(), io.ErrUnexpectedEOF)
		} else if err != nil {
			return nil, f.events, fmt.Errorf("%s: reading the body: %w", f.what(), err)
		}
	}
}

// fill reads more bytes into the empty buffer. It returns io.EOF at the
// end of the stream and the reader's error for any other ending.
func (f *jsonFramer) fill() error {
	f.head, f.tail = 0, 0
	for idle := 0; ; {
		if f.readErr != nil {
			return f.readErr
		}
		n, err := f.r.Read(f.buf)
		f.tail = n
		if err != nil {
			f.readErr = err
		}
		if n > 0 {
			return nil
		}
		if err == nil {
			if idle++; idle > 100 {
				f.readErr = io.ErrNoProgress
			}
		}
	}
}

func (f *jsonFramer) what() string {
	return fmt.Sprintf("JSON watch event %d", f.events)
}

// maxJSONDepth is json-iterator's nesting limit: deeper events are refused
// by the framer as the decoder would refuse them.
const maxJSONDepth = 10000

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}
