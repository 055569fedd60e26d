package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// widget is a custom resource's Go type as controller-gen makes it: JSON
// only, no protobuf Unmarshal.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

// valueObject implements runtime.Object on a non-pointer type.
type valueObject struct{}

func (valueObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (valueObject) DeepCopyObject() runtime.Object   { return valueObject{} }

func TestTypedCodec(t *testing.T) {
	if _, err := TypedCodec[valueObject](podGVK); err == nil || !strings.Contains(err.Error(), "not a pointer") {
		t.Fatalf("non-pointer type: got %v", err)
	}
	if _, err := TypedCodec[*corev1.Pod](schema.GroupVersionKind{Kind: "Pod"}); err == nil {
		t.Fatalf("GVK without a version was accepted")
	}
	c := mustCodec[*corev1.Pod](t, podGVK)
	if !c.SupportsProtobuf() || c.GroupVersionKind() != podGVK {
		t.Fatalf("pod codec: protobuf %v, gvk %v", c.SupportsProtobuf(), c.GroupVersionKind())
	}
}

func TestTypedCodecJSONOnlyType(t *testing.T) {
	gvk := schemaGVK("example.com", "v1", "Widget")
	c := mustCodec[*widget](t, gvk)
	if c.SupportsProtobuf() {
		t.Fatalf("a type without Unmarshal claims protobuf")
	}
	ev := nextJSON(t, `{"type":"ADDED","object":{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","managedFields":[{"manager":"m"}]},"spec":{"size":9007199254740993}}}`, c)
	if ev.Object.Name != "w" || ev.Object.Spec.Size != 9007199254740993 || len(ev.Object.ManagedFields) != 1 {
		t.Fatalf("got %+v", ev.Object)
	}
	ev = nextJSON(t, `{"type":"ADDED","object":{"metadata":{"name":"w","managedFields":[{"manager":"m"}]}}}`, mustCodec[*widget](t, gvk, WithoutManagedFields()))
	if ev.Object.ManagedFields != nil || ev.Object.Kind != "Widget" || ev.Object.APIVersion != "example.com/v1" {
		t.Fatalf("got %+v", ev.Object)
	}
	_, err := NewProtobufWatchDecoder(bytes.NewReader(nil), c, 0).Next()
	if !errors.Is(err, ErrProtobufUnsupported) {
		t.Fatalf("got %v", err)
	}
}

func TestHideManagedFields(t *testing.T) {
	pod := realisticPod(1)
	b, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hideManagedFields(b)
	var got corev1.Pod
	if err := got.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	want := withoutManagedFields(pod)
	want.TypeMeta = metav1.TypeMeta{}
	semanticEqual(t, &got, want)
	// Malformed input is left alone (and not a panic).
	for _, bad := range [][]byte{{0x0a}, {0x0a, 0x02, 0x8a}, {0x0a, 0x01, 0x8a}, {0xff}} {
		hideManagedFields(bad)
	}
}

func TestErrorMessages(t *testing.T) {
	wk := &WrongKindError{Got: schemaGVK("apps", "v1", "Deployment"), Want: podGVK}
	if wk.Error() != "object of the wrong kind: got Deployment apps/v1, want Pod v1" {
		t.Fatalf("got %q", wk.Error())
	}
	if (&WrongKindError{Want: podGVK}).Error() != "object of the wrong kind: got (no kind), want Pod v1" {
		t.Fatalf("got %q", (&WrongKindError{Want: podGVK}).Error())
	}
	se := &StatusError{Status: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: `pods is forbidden: User "x" cannot list resource "pods"`}}
	if se.Error() != `server returned Status Failure 403 Forbidden: pods is forbidden: User "x" cannot list resource "pods"` {
		t.Fatalf("got %q", se.Error())
	}
}
