package apisim

import (
	"encoding/binary"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/kubeproto"
)

// Wire encodings, written by hand so that every object's bytes, encoded
// once per write, are reused as-is for every list and every watcher.
//
// The protobuf envelope and watch framing are described in
// internal/kubeproto, which writes the envelopes.

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
// precede the object's raw message; kubeproto.UnknownTrailer follows it.
func appendProtoEventHead(b []byte, typ string, obj encoded) []byte {
	env := kubeproto.EnvelopeLen(obj.apiVersion, obj.kind, len(obj.body))
	raw := kubeproto.FieldLen(1, env)                                   // RawExtension{raw}
	msg := kubeproto.FieldLen(1, len(typ)) + kubeproto.FieldLen(2, raw) // WatchEvent
	b = binary.BigEndian.AppendUint32(b, uint32(msg))
	b = kubeproto.AppendField(b, 1, len(typ))
	b = append(b, typ...)
	b = kubeproto.AppendField(b, 2, raw)
	b = kubeproto.AppendField(b, 1, env)
	return kubeproto.AppendEnvelopeHead(b, obj.apiVersion, obj.kind, len(obj.body))
}
