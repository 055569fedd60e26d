package wire

import (
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxRetainedFrame is the largest read buffer a ProtobufWatchDecoder keeps
// between events; a larger frame gets a buffer of its own that the garbage
// collector reclaims once the event is decoded.
const maxRetainedFrame = 1 << 20

// ProtobufWatchDecoder reads a protobuf watch stream (Content-Type
// application/vnd.kubernetes.protobuf;stream=watch). Each frame is a 4-byte
// big-endian length and a metav1.WatchEvent {type = 1, object = 2
// (RawExtension {raw = 1})}; the raw bytes are "k8s\x00" and a
// runtime.Unknown {typeMeta = 1, raw = 2, ...} wrapping the object.
//
// Each frame is read into one reused buffer (frames over 1 MiB into their
// own) and parsed in place: the envelopes are walked by hand, and only the
// object's own bytes go through its decoder (compiled from the type, or the
// generated Unmarshal), which copies what it keeps, so objects never alias
// the buffer.
//
// A ProtobufWatchDecoder is not safe for concurrent use. The zero value is
// not usable; call NewProtobufWatchDecoder.
type ProtobufWatchDecoder[T any] struct {
	frames protobufFramer
	codec  *Codec[T]
	buf    []byte
	err    error // sticky
}

// NewProtobufWatchDecoder returns a decoder reading events from r (the
// response body; the caller closes it). A frame longer than maxFrame bytes
// (zero or less: DefaultMaxFrameBytes) fails with ErrFrameTooLarge before
// anything is allocated for it. If the codec has no protobuf form, Next
// fails with ErrProtobufUnsupported.
func NewProtobufWatchDecoder[T any](r io.Reader, codec *Codec[T], maxFrame int) *ProtobufWatchDecoder[T] {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	return &ProtobufWatchDecoder[T]{frames: protobufFramer{r: r, max: maxFrame}, codec: codec}
}

// Next decodes the next event, with the same contract as
// JSONWatchDecoder.Next: io.EOF at a clean end between frames; after a
// *WrongKindError the decoder may be used again; after any other error it
// is finished and the caller reconnects. A stream cut inside the length
// prefix or inside a frame gives io.ErrUnexpectedEOF.
func (d *ProtobufWatchDecoder[T]) Next() (ev Event[T], err error) {
	if d.err != nil {
		return Event[T]{}, d.err
	}
	defer func() {
		if err != nil && !errors.Is(err, ErrWrongKind) {
			d.err = err
		}
	}()
	if !d.codec.SupportsProtobuf() {
		return Event[T]{}, unsupportedProtobuf(d.codec)
	}
	frame, n, err := d.frames.next(d.buf)
	if err != nil {
		return Event[T]{}, err
	}
	if cap(frame) <= maxRetainedFrame {
		d.buf = frame
	}
	return decodeProtobufEvent(d.codec, frame, n)
}

func unsupportedProtobuf[T any](codec *Codec[T]) error {
	return fmt.Errorf("protobuf watch of %s: %w", codec.objKind, ErrProtobufUnsupported)
}

// decodeProtobufEvent decodes event n of a stream from its frame. It never
// panics: a panic in a generated Unmarshal is reported as ErrMalformed.
func decodeProtobufEvent[T any](codec *Codec[T], frame []byte, n int) (ev Event[T], err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = Event[T]{}, fmt.Errorf("%w: protobuf watch event %d: decoder panicked: %v", ErrMalformed, n, r)
		}
	}()
	return protobufEvent[T]{codec: codec, n: n}.decode(frame)
}

// protobufEvent is one frame being decoded: the codec, and the event's
// number for error messages.
type protobufEvent[T any] struct {
	codec *Codec[T]
	n     int
}

// decode parses one WatchEvent in place.
func (d protobufEvent[T]) decode(frame []byte) (Event[T], error) {
	var (
		typ      []byte
		typeSeen bool
		object   []byte // RawExtension.raw
	)
	for b := frame; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return Event[T]{}, d.malformed("WatchEvent", err)
		}
		switch f.num {
		case 1:
			if typ, err = bytesField(f, "WatchEvent.type"); err != nil {
				return Event[T]{}, d.malformed("WatchEvent", err)
			}
			typeSeen = true
		case 2:
			ext, err := bytesField(f, "WatchEvent.object")
			if err != nil {
				return Event[T]{}, d.malformed("WatchEvent", err)
			}
			raw, err := rawExtension(ext)
			if err != nil {
				return Event[T]{}, d.malformed("WatchEvent.object", err)
			}
			if raw != nil { // merged: a RawExtension without raw keeps the one before
				object = raw
			}
		}
		b = rest
	}
	if !typeSeen {
		return Event[T]{}, fmt.Errorf("%w: %s has no type", ErrMalformed, d.what())
	}
	t, ok := parseEventType(string(typ)) // inlined: the bytes are not copied
	if !ok {
		return Event[T]{}, fmt.Errorf("%s: %w %q", d.what(), ErrUnknownEventType, typ)
	}
	if len(object) == 0 {
		return Event[T]{}, fmt.Errorf("%s (%s): %w", d.what(), t, ErrMissingObject)
	}
	u, err := parseEnvelope(object)
	if err != nil {
		return Event[T]{}, d.malformed("object envelope", err)
	}
	if t == Error {
		if len(u.kind) != 0 && string(u.kind) != "Status" {
			// Not a Status: what it is is all it tells (rest.FromStatus
			// says so), as the JSON decoder's Status keeps only the kind.
			return Event[T]{Type: t, Status: &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: string(u.apiVersion), Kind: string(u.kind)}}}, nil
		}
		status, err := unmarshalStatus(u.raw)
		if err != nil {
			return Event[T]{}, fmt.Errorf("%s (ERROR): %w", d.what(), err)
		}
		return Event[T]{Type: t, Status: status}, nil
	}
	if !d.codec.accepts(string(u.apiVersion), string(u.kind)) {
		return Event[T]{Type: t}, fmt.Errorf("%s (%s): %w", d.what(), t, d.codec.wrongKind(string(u.apiVersion), string(u.kind)))
	}
	obj, err := d.codec.decodeProto(u.raw)
	if err != nil {
		return Event[T]{}, fmt.Errorf("%s (%s): %w", d.what(), t, err)
	}
	return Event[T]{Type: t, Object: obj}, nil
}

// rawExtension returns the raw field (1) of a runtime.RawExtension.
func rawExtension(b []byte) (raw []byte, err error) {
	for len(b) > 0 {
		var f protoField
		if f, b, err = nextField(b); err != nil {
			return nil, err
		}
		if f.num == 1 {
			if raw, err = bytesField(f, "RawExtension.raw"); err != nil {
				return nil, err
			}
		}
	}
	return raw, nil
}

func (d protobufEvent[T]) malformed(part string, err error) error {
	return fmt.Errorf("%w: %s: %s: %v", ErrMalformed, d.what(), part, err)
}

func (d protobufEvent[T]) what() string {
	return fmt.Sprintf("protobuf watch event %d", d.n)
}
