package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
)

// validJSONNumber agrees with encoding/json on what a number is.
func TestValidJSONNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1", "10", "01", "-01", "00", "1.", ".5", "1.5", "1.50",
		"1e5", "1E+5", "1e-5", "1e", "1e+", "1.e5", "-", "+1", "", "1.5e400",
		"123456789012345678901234567890", "0x10", "1_0", "--1", "0.0e0"} {
		require.Equal(t, json.Valid([]byte(s)), validJSONNumber(s), "%q", s)
	}
}

// Numbers that are not JSON (leading zeros, a bare decimal point) are
// refused in unstructured objects, as apimachinery refuses them:
// json-iterator's ReadNumber collects the characters a number may have
// without checking their order. (In a typed object's unknown field,
// json-iterator's Skip still takes "-01": it checks the characters after
// a sign only.)
func TestUnstructuredRefusesInvalidNumbers(t *testing.T) {
	u := UnstructuredCodec(podGVK)
	for _, n := range []string{"01", "-01", "00", "1.", "-1.", "1.e5", "[01]"} {
		in := []byte(`{"kind":"Pod","apiVersion":"v1","spec":{"x":` + n + `}}`)
		require.Error(t, new(unstructured.Unstructured).UnmarshalJSON(in), n)
		_, err := NewJSONWatchDecoder(bytes.NewReader(append(append([]byte(`{"type":"ADDED","object":`), in...), '}')), u, 0).Next()
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", n, err)
		}
	}
}

// Nesting is bounded as in sigs.k8s.io/json (10000 levels), in typed
// objects (an unknown field, a RawExtension) and unstructured ones, and
// deeper input is refused quickly.
func TestJSONDepthLimitsMatchApimachinery(t *testing.T) {
	api := newJSONAPI(false, nil, nil)
	u := UnstructuredCodec(podGVK)
	for _, n := range []int{9998, 9999, 10000, 10001, 100000} {
		for _, in := range []string{
			`{"kind":"ControllerRevision","metadata":{"future":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`,
			`{"kind":"ControllerRevision","data":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + `}`,
		} {
			want := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), new(appsv1.ControllerRevision))
			it := api.BorrowIterator([]byte(in))
			it.ReadVal(new(appsv1.ControllerRevision))
			require.Equal(t, want == nil, it.Error == nil, "typed, depth %d: %v, apimachinery %v", n, it.Error, want)
			api.ReturnIterator(it)

			want = new(unstructured.Unstructured).UnmarshalJSON([]byte(in))
			it = jsoniter.ParseBytes(u.json, []byte(in))
			readUnstructured(it, false)
			require.Equal(t, want == nil, it.Error == nil, "unstructured, depth %d: %v, apimachinery %v", n, it.Error, want)
		}
	}
}
