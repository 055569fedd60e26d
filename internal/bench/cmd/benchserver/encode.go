package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/bench/fixture"
	"github.com/listwatch/listwatch/internal/kubeproto"
)

// Wire encodings, written by hand as kube-apiserver writes them, so that
// every object is encoded once at start-up and its bytes reused for every
// request.
//
// The protobuf envelope and watch framing are described in
// internal/kubeproto, which writes the envelopes.
//
// JSON list items carry no kind and apiVersion (the list has them); JSON
// watch objects do.

// appendProtoEvent appends one protobuf watch frame carrying the object
// message msg of the given kind.
func appendProtoEvent(b []byte, typ, kind string, msg []byte) []byte {
	env := kubeproto.EnvelopeLen("v1", kind, len(msg))
	raw := kubeproto.FieldLen(1, env)                                    // RawExtension{raw}
	size := kubeproto.FieldLen(1, len(typ)) + kubeproto.FieldLen(2, raw) // WatchEvent
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = kubeproto.AppendField(b, 1, len(typ))
	b = append(b, typ...)
	b = kubeproto.AppendField(b, 2, raw)
	b = kubeproto.AppendField(b, 1, env)
	b = kubeproto.AppendEnvelopeHead(b, "v1", kind, len(msg))
	b = append(b, msg...)
	return append(b, kubeproto.UnknownTrailer...)
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
// items follow, then kubeproto.UnknownTrailer.
func appendListProtoHead(b []byte, listKind string, lm metav1.ListMeta, itemsLen int) ([]byte, error) {
	meta, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	raw := kubeproto.FieldLen(1, len(meta)) + itemsLen
	b = kubeproto.AppendEnvelopeHead(b, "v1", listKind, raw)
	b = kubeproto.AppendField(b, 1, len(meta))
	return append(b, meta...), nil
}
