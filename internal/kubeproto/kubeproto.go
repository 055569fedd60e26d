// Package kubeproto writes kube-apiserver's protobuf envelope by hand, for
// the servers in this repository (the simulator and the benchmark server),
// so that an object's message, encoded once, can be wrapped for any number
// of responses without re-encoding.
//
// A protobuf response is "k8s\x00" followed by a runtime.Unknown message:
//
//	Unknown   { 1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: "", 4: "" }
//
// where raw is the object's own message, or a list message
// {1: ListMeta, 2: item, 2: item, ...}. A protobuf watch stream is a
// sequence of frames, each a 4-byte big-endian length and a WatchEvent:
//
//	WatchEvent   { 1: type, 2: RawExtension{ 1: "k8s\x00" + Unknown } }
//
// The decoding side is internal/wire.
package kubeproto

import "encoding/binary"

// Magic starts every protobuf body.
const Magic = "k8s\x00"

// UnknownTrailer encodes Unknown's empty contentEncoding and contentType;
// it follows the raw bytes.
const UnknownTrailer = "\x1a\x00\x22\x00"

// VarintLen is the length of v as a protobuf varint.
func VarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// AppendField appends the tag and length of a length-delimited field.
func AppendField(b []byte, field int, length int) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	return binary.AppendUvarint(b, uint64(length))
}

// FieldLen is the length of a length-delimited field with its tag.
func FieldLen(field int, length int) int {
	return VarintLen(uint64(field)<<3|2) + VarintLen(uint64(length)) + length
}

func typeMetaLen(apiVersion, kind string) int {
	return FieldLen(1, len(apiVersion)) + FieldLen(2, len(kind))
}

// EnvelopeLen is the length of Magic + Unknown wrapping rawLen bytes.
func EnvelopeLen(apiVersion, kind string, rawLen int) int {
	return len(Magic) + FieldLen(1, typeMetaLen(apiVersion, kind)) + FieldLen(2, rawLen) + len(UnknownTrailer)
}

// AppendEnvelopeHead appends what precedes the raw bytes in an envelope;
// UnknownTrailer follows them.
func AppendEnvelopeHead(b []byte, apiVersion, kind string, rawLen int) []byte {
	b = append(b, Magic...)
	b = AppendField(b, 1, typeMetaLen(apiVersion, kind))
	b = AppendField(b, 1, len(apiVersion))
	b = append(b, apiVersion...)
	b = AppendField(b, 2, len(kind))
	b = append(b, kind...)
	return AppendField(b, 2, rawLen)
}

// Envelope returns Magic + Unknown{apiVersion, kind, raw}.
func Envelope(apiVersion, kind string, raw []byte) []byte {
	b := make([]byte, 0, EnvelopeLen(apiVersion, kind, len(raw)))
	b = AppendEnvelopeHead(b, apiVersion, kind, len(raw))
	b = append(b, raw...)
	return append(b, UnknownTrailer...)
}
