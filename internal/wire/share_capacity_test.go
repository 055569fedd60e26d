package wire

import (
	"encoding/json"
	certv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// With shared parts, two cached objects may hold the same map, slice or
// struct: a slice in a shared part must have no spare capacity, or a
// handler's append to one object's value writes into the array the other
// object's value has too (each handler appending to its own copy, as the
// rules allow). Each test here failed before the part was clipped.

// Two Secrets with the same data share the Data map (WithSharedParts, JSON).
// Its []byte values come from base64 with spare capacity (DecodedLen of
// "YQ==" is 3, the value 1 byte), so a handler that appends to its
// Secret's value writes into the array the other Secret's value has too.
func TestJSONSharedBase64BytesHaveNoSpareCapacity(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	data := []byte(`{"metadata":{"name":"s"},"data":{"k":"YQ=="}}`)
	var a, b corev1.Secret
	if err := api.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if err := api.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	va, vb := a.Data["k"], b.Data["k"]
	x := append(va, 'x') // handler of a, on its own copy
	_ = append(vb, 'y')  // handler of b, on its own copy
	if string(x) != "ax" {
		t.Fatalf("appending to b's Data[k] changed a's appended copy: %q (cap %d, len %d)", x, cap(va), len(va))
	}
}

// An opaque device configuration (a pointer part) shared by two
// ResourceClaims holds a runtime.RawExtension whose UnmarshalJSON appends
// into Raw[:0]: its Raw has spare capacity, which both claims then share.
func TestJSONSharedRawExtensionHasNoSpareCapacity(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	data := []byte(`{"metadata":{"name":"c"},"spec":{"devices":{"config":[{"opaque":{"driver":"d","parameters":{"a":1}}}]}}}`)
	var a, b resourcev1.ResourceClaim
	if err := api.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if err := api.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	ra := a.Spec.Devices.Config[0].Opaque.Parameters.Raw
	rb := b.Spec.Devices.Config[0].Opaque.Parameters.Raw
	x := append(ra, 'x')
	_ = append(rb, 'y')
	if x[len(x)-1] != 'x' {
		t.Fatalf("appending to b's parameters changed a's appended copy: %q (len %d, cap %d, shared %v)", x, len(ra), cap(ra), &ra[0] == &rb[0])
	}
}

type withRawMessage struct {
	P *struct {
		R json.RawMessage `json:"r"`
	} `json:"p"`
}

// A json.RawMessage inside a shared part has spare capacity too.
func TestJSONSharedRawMessageHasNoSpareCapacity(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	data := []byte(`{"p":{"r":{"a":1}}}`)
	var a, b withRawMessage
	if err := api.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if err := api.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	ra, rb := a.P.R, b.P.R
	x := append(ra, 'x')
	_ = append(rb, 'y')
	if x[len(x)-1] != 'x' {
		t.Fatalf("appending to b's raw message changed a's appended copy: %q (len %d, cap %d, shared %v)", x, len(ra), cap(ra), a.P == b.P)
	}
}

// Two CSRs with the same extra share the Extra map (compiled protobuf
// decoder, parts shared). Its ExtraValue values are decoded by their
// generated Unmarshal, which appends item by item: three items sit in an
// array of four, which both CSRs' values then share.
func TestProtoSharedNamedSliceHasNoSpareCapacity(t *testing.T) {
	csr := &certv1.CertificateSigningRequest{}
	csr.Name = "c"
	csr.Spec.Extra = map[string]certv1.ExtraValue{"k": {"a", "b", "c"}}
	data, err := csr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	parts := newPartTable()
	typ := reflect.TypeFor[certv1.CertificateSigningRequest]()
	_, a, _, errA := decodeBoth(typ, data, nil, parts)
	_, b, _, errB := decodeBoth(typ, data, nil, parts)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	va := a.(*certv1.CertificateSigningRequest).Spec.Extra["k"]
	vb := b.(*certv1.CertificateSigningRequest).Spec.Extra["k"]
	x := append(va, "x")
	_ = append(vb, "y")
	if x[3] != "x" {
		t.Fatalf("appending to b's Extra[k] changed a's appended copy: %q (len %d, cap %d)", x, len(va), cap(va))
	}
}

type withRawArray struct {
	P *struct {
		A [1]runtime.RawExtension `json:"a"`
	} `json:"p"`
}

// A key met again merges into a deep copy of the shared part it holds
// (unshare). deepCopy left arrays as they were, so a RawExtension in an
// array, whose UnmarshalJSON appends into Raw[:0], wrote into the part
// that the object decoded before holds.
func TestJSONSharedPartMetAgainInsideAnArrayIsCopied(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	var a, b withRawArray
	if err := api.Unmarshal([]byte(`{"p":{"a":[{"x":1}]}}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := api.Unmarshal([]byte(`{"p":{"a":[{"x":1}]},"p":{"a":[{"y":2}]}}`), &b); err != nil {
		t.Fatal(err)
	}
	if got := string(a.P.A[0].Raw); got != `{"x":1}` {
		t.Fatalf("decoding b changed a's part: %s (b's: %s)", got, b.P.A[0].Raw)
	}
}

type namedBytes []byte

type withNamedBytes struct {
	P *struct {
		B namedBytes `json:"b"`
	} `json:"p"`
}

// A named []byte type is decoded by json-iterator's own base64 decoder,
// whose result has spare capacity too.
func TestJSONSharedNamedBytesHaveNoSpareCapacity(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	data := []byte(`{"p":{"b":"YQ=="}}`)
	var a, b withNamedBytes
	if err := api.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if err := api.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	x := append(a.P.B, 'x')
	_ = append(b.P.B, 'y')
	if x[1] != 'x' {
		t.Fatalf("appending to b's bytes changed a's appended copy: %q (len %d, cap %d, shared %v)", x, len(a.P.B), cap(a.P.B), a.P == b.P)
	}
}
