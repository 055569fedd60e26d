package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufMagic starts every protobuf object kube-apiserver sends.
var protobufMagic = []byte("k8s\x00")

// describeProtobuf summarises one protobuf-encoded object: its envelope
// (runtime.Unknown) and, for the kinds we know, the object itself as
// normalized JSON, so a golden file shows the bytes carry what the JSON
// form carries.
func describeProtobuf(data []byte) map[string]any {
	out := map[string]any{}
	if !bytes.HasPrefix(data, protobufMagic) {
		out["magic"] = false
		out["text"] = string(data)
		return out
	}
	out["magic"] = `k8s\x00`
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil {
		out["error"] = err.Error()
		return out
	}
	out["envelope"] = map[string]any{
		"apiVersion":      u.APIVersion,
		"kind":            u.Kind,
		"contentType":     u.ContentType,
		"contentEncoding": u.ContentEncoding,
	}
	var obj any
	switch u.Kind {
	case "Pod":
		obj = &corev1.Pod{}
	case "PodList":
		obj = &corev1.PodList{}
	case "Status":
		obj = &metav1.Status{}
	case "PartialObjectMetadata":
		obj = &metav1.PartialObjectMetadata{}
	case "PartialObjectMetadataList":
		obj = &metav1.PartialObjectMetadataList{}
	default:
		return out
	}
	if err := obj.(interface{ Unmarshal([]byte) error }).Unmarshal(u.Raw); err != nil {
		out["error"] = err.Error()
		return out
	}
	b, _ := json.Marshal(obj)
	var generic any
	_ = json.Unmarshal(b, &generic)
	out["object"] = normalize(generic)
	return out
}

// readProtobufFrames reads length-prefixed watch frames (4-byte big-endian
// length, then a metav1.WatchEvent) until max frames, EOF or an error, and
// describes each.
func readProtobufFrames(r io.Reader, max int, stop func(typ string, obj map[string]any) bool) ([]any, string) {
	var frames []any
	for len(frames) < max {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			if err == io.EOF {
				return frames, "EOF"
			}
			return frames, "error: " + err.Error()
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return frames, "error: " + err.Error()
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(buf); err != nil {
			frames = append(frames, map[string]any{"error": err.Error()})
			return frames, "error: undecodable frame"
		}
		obj := describeProtobuf(ev.Object.Raw)
		frames = append(frames, map[string]any{"type": ev.Type, "object": obj})
		if stop != nil {
			inner, _ := obj["object"].(map[string]any)
			if stop(ev.Type, inner) {
				return frames, "stop"
			}
		}
	}
	return frames, "stop"
}
