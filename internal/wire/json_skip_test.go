package wire

import (
	"encoding/json"
	jsoniter "github.com/json-iterator/go"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		if got, want := ev.Object.ManagedFields[0].FieldsV1.GetRawString(), want.ManagedFields[0].FieldsV1.GetRawString(); got != want {
			t.Errorf("fieldsV1: got %s, want %s", got, want)
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
		decodesAsApimachinery[holder](t, api, in)
	}
}

// A field this client does not know (a newer server's) is skipped
// whatever number it holds, in an object in the read buffer or across
// two reads of it, as apimachinery skips it.
func TestJSONUnknownFieldsTakeHugeNumbers(t *testing.T) {
	codec, err := TypedCodec[*corev1.Pod](corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, num := range hugeNumbers {
		pod := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5","future":` + num + `},"spec":{"futureField":{"x":[` + num + `]}},"future":` + num + `}`
		var want corev1.Pod
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(pod), &want); err != nil {
			t.Fatalf("apimachinery refuses it: %v", err)
		}
		list := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` + pod + `]}`
		if _, err := DecodeJSONList(strings.NewReader(list), codec, 0, func(*corev1.Pod) error { return nil }); err != nil {
			t.Errorf("list, unknown field %s: %v", num[:5], err)
		}
		if _, err := NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":`+pod+`}`), codec, 0).Next(); err != nil {
			t.Errorf("watch, unknown field %s: %v", num[:5], err)
		}
	}
	big := hugeNumbers[3]
	for pad := readBufferSize - 600; pad < readBufferSize; pad += 25 {
		pod := `{"metadata":{"name":"a","resourceVersion":"5","annotations":{"p":"` + strings.Repeat("x", pad) + `"}},"futureField":` + big + `}`
		list := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` + pod + `]}`
		var got *corev1.Pod
		if _, err := DecodeJSONList(strings.NewReader(list), codec, 0, func(p *corev1.Pod) error { got = p; return nil }); err != nil {
			t.Fatalf("list with a 400-digit unknown number at offset ~%d: %v", pad, err)
		}
		if len(got.Annotations["p"]) != pad {
			t.Fatalf("annotation of %d bytes, want %d", len(got.Annotations["p"]), pad)
		}
	}
}

// A struct's keys match exactly, case and all; one given twice is
// decoded twice, the last winning where the field's type overwrites;
// unknown ones are skipped; null leaves the struct as it was.
func TestJSONStructFieldsAsEncodingJSON(t *testing.T) {
	api := newJSONAPI(false, newInternTable(), nil)
	for _, in := range []string{
		`{"metadata":{"name":"a","Name":"b","NAME":"c"},"spec":{"nodeName":"n","nodeName":"m","NodeName":"x"}}`,
		`{"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}},"spec":null,"status":{"phase":"Running","phase":null}}`,
		`{"metadata":{"na\u006de":"escaped","u":{"v":[{"w":1e999}]}},"spec":{"containers":[{"name":"c","x":-1E+400}]}}`,
		`{"kind":"Pod","kind":"Other","x":{"y":"z"},"spec":{"containers":null}}`,
		`{"metadata":5}`, `{"metadata":{"name":1}}`, `{"metadata":{"x":1,}}`, `{"metadata":{"x" 1}}`, `{"spec":{"x":[1e400,]}}`,
		`{"spec":{"x":01}}`, `{"metadata":{"name":"a"}`, `{"metadata":{"name":"a"},}`,
	} {
		decodesAsApimachinery[corev1.Pod](t, api, in)
	}
}

// tree holds itself, and a type met twice: json-iterator's decoders of
// both are built from placeholders.
type tree struct {
	Name     string           `json:"name"`
	Children []tree           `json:"children"`
	Left     *metav1.TypeMeta `json:"left"`
	Right    *metav1.TypeMeta `json:"right"`
}

// Every struct skips unknown fields as encoding/json does, one that holds
// itself and one met twice in a type included.
func TestJSONUnknownFieldsInEveryStruct(t *testing.T) {
	in := `{"name":"a","x":1e400,"left":{"kind":"K","x":1e400},"right":{"kind":"L","x":1e400},` +
		`"children":[{"name":"b","x":1e400,"children":[{"name":"c","x":1e400,"left":{"x":1e400}}]}]}`
	var want, got tree
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := newJSONAPI(false, nil, nil).Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	semanticEqual(t, got, want)
}

// Unstructured objects are read as apimachinery reads them, into maps
// whole: a number beyond float64's range is refused anywhere, in the
// managedFields WithoutManagedFields skips too, and skipped only where
// apimachinery skips (the list body's keys).
func TestUnstructuredRefusesHugeNumbers(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, num := range hugeNumbers {
		obj := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5","managedFields":[{"fieldsV1":{"f:x":` + num + `}}]}}`
		var m map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(obj), &m); err == nil {
			t.Fatalf("apimachinery takes %s", num[:5])
		}
		for _, codec := range []*Codec[*unstructured.Unstructured]{UnstructuredCodec(gvk), UnstructuredCodec(gvk, WithoutManagedFields())} {
			if _, err := NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":`+obj+`}`), codec, 0).Next(); err == nil {
				t.Errorf("%s in managedFields taken", num[:5])
			}
		}
		list := `{"kind":"PodList","apiVersion":"v1","x":` + num + `,"metadata":{"resourceVersion":"5"},"items":[]}`
		if _, err := DecodeJSONList(strings.NewReader(list), UnstructuredCodec(gvk), 0, func(*unstructured.Unstructured) error { return nil }); err != nil {
			t.Errorf("list body's unknown key %s: %v", num[:5], err)
		}
	}
}

// decodesAsApimachinery checks that api decodes in into a T as apimachinery
// does, or refuses it as apimachinery does.
func decodesAsApimachinery[T any](t *testing.T, api jsoniter.API, in string) {
	t.Helper()
	var want, got T
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(in), &want)
	gotErr := api.Unmarshal([]byte(in), &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Errorf("%s: apimachinery: %v; this package: %v", in, wantErr, gotErr)
		return
	}
	if wantErr == nil {
		semanticEqual(t, got, want)
	}
}
