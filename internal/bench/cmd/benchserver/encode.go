package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/bench/fixture"
)

// Wire encodings, written by hand as kube-apiserver writes them, so that
// every object is encoded once at start-up and its bytes reused for every
// request.
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
// JSON list items carry no kind and apiVersion (the list has them); JSON
// watch objects do.

var protoMagic = []byte("k8s\x00")

// unknownTrailer encodes Unknown's empty contentEncoding and contentType.
var unknownTrailer = []byte{0x1a, 0x00, 0x22, 0x00}

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
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	return binary.AppendUvarint(b, uint64(length))
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

// appendProtoEvent appends one protobuf watch frame carrying the object
// message msg of the given kind.
func appendProtoEvent(b []byte, typ, kind string, msg []byte) []byte {
	env := envelopeLen("v1", kind, len(msg))
	raw := fieldLen(1, env)                          // RawExtension{raw}
	size := fieldLen(1, len(typ)) + fieldLen(2, raw) // WatchEvent
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = appendField(b, 1, len(typ))
	b = append(b, typ...)
	b = appendField(b, 2, raw)
	b = appendField(b, 1, env)
	b = appendEnvelopeHead(b, "v1", kind, len(msg))
	b = append(b, msg...)
	return append(b, unknownTrailer...)
}

// appendJSONEvent appends one line of a JSON watch stream; obj must carry
// its kind and apiVersion.
func appendJSONEvent(b []byte, typ string, obj []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, "}\n"...)
}

// appendJSONAdded appends an ADDED event for a list item, adding the kind
// and apiVersion that list items lack.
func appendJSONAdded(b []byte, kind string, item []byte) []byte {
	b = append(b, `{"type":"ADDED","object":{"kind":"`...)
	b = append(b, kind...)
	b = append(b, `","apiVersion":"v1",`...)
	b = append(b, item[1:]...)
	return append(b, "}\n"...)
}

type protoMarshaler interface{ Marshal() ([]byte, error) }

// encodeItem encodes obj as a list item: JSON without type metadata, or
// its protobuf message.
func encodeItem(obj fixture.Object, proto bool) ([]byte, error) {
	if proto {
		m, ok := obj.(protoMarshaler)
		if !ok {
			return nil, fmt.Errorf("%T has no protobuf form", obj)
		}
		return m.Marshal()
	}
	return json.Marshal(obj)
}

// encodeEvent encodes one complete watch event (a JSON line or a protobuf
// frame) of type typ carrying obj.
func encodeEvent(k fixture.Kind, typ string, obj fixture.Object, proto bool) ([]byte, error) {
	if proto {
		msg, err := encodeItem(obj, true)
		if err != nil {
			return nil, err
		}
		return appendProtoEvent(nil, typ, k.Kind, msg), nil
	}
	obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(k.Kind))
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return appendJSONEvent(nil, typ, js), nil
}

// bookmarkObject is the object of the BOOKMARK that ends a streaming list:
// only a resourceVersion and the initial-events-end annotation.
func bookmarkObject(k fixture.Kind, rv uint64) fixture.Object {
	meta := metav1.ObjectMeta{
		ResourceVersion: fmt.Sprint(rv),
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}
	if k.Kind == "ConfigMap" {
		return &corev1.ConfigMap{ObjectMeta: meta}
	}
	return &corev1.Pod{ObjectMeta: meta}
}

// appendListJSONHead appends a JSON list up to the opening of its items.
func appendListJSONHead(b []byte, listKind string, lm metav1.ListMeta) ([]byte, error) {
	meta, err := json.Marshal(lm)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"kind":"`...)
	b = append(b, listKind...)
	b = append(b, `","apiVersion":"v1","metadata":`...)
	b = append(b, meta...)
	return append(b, `,"items":[`...), nil
}

// appendListProtoHead appends the envelope and ListMeta of a protobuf list
// whose items (field 2 each) total itemsLen bytes with their tags; the
// items follow, then unknownTrailer.
func appendListProtoHead(b []byte, listKind string, lm metav1.ListMeta, itemsLen int) ([]byte, error) {
	meta, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	raw := fieldLen(1, len(meta)) + itemsLen
	b = appendEnvelopeHead(b, "v1", listKind, raw)
	b = appendField(b, 1, len(meta))
	return append(b, meta...), nil
}
