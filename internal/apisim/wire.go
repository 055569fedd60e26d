package apisim

import (
	"encoding/binary"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Wire encodings, written by hand so that every object's bytes, encoded
// once per write, are reused as-is for every list and every watcher.
//
// Protobuf responses are "k8s\x00" followed by a runtime.Unknown message:
//
//	Unknown   { 1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: "", 4: "" }
//
// where raw is the object's own message (or a list message whose items are
// the objects' messages). A protobuf watch stream is a sequence of frames,
// each a 4-byte big-endian length and a WatchEvent:
//
//	WatchEvent   { 1: type, 2: RawExtension{ 1: "k8s\x00" + Unknown } }

const protoMagic = "k8s\x00"

// unknownTrailer encodes Unknown's empty contentEncoding and contentType.
const unknownTrailer = "\x1a\x00\x22\x00"

func appendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendField appends the tag and length of a length-delimited field.
func appendField(b []byte, field int, length int) []byte {
	b = appendVarint(b, uint64(field)<<3|2)
	return appendVarint(b, uint64(length))
}

func fieldLen(field int, length int) int {
	return varintLen(uint64(field)<<3|2) + varintLen(uint64(length)) + length
}

func typeMetaLen(apiVersion, kind string) int {
	return fieldLen(1, len(apiVersion)) + fieldLen(2, len(kind))
}

// envelopeLen is the length of "k8s\x00" + Unknown wrapping rawLen bytes.
func envelopeLen(apiVersion, kind string, rawLen int) int {
	return len(protoMagic) + fieldLen(1, typeMetaLen(apiVersion, kind)) + fieldLen(2, rawLen) + len(unknownTrailer)
}

// appendEnvelopeHead appends what precedes the raw bytes in an envelope;
// unknownTrailer follows them.
func appendEnvelopeHead(b []byte, apiVersion, kind string, rawLen int) []byte {
	b = append(b, protoMagic...)
	b = appendField(b, 1, typeMetaLen(apiVersion, kind))
	b = appendField(b, 1, len(apiVersion))
	b = append(b, apiVersion...)
	b = appendField(b, 2, len(kind))
	b = append(b, kind...)
	return appendField(b, 2, rawLen)
}

// envelope returns "k8s\x00" + Unknown{apiVersion, kind, raw}.
func envelope(apiVersion, kind string, raw []byte) []byte {
	b := make([]byte, 0, envelopeLen(apiVersion, kind, len(raw)))
	b = appendEnvelopeHead(b, apiVersion, kind, len(raw))
	b = append(b, raw...)
	return append(b, unknownTrailer...)
}

// encoded is one object ready for the wire: JSON bytes, or a protobuf
// message with the type it must be wrapped as.
type encoded struct {
	apiVersion, kind string // protobuf only
	body             []byte
}

// encodedVersion returns v's bytes in format f.
func (c *collection) encodedVersion(v *version, f format) encoded {
	switch {
	case f.partial && f.metaV != "v1":
		return v.partialAs(f)
	case f.partial && f.proto:
		_, pb := v.partial()
		return encoded{apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadata", body: pb}
	case f.partial:
		js, _ := v.partial()
		return encoded{body: js}
	case f.proto:
		return encoded{apiVersion: c.res.APIVersion(), kind: c.res.Kind, body: v.proto}
	}
	return encoded{body: v.json}
}

// encodedStatus returns a Status in format f.
func encodedStatus(status *metav1.Status, f format) encoded {
	if f.proto {
		raw, _ := status.Marshal() // plain struct: cannot fail
		return encoded{apiVersion: "v1", kind: "Status", body: raw}
	}
	body, _ := json.Marshal(status) // plain struct: cannot fail
	return encoded{body: body}
}

// appendJSONEvent appends one line of a JSON watch stream.
func appendJSONEvent(b []byte, typ string, obj []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, "}\n"...)
}

// protoEventHead appends the length prefix and the WatchEvent bytes that
// precede the object's raw message; unknownTrailer follows it.
func appendProtoEventHead(b []byte, typ string, obj encoded) []byte {
	env := envelopeLen(obj.apiVersion, obj.kind, len(obj.body))
	raw := fieldLen(1, env)                         // RawExtension{raw}
	msg := fieldLen(1, len(typ)) + fieldLen(2, raw) // WatchEvent
	b = binary.BigEndian.AppendUint32(b, uint32(msg))
	b = appendField(b, 1, len(typ))
	b = append(b, typ...)
	b = appendField(b, 2, raw)
	b = appendField(b, 1, env)
	return appendEnvelopeHead(b, obj.apiVersion, obj.kind, len(obj.body))
}
