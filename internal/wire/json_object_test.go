package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
)

// A high surrogate escape followed by a surrogate pair ("\ud800\ud800\udc00")
// is U+FFFD then U+10000 for encoding/json (and so apimachinery); strings
// read with json-iterator's own ReadString (map keys via ReadMapCB,
// IntOrString values) got three U+FFFD instead; they are read as every
// other string is now.
func TestJSONSurrogateEscapesInKeysAndIntOrStrings(t *testing.T) {
	const esc = `\ud800\ud800\udc00`
	typed := []struct {
		typ  reflect.Type
		data string
	}{
		{reflect.TypeFor[corev1.Pod](), `{"metadata":{"labels":{"k` + esc + `":"v"}}}`},
		{reflect.TypeFor[corev1.ConfigMap](), `{"data":{"k` + esc + `":"v"}}`},
		{reflect.TypeFor[appsv1.Deployment](), `{"spec":{"strategy":{"rollingUpdate":{"maxSurge":"` + esc + `"}}}}`},
	}
	for _, c := range typed {
		want, err := decodeKJSON(c.typ, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeJSONWith(jsonConfigs()[1].api, c.typ, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if d := firstDifference(want, got); d != "" {
			t.Errorf("%v %s: %s", c.typ, c.data, d)
		}
	}
	obj := []byte(`{"kind":"Pod","apiVersion":"v1","spec":{"k` + esc + `":1}}`)
	wantU := new(unstructured.Unstructured)
	if err := wantU.UnmarshalJSON(obj); err != nil {
		t.Fatal(err)
	}
	ev, err := NewJSONWatchDecoder(bytes.NewReader([]byte(`{"type":"ADDED","object":`+string(obj)+`}`)), UnstructuredCodec(podGVK), 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	if d := firstDifference(wantU.Object, ev.Object.Object); d != "" {
		t.Errorf("unstructured %s: %s", obj, d)
	}
}

// Objects whose map keys, colons and commas fall on the read buffer's end,
// decoded as apimachinery decodes them.
func TestJSONMapKeysAcrossTheReadBuffer(t *testing.T) {
	gvk := schemaGVK("", "v1", "ConfigMap")
	c := mustCodec[*corev1.ConfigMap](t, gvk)
	u := UnstructuredCodec(gvk)
	tail := `"data" : { "k\u00e9\ud800\ud800\udc00" : "v" , "a\"b" :"x",` + "\n\t" + `"" : "" , "x\/y":null } , "binaryData":{ } }`
	for pad := 32768 - 150 - len(tail); pad < 32768; pad++ {
		obj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"` + strings.Repeat("n", pad) + `"},` + tail
		want := new(corev1.ConfigMap)
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(obj), want); err != nil {
			t.Fatal(err)
		}
		wantU := new(unstructured.Unstructured)
		if err := wantU.UnmarshalJSON([]byte(obj)); err != nil {
			t.Fatal(err)
		}
		stream := `{"type":"ADDED","object":` + obj + "}\n"
		readers := []func() *bytes.Reader{func() *bytes.Reader { return bytes.NewReader([]byte(stream)) }}
		for i, r := range readers {
			ev, err := NewJSONWatchDecoder(r(), c, 0).Next()
			if err != nil {
				t.Fatalf("pad %d: %v", pad, err)
			}
			if d := firstDifference(want, ev.Object); d != "" {
				t.Fatalf("pad %d reader %d: %s", pad, i, d)
			}
			evU, err := NewJSONWatchDecoder(r(), u, 0).Next()
			if err != nil {
				t.Fatalf("pad %d: %v", pad, err)
			}
			if d := firstDifference(wantU.Object, evU.Object.Object); d != "" {
				t.Fatalf("unstructured pad %d: %s", pad, d)
			}
		}
		if pad%50 == 0 {
			ev, err := NewJSONWatchDecoder(iotest.OneByteReader(strings.NewReader(stream)), c, 0).Next()
			if err != nil {
				t.Fatalf("one byte: %v", err)
			}
			if d := firstDifference(want, ev.Object); d != "" {
				t.Fatalf("one byte pad %d: %s", pad, d)
			}
		}
	}
}
