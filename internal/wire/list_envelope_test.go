package wire

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kjson "sigs.k8s.io/json"
)

// List envelopes that client-go refuses are refused. None of them is what
// kube-apiserver's encoders write (one typeMeta, first; ListMeta's fields
// of their wire types; a string apiVersion): a proxy that re-encodes could
// send them, and a list taken where client-go fails would fill the cache
// with what it fails on.

// clientGoPodList decodes body as client-go's Result.Into(&PodList{})
// does: a Status that is not Success is an error.
func clientGoPodList(t *testing.T, body []byte) error {
	s := testScheme(t)
	out, _, err := runtime.WithoutVersionDecoder{Decoder: protobuf.NewSerializer(s, s)}.Decode(body, nil, &corev1.PodList{})
	if err != nil {
		return err
	}
	if st, ok := out.(*metav1.Status); ok && st.Status != metav1.StatusSuccess {
		return fmt.Errorf("Status %d %s", st.Code, st.Reason)
	}
	return nil
}

func typeMetaField(apiVersion, kind string) []byte {
	var b []byte
	if apiVersion != "" {
		b = append(b, tagged(1, []byte(apiVersion))...)
	}
	if kind != "" {
		b = append(b, tagged(2, []byte(kind))...)
	}
	return tagged(1, b)
}

func protobufBody(fields ...[]byte) []byte {
	return append([]byte("k8s\x00"), bytes.Join(fields, nil)...)
}

// The kind of a protobuf list is the envelope's final one, a typeMeta
// without a kind keeping the kind before (runtime.Unknown's Unmarshal
// merges them), whatever the order of the fields. A Status followed by a
// kind-less typeMeta, or a raw before its typeMeta, was read as a list.
func TestProtobufListKindIsTheEnvelopesFinalOne(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	status := goneStatus()
	status.Status = "" // else its field 2, "Failure", is an item that does not decode
	statusRaw, err := status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	listRaw, err := (&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "123"}, Items: []corev1.Pod{*realisticPod(1)}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"a Status, then a typeMeta without a kind":        protobufBody(typeMetaField("v1", "Status"), typeMetaField("v1", ""), tagged(2, statusRaw)),
		"a Status, a kind-less typeMeta, a PodList's raw": protobufBody(typeMetaField("v1", "Status"), typeMetaField("v1", ""), tagged(2, listRaw)),
		"a raw before its typeMeta, a Status":             protobufBody(tagged(2, statusRaw), typeMetaField("v1", "Status")),
	} {
		t.Run(name, func(t *testing.T) {
			if clientGoPodList(t, body) == nil {
				t.Fatal("client-go takes it: the case is wrong")
			}
			var got []*corev1.Pod
			if meta, err := DecodeProtobufList(bytes.NewReader(body), c, 0, collect(&got)); err == nil {
				t.Errorf("a list of %d items at resourceVersion %q, where client-go fails", len(got), meta.ResourceVersion)
			}
		})
	}
	// What client-go takes is taken: the kind decides where it ends up.
	for name, body := range map[string][]byte{
		"a kind-less typeMeta after a PodList's":        protobufBody(typeMetaField("v1", "PodList"), typeMetaField("v1", ""), tagged(2, listRaw)),
		"a raw before its PodList typeMeta":             protobufBody(tagged(2, listRaw), typeMetaField("v1", "PodList")),
		"an empty kind after the list (as gogo writes)": protobufBody(typeMetaField("v1", "PodList"), tagged(2, listRaw), gogoTypeMeta(t, "v1", "")),
		"a ConfigMapList's typeMeta, then a PodList's":  protobufBody(typeMetaField("v1", "ConfigMapList"), typeMetaField("v1", "PodList"), tagged(2, listRaw)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := clientGoPodList(t, body); err != nil {
				t.Fatalf("client-go refuses it: the case is wrong: %v", err)
			}
			var got []*corev1.Pod
			if meta, err := DecodeProtobufList(bytes.NewReader(body), c, 0, collect(&got)); err != nil || len(got) != 1 || meta.ResourceVersion != "123" {
				t.Errorf("%d items at %q, %v; client-go takes 1 at 123", len(got), meta.ResourceVersion, err)
			}
		})
	}
}

// gogoTypeMeta is a typeMeta as runtime.TypeMeta's Marshal writes it: an
// empty kind is a field present and empty (12 00), not left out.
func gogoTypeMeta(t *testing.T, apiVersion, kind string) []byte {
	b, err := (&runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return tagged(1, b)
}

// ListMeta's selfLink (1) and shardInfo (5) are not kept, but of another
// wire type, or a shardInfo that is no ShardInfo, they fail the list, as
// ListMeta's Unmarshal fails.
func TestProtobufListMetaFieldsNotKeptAreChecked(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for name, meta := range map[string][]byte{
		"selfLink a varint":             append(varintField(1, 3), tagged(2, []byte("5"))...),
		"shardInfo a varint":            append(tagged(2, []byte("5")), varintField(5, 1)...),
		"shardInfo's selector a varint": append(tagged(2, []byte("5")), tagged(5, varintField(1, 1))...),
	} {
		t.Run(name, func(t *testing.T) {
			body := protobufBody(typeMetaField("v1", "PodList"), tagged(2, tagged(1, meta)))
			if clientGoPodList(t, body) == nil {
				t.Fatal("client-go takes it: the case is wrong")
			}
			var got []*corev1.Pod
			if meta, err := DecodeProtobufList(bytes.NewReader(body), c, 0, collect(&got)); err == nil {
				t.Errorf("the list taken at resourceVersion %q, where client-go fails", meta.ResourceVersion)
			}
		})
	}
}

// A JSON list's apiVersion is not checked, but it is a string (or null), as
// apimachinery reads it.
func TestJSONListAPIVersionIsAString(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for _, v := range []string{`{}`, `[]`, `1`, `null`} {
		body := []byte(`{"kind":"PodList","apiVersion":` + v + `,"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","namespace":"n"}}]}`)
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts(body, &corev1.PodList{})
		var got []*corev1.Pod
		_, err := DecodeJSONList(bytes.NewReader(body), c, 0, collect(&got))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("apiVersion %s: %v, where apimachinery gives %v", v, err, wantErr)
		}
	}
}
