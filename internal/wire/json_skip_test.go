package wire

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// hugeNumbers are numbers beyond float64's range, which encoding/json
// skips, and keeps as raw bytes, for their syntax alone.
var hugeNumbers = []string{"1e400", "-2.5E+999", "0.5e400", "1" + strings.Repeat("0", 399)}

// A value kept raw (runtime.RawExtension, json.RawMessage, FieldsV1) or
// a key of the list body or the watch event that is not read keeps any
// number apimachinery keeps: json-iterator's Skip failed on these, and
// one such object failed the whole list or watch.
func TestJSONRawAndSkippedValuesTakeHugeNumbers(t *testing.T) {
	crCodec, err := TypedCodec[*appsv1.ControllerRevision](appsv1.SchemeGroupVersion.WithKind("ControllerRevision"))
	if err != nil {
		t.Fatal(err)
	}
	for _, num := range hugeNumbers {
		cr := `{"kind":"ControllerRevision","apiVersion":"apps/v1","metadata":{"name":"r","resourceVersion":"5",` +
			`"managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:x":` + num + `}}]},"data":{"spec":{"x":[` + num + `]}},"revision":1}`
		var want appsv1.ControllerRevision
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(cr), &want); err != nil {
			t.Fatalf("apimachinery refuses it: %v", err)
		}
		ev, err := NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","extra":[`+num+`],"object":`+cr+`}`), crCodec, 0).Next()
		if err != nil {
			t.Fatalf("watch, %s: %v", num[:5], err)
		}
		if got := string(ev.Object.Data.Raw); got != string(want.Data.Raw) {
			t.Errorf("data: got %s, want %s", got, want.Data.Raw)
		}
		if got := string(ev.Object.ManagedFields[0].FieldsV1.Raw); got != string(want.ManagedFields[0].FieldsV1.Raw) {
			t.Errorf("fieldsV1: got %s, want %s", got, want.ManagedFields[0].FieldsV1.Raw)
		}
		// the object before the type: its bytes kept, decoded after
		ev, err = NewJSONWatchDecoder(strings.NewReader(`{"object":`+cr+`,"type":"ADDED"}`), crCodec, 0).Next()
		if err != nil {
			t.Fatalf("watch, object first, %s: %v", num[:5], err)
		}
		list := `{"kind":"ControllerRevisionList","apiVersion":"apps/v1","extra":{"a":` + num + `},"metadata":{"resourceVersion":"5"},"items":[` + cr + `]}`
		if _, err := DecodeJSONList(strings.NewReader(list), crCodec, 0, func(*appsv1.ControllerRevision) error { return nil }); err != nil {
			t.Errorf("list, %s: %v", num[:5], err)
		}
		var got userHolder
		api := newJSONAPI(false, nil, nil)
		if err := api.Unmarshal([]byte(`{"raw":{"a":`+num+`}}`), &got); err != nil || string(got.Raw) != `{"a":`+num+`}` {
			t.Errorf("json.RawMessage: %s, %v", got.Raw, err)
		}
	}
}

// A value kept raw keeps its bytes, not the white space before them, as
// encoding/json keeps them; what is not JSON is refused, as there.
func TestJSONRawValuesAsEncodingJSON(t *testing.T) {
	type holder struct {
		Raw json.RawMessage            `json:"raw"`
		F   metav1.FieldsV1            `json:"f"`
		E   *appsv1.ControllerRevision `json:"e"`
	}
	api := newJSONAPI(false, newInternTable(), nil)
	for _, in := range []string{
		`{"raw": 5 ,"f": {"a":1e400} }`,
		`{"raw":` + "\n\t" + `[1, 2.5e-999, "x\u00e9", true, null, {}] }`,
		`{"raw":null,"f":null,"e":{"data":null}}`,
		`{"e":{"data": {"a":[1e400]} }}`,
		`{"raw":01}`, `{"raw":1.}`, `{"raw":-}`, `{"raw":1e}`, `{"raw":[1,]}`, `{"raw":{"a":1,}}`,
		`{"raw":{"a" 1}}`, `{"raw":{1:1}}`, `{"raw":"a` + "\x01" + `"}`, `{"raw":[nul]}`,
		`{"f":{"a":+1}}`, `{"e":{"data":{"a":.5}}}`, `{"raw":[1 2]}`,
	} {
		var want, got holder
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &want)
		gotErr := api.Unmarshal([]byte(in), &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: apimachinery: %v; this package: %v", in, wantErr, gotErr)
			continue
		}
		if wantErr == nil {
			semanticEqual(t, got, want)
		}
	}
}
