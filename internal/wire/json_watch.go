package wire

import (
	"errors"
	"fmt"
	"io"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxFrameBytes is the limit on one watch event used when a decoder
// is given a limit of zero or less.
const DefaultMaxFrameBytes = 64 << 20

// JSONWatchDecoder reads a JSON watch stream (Content-Type application/json,
// the body of GET ...?watch=1): a sequence of objects
// {"type":"ADDED","object":{...}}, usually separated by newlines, which the
// decoder does not rely on.
//
// Each event is decoded in one pass: the object goes straight into a new T
// (or, for ERROR, into a metav1.Status) as the bytes arrive, through a
// 32 KiB read buffer. Beyond that buffer and what the object keeps, an
// event holds more only when it must: an object sent before its "type" is
// held whole until the type is known, a string longer than the buffer is
// collected whole, and with shared parts a part that crosses the buffer's
// end is copied out to be looked up.
//
// A JSONWatchDecoder is not safe for concurrent use. The zero value is not
// usable; call NewJSONWatchDecoder.
type JSONWatchDecoder[T any] struct {
	codec  *Codec[T]
	src    *window
	it     *jsoniter.Iterator
	events int   // events started, for error messages
	err    error // sticky: once set, every Next returns it
}

// NewJSONWatchDecoder returns a decoder reading events from r (the response
// body; the caller closes it). An event larger than maxFrame bytes (zero or
// less: DefaultMaxFrameBytes) fails with ErrFrameTooLarge.
func NewJSONWatchDecoder[T any](r io.Reader, codec *Codec[T], maxFrame int) *JSONWatchDecoder[T] {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	src := &window{r: r, limit: int64(maxFrame)}
	src.it = jsoniter.Parse(codec.json, src, readBufferSize)
	return &JSONWatchDecoder[T]{codec: codec, src: src, it: src.it}
}

// newJSONFrameDecoder returns a decoder of whole events already cut from
// the stream by a jsonFramer: decodeFrame decodes one of them in place.
func newJSONFrameDecoder[T any](codec *Codec[T]) *JSONWatchDecoder[T] {
	it := jsoniter.ParseBytes(codec.json, nil)
	return &JSONWatchDecoder[T]{codec: codec, src: &window{it: it}, it: it}
}

// decodeFrame decodes event n from its bytes, as Next would have from the
// stream. The event's objects do not alias frame.
func (d *JSONWatchDecoder[T]) decodeFrame(frame []byte, n int) (Event[T], error) {
	d.it.ResetBytes(frame)
	d.it.Error = nil
	d.events, d.err = n-1, nil
	ev, err := d.Next()
	d.it.ResetBytes(nil)
	return ev, err
}

// Next decodes the next event. It returns io.EOF when the stream ends
// cleanly between events, and otherwise:
//   - a *WrongKindError (errors.Is ErrWrongKind) for an object of another
//     kind, with an Event that holds only the event's Type (a DELETED
//     the caller cannot apply): the event was consumed and Next may be
//     called again;
//   - any other error (ErrMalformed, ErrUnknownEventType, ErrMissingObject,
//     ErrFrameTooLarge, io.ErrUnexpectedEOF for a stream cut inside an
//     event, or the body's read error): the decoder is finished, every
//     later call returns the same error, and the caller closes the body and
//     reconnects.
func (d *JSONWatchDecoder[T]) Next() (ev Event[T], err error) {
	if d.err != nil {
		return Event[T]{}, d.err
	}
	defer func() {
		if r := recover(); r != nil {
			ev, err = Event[T]{}, fmt.Errorf("%w: watch event %d: decoder panicked: %v", ErrMalformed, d.events, r)
		}
		if err != nil && !errors.Is(err, ErrWrongKind) {
			d.err = err
		}
	}()
	return d.next()
}

func (d *JSONWatchDecoder[T]) next() (Event[T], error) {
	d.src.reset()
	it := d.it
	switch it.WhatIsNext() {
	case jsoniter.ObjectValue:
	case jsoniter.InvalidValue:
		if it.Error == io.EOF && d.src.readErr == nil && !d.src.tooLarge {
			return Event[T]{}, io.EOF // nothing but whitespace since the last event
		}
		d.events++
		return Event[T]{}, d.src.failure(it, d.what(), ErrFrameTooLarge)
	default:
		d.events++
		it.ReportError("read watch event", "expected a JSON object")
		return Event[T]{}, d.src.failure(it, d.what(), ErrFrameTooLarge)
	}
	d.events++

	var (
		ev          Event[T]
		typeSeen    bool
		unknownType string // an unknown event type, reported after the object is read
		objSeen     bool
		raw         []byte    // the object, when it came before "type"
		decodedFor  EventType // the type the object was decoded for, when it came after "type"
		kindErr     error     // the object is not ours: reported once the event is read
	)
	it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		switch field {
		case "type":
			s := it.ReadString()
			if t, ok := parseEventType(s); ok {
				ev.Type, typeSeen, unknownType = t, true, ""
			} else {
				ev.Type, typeSeen, unknownType = "", false, s
			}
		case "object":
			if it.ReadNil() {
				objSeen = false
				return true
			}
			objSeen = true
			if !typeSeen {
				// Legal JSON, never sent by kube-apiserver: keep the
				// value's bytes until the type says what it is, and
				// decode them then, as they came (read into a map and
				// written again, numbers lost their digits and duplicate
				// keys their merging). On a stream cut inside the value,
				// the window keeps json-iterator from capturing its whole
				// buffer again at every level (window.fail).
				raw = skipAndReturnBytes(it)
				return it.Error == nil
			}
			raw, decodedFor = nil, ev.Type
			ev.Object, ev.Status, kindErr = d.decodeObject(it, ev.Type)
		default:
			skipValue(it)
		}
		return it.Error == nil
	})
	if it.Error != nil {
		return Event[T]{}, d.src.failure(it, d.what(), ErrFrameTooLarge)
	}
	switch {
	case unknownType != "":
		return Event[T]{}, fmt.Errorf("%s: %w %q", d.what(), ErrUnknownEventType, unknownType)
	case !typeSeen:
		return Event[T]{}, fmt.Errorf("%w: %s has no \"type\"", ErrMalformed, d.what())
	case !objSeen:
		return Event[T]{}, fmt.Errorf("%s (%s): %w", d.what(), ev.Type, ErrMissingObject)
	case raw == nil && (decodedFor == Error) != (ev.Type == Error):
		// "type" met again after the object, saying ERROR where it did
		// not or the other way round: the object was read as the other.
		return Event[T]{}, fmt.Errorf("%w: %s: \"type\" %s after an object read for %s", ErrMalformed, d.what(), ev.Type, decodedFor)
	case raw != nil:
		bit := jsoniter.ParseBytes(d.codec.json, raw)
		ev.Object, ev.Status, kindErr = d.decodeObject(bit, ev.Type)
		if bit.Error != nil {
			return Event[T]{}, fmt.Errorf("%w: %s: %s", ErrMalformed, d.what(), withoutData(bit.Error))
		}
	}
	if kindErr != nil {
		return Event[T]{Type: ev.Type}, kindErr
	}
	return ev, nil
}

