package wire

import (
	"bytes"
	"errors"
	"fmt"
)

// A hand-written reader of the protobuf wire format, enough for the
// envelopes around Kubernetes objects (WatchEvent, runtime.Unknown, the
// XxxList messages, ListMeta). It works on slices of the caller's buffer and
// allocates nothing; the objects themselves are decoded by their generated
// Unmarshal methods.
//
// Wire format: a message is a sequence of fields; each starts with a varint
// tag (field number << 3 | wire type), followed by a varint (type 0), 8
// bytes (1), a varint length and that many bytes (2), or 4 bytes (5).

// protobufMagic starts every protobuf body and embedded object:
// "k8s" and a zero byte, then a runtime.Unknown.
var protobufMagic = []byte("k8s\x00")

// The wire types this reader understands. Groups (3, 4) are not used by
// Kubernetes and are rejected.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

const maxFieldNumber = 1<<29 - 1

// errProtobuf is wrapped into ErrMalformed by the callers, with context.
var errProtobuf = errors.New("invalid protobuf")

// consumeVarint decodes the varint at the start of b. n is 0 when b ends
// inside it or it is longer than the 10 bytes a uint64 needs.
func consumeVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// protoField is one field of a message. For wire type 2, data is a slice
// of the message's buffer (writes go through to it).
type protoField struct {
	num    uint64
	typ    uint64
	varint uint64
	data   []byte
}

// nextField reads the field at the start of b and returns the bytes after it.
func nextField(b []byte) (f protoField, rest []byte, err error) {
	tag, n := consumeVarint(b)
	if n == 0 {
		return f, nil, fmt.Errorf("%w: truncated field tag", errProtobuf)
	}
	b = b[n:]
	f.num, f.typ = tag>>3, tag&7
	if f.num == 0 || f.num > maxFieldNumber {
		return f, nil, fmt.Errorf("%w: field number %d", errProtobuf, f.num)
	}
	switch f.typ {
	case wireVarint:
		f.varint, n = consumeVarint(b)
		if n == 0 {
			return f, nil, fmt.Errorf("%w: field %d: truncated varint", errProtobuf, f.num)
		}
		return f, b[n:], nil
	case wireFixed64:
		if len(b) < 8 {
			return f, nil, fmt.Errorf("%w: field %d: truncated fixed64", errProtobuf, f.num)
		}
		return f, b[8:], nil
	case wireFixed32:
		if len(b) < 4 {
			return f, nil, fmt.Errorf("%w: field %d: truncated fixed32", errProtobuf, f.num)
		}
		return f, b[4:], nil
	case wireBytes:
		l, n := consumeVarint(b)
		if n == 0 {
			return f, nil, fmt.Errorf("%w: field %d: truncated length", errProtobuf, f.num)
		}
		b = b[n:]
		if l > uint64(len(b)) {
			return f, nil, fmt.Errorf("%w: field %d: length %d exceeds the %d bytes left", errProtobuf, f.num, l, len(b))
		}
		f.data = b[:l]
		return f, b[l:], nil
	default:
		return f, nil, fmt.Errorf("%w: field %d: unsupported wire type %d", errProtobuf, f.num, f.typ)
	}
}

// bytesField checks that f is length-delimited, as a string, bytes or
// message field must be.
func bytesField(f protoField, name string) ([]byte, error) {
	if f.typ != wireBytes {
		return nil, fmt.Errorf("%w: %s has wire type %d, want 2", errProtobuf, name, f.typ)
	}
	return f.data, nil
}

// unknown is a runtime.Unknown: the envelope around every protobuf object
// (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
// contentType = 4).
type unknown struct {
	apiVersion, kind []byte
	raw              []byte
	contentEncoding  []byte
	contentType      []byte
}

// parseEnvelope checks the k8s\x00 magic and parses the runtime.Unknown
// after it.
func parseEnvelope(b []byte) (u unknown, err error) {
	if !bytes.HasPrefix(b, protobufMagic) {
		return u, fmt.Errorf("%w: object does not start with the k8s\\x00 protobuf prefix", errProtobuf)
	}
	b = b[len(protobufMagic):]
	if len(b) == 0 {
		return u, fmt.Errorf("%w: empty body after the k8s\\x00 prefix", errProtobuf)
	}
	for len(b) > 0 {
		var f protoField
		if f, b, err = nextField(b); err != nil {
			return u, err
		}
		switch f.num {
		case 1:
			tm, err := bytesField(f, "Unknown.typeMeta")
			if err != nil {
				return u, err
			}
			// A typeMeta given twice is merged, as runtime.Unknown's
			// generated Unmarshal merges it.
			apiVersion, kind, err := parseTypeMeta(tm)
			if err != nil {
				return u, err
			}
			if apiVersion != nil {
				u.apiVersion = apiVersion
			}
			if kind != nil {
				u.kind = kind
			}
		case 2:
			if u.raw, err = bytesField(f, "Unknown.raw"); err != nil {
				return u, err
			}
		case 3:
			if u.contentEncoding, err = bytesField(f, "Unknown.contentEncoding"); err != nil {
				return u, err
			}
		case 4:
			if u.contentType, err = bytesField(f, "Unknown.contentType"); err != nil {
				return u, err
			}
		}
	}
	return u, u.check()
}

// check refuses what this package cannot decode: the raw bytes must be
// plain protobuf.
func (u *unknown) check() error {
	if len(u.contentEncoding) != 0 {
		return fmt.Errorf("%w: unsupported content encoding %q", errProtobuf, u.contentEncoding)
	}
	if len(u.contentType) != 0 && !bytes.HasPrefix(u.contentType, []byte("application/vnd.kubernetes.protobuf")) {
		return fmt.Errorf("%w: unsupported content type %q", errProtobuf, u.contentType)
	}
	return nil
}

func parseTypeMeta(b []byte) (apiVersion, kind []byte, err error) {
	for len(b) > 0 {
		var f protoField
		if f, b, err = nextField(b); err != nil {
			return nil, nil, err
		}
		switch f.num {
		case 1:
			apiVersion, err = bytesField(f, "TypeMeta.apiVersion")
		case 2:
			kind, err = bytesField(f, "TypeMeta.kind")
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return apiVersion, kind, nil
}

// hideManagedFields relabels, in place, each managedFields entry of an
// object's metadata (the object's field 1, ObjectMeta's field 17) as field
// 2047, which ObjectMeta does not have: the generated Unmarshal then skips
// the entries without allocating. Only the canonical two-byte tag 0x8a 0x01
// is rewritten (to 0xfa 0x7f, the same length); a message it cannot parse
// is left alone for Unmarshal to report.
func hideManagedFields(obj []byte) {
	for b := obj; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return
		}
		if f.num == 1 && f.typ == wireBytes {
			for m := f.data; len(m) > 0; {
				g, mrest, err := nextField(m)
				if err != nil {
					return
				}
				if g.num == 17 && g.typ == wireBytes && m[0] == 0x8a && m[1] == 0x01 {
					m[0], m[1] = 0xfa, 0x7f
				}
				m = mrest
			}
		}
		b = rest
	}
}