// decodeObject reads the event's object: a Status for ERROR, a T otherwise.
// A syntax error is left in it.Error; the returned error is for a
// well-formed object of the wrong kind.
func (d *JSONWatchDecoder[T]) decodeObject(it *jsoniter.Iterator, typ EventType) (T, *metav1.Status, error) {
	var zero T
	if typ == Error {
		// Read as a Status only if it is one: another object (a server's
		// bug) may not fit a Status, and its kind is what the error can
		// tell about it (rest.FromStatus), as from protobuf.
		raw := skipAndReturnBytes(it)
		if it.Error != nil {
			return zero, nil, nil
		}
		var tm metav1.TypeMeta
		if err := d.codec.json.Unmarshal(raw, &tm); err == nil && tm.Kind != "" && tm.Kind != "Status" {
			return zero, &metav1.Status{TypeMeta: tm}, nil
		}
		status := new(metav1.Status)
		if err := d.codec.json.Unmarshal(raw, status); err != nil {
			it.ReportError("ERROR event", err.Error())
			return zero, nil, nil
		}
		return zero, status, nil
	}
	obj := d.codec.readJSON(it)
	if it.Error != nil {
		return zero, nil, nil
	}
	if err := d.codec.finishJSON(obj); err != nil {
		return zero, nil, fmt.Errorf("%s (%s): %w", d.what(), typ, err)
	}
	return obj, nil, nil
}

func (d *JSONWatchDecoder[T]) what() string {
	return fmt.Sprintf("JSON watch event %d", d.events)
}
