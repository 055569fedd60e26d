package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
)

// drainJSON decodes every event of a JSON watch stream.
func drainJSON[T any](t *testing.T, r io.Reader, c *Codec[T], maxFrame int) ([]Event[T], error) {
	t.Helper()
	evs, err := drainNext(NewJSONWatchDecoder(r, c, maxFrame).Next)
	sameAsParallel(t, r, evs, err, func(r io.Reader) *ParallelWatchDecoder[T] {
		return NewParallelJSONWatchDecoder(r, c, maxFrame, parallelWorkers)
	})
	return evs, err
}

func TestJSONWatchRoundTrip(t *testing.T) {
	pods := []*corev1.Pod{realisticPod(1), realisticPod(2), realisticPod(3)}
	stream := jsonStream(t,
		event{"ADDED", pods[0]}, event{"MODIFIED", pods[1]}, event{"DELETED", pods[2]},
		event{"BOOKMARK", bookmarkPod("200", true)},
		event{"ERROR", goneStatus()},
	)
	for name, r := range map[string]func() io.Reader{
		"whole":         func() io.Reader { return bytes.NewReader(stream) },
		"one byte":      func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"data with EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			evs, err := drainJSON(t, r(), mustCodec[*corev1.Pod](t, podGVK), 0)
			if err != io.EOF {
				t.Fatalf("end of stream: got %v, want io.EOF", err)
			}
			if len(evs) != 5 {
				t.Fatalf("got %d events, want 5", len(evs))
			}
			for i, typ := range []EventType{Added, Modified, Deleted} {
				if evs[i].Type != typ || evs[i].Status != nil {
					t.Fatalf("event %d: got %s (status %v), want %s", i, evs[i].Type, evs[i].Status, typ)
				}
				semanticEqual(t, evs[i].Object, pods[i])
			}
			bm := evs[3]
			if bm.Type != Bookmark || bm.Object.ResourceVersion != "200" || bm.Object.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("bookmark: got %s %+v", bm.Type, bm.Object.ObjectMeta)
			}
			e := evs[4]
			if e.Type != Error || e.Status == nil || e.Status.Code != 410 || e.Status.Reason != metav1.StatusReasonExpired || e.Object != nil {
				t.Fatalf("error event: got %+v", e)
			}
		})
	}
}

// The decoder must give exactly what k8s.io/apimachinery's JSON decoding
// (sigs.k8s.io/json, case-sensitive, ints preserved) gives for the same bytes.
func TestJSONWatchMatchesApimachinery(t *testing.T) {
	check := func(t *testing.T, objJSON []byte, got, want any) {
		t.Helper()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(objJSON, want); err != nil {
			t.Fatal(err)
		}
		semanticEqual(t, got, want)
	}
	t.Run("ConfigMap", func(t *testing.T) {
		obj := jsonOf(t, testConfigMap(1))
		ev := nextJSON(t, `{"type":"ADDED","object":`+string(obj)+`}`, mustCodec[*corev1.ConfigMap](t, configMapGVK))
		check(t, obj, ev.Object, new(corev1.ConfigMap))
	})
	t.Run("Deployment", func(t *testing.T) {
		obj := jsonOf(t, testDeployment(1))
		ev := nextJSON(t, `{"type":"ADDED","object":`+string(obj)+`}`, mustCodec[*appsv1.Deployment](t, deploymentGVK))
		check(t, obj, ev.Object, new(appsv1.Deployment))
		if ev.Object.Generation != 1<<40 || ev.Object.Status.ObservedGeneration != 1<<40 {
			t.Fatalf("int64 fields: got %d, %d", ev.Object.Generation, ev.Object.Status.ObservedGeneration)
		}
	})
}

func nextJSON[T any](t *testing.T, stream string, c *Codec[T]) Event[T] {
	t.Helper()
	ev, err := NewJSONWatchDecoder(strings.NewReader(stream), c, 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestJSONWatchFieldRules(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	// Unknown fields are ignored, names match case-sensitively (a
	// "Metadata" is unknown, not metadata), and the envelope's own unknown
	// fields are skipped.
	ev := nextJSON(t, `{"extra":[1,{"a":null}],"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",`+
		`"metadata":{"name":"a","resourceVersion":"7","futureField":{"x":1}},"Metadata":{"name":"b"},`+
		`"spec":{"priority":2147483647,"nodeName":"n\u00e9"}},"more":"x"}`, c)
	if ev.Object.Name != "a" || ev.Object.ResourceVersion != "7" || *ev.Object.Spec.Priority != 2147483647 || ev.Object.Spec.NodeName != "né" {
		t.Fatalf("got %+v", ev.Object)
	}
	// A value of the wrong JSON type is malformed, as in apimachinery.
	_, err := NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":{"metadata":{"name":5}}}`), c, 0).Next()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want ErrMalformed", err)
	}
}

func TestJSONWatchStreamShapes(t *testing.T) {
	c := mustCodec[*corev1.ConfigMap](t, configMapGVK)
	obj := string(jsonOf(t, testConfigMap(1)))
	for name, stream := range map[string]string{
		"concatenated":        `{"type":"ADDED","object":` + obj + `}{"type":"DELETED","object":` + obj + `}`,
		"whitespace":          " \r\n\t{ \"type\" : \"ADDED\" , \"object\" : " + obj + " }\n\n\t{\"type\":\"DELETED\",\"object\":" + obj + "}  \n",
		"object before type":  `{"object":` + obj + `,"type":"ADDED"}{"object":` + obj + `,"type":"DELETED"}`,
		"type given twice":    `{"type":"MODIFIED","type":"ADDED","object":` + obj + `}{"type":"DELETED","object":` + obj + `}`,
		"object twice":        `{"type":"ADDED","object":{"kind":"ConfigMap"},"object":` + obj + `}{"type":"DELETED","object":` + obj + `}`,
		"object-first ERROR?": `{"object":` + obj + `,"type":"ADDED"}` + "\n" + `{"type":"DELETED","object":` + obj + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			evs, err := drainJSON(t, strings.NewReader(stream), c, 0)
			if err != io.EOF {
				t.Fatalf("got %v, want io.EOF", err)
			}
			if len(evs) != 2 || evs[0].Type != Added || evs[1].Type != Deleted {
				t.Fatalf("got %d events: %+v", len(evs), evs)
			}
			for _, ev := range evs {
				semanticEqual(t, ev.Object, testConfigMap(1))
			}
		})
	}
}

func TestJSONWatchErrorEventObjectFirst(t *testing.T) {
	status := string(jsonOf(t, goneStatus()))
	ev := nextJSON(t, `{"object":`+status+`,"type":"ERROR"}`, mustCodec[*corev1.Pod](t, podGVK))
	if ev.Type != Error || ev.Status == nil || ev.Status.Code != 410 || ev.Object != nil {
		t.Fatalf("got %+v", ev)
	}
}

func TestJSONWatchErrors(t *testing.T) {
	pod := string(jsonOf(t, realisticPod(1)))
	for _, tc := range []struct {
		name   string
		stream string
		want   error
		detail string // a substring the message must contain
	}{
		{"not JSON", `hello`, ErrMalformed, "event 1"},
		{"not an object", `["ADDED"]`, ErrMalformed, ""},
		{"broken object", `{"type":"ADDED","object":{"metadata":{]}}`, ErrMalformed, ""},
		{"type not a string", `{"type":1,"object":{}}`, ErrMalformed, ""},
		{"unknown type", `{"type":"RENAMED","object":` + pod + `}`, ErrUnknownEventType, `"RENAMED"`},
		{"lower-case type", `{"type":"added","object":` + pod + `}`, ErrUnknownEventType, `"added"`},
		{"no type", `{"object":` + pod + `}`, ErrMalformed, `no "type"`},
		{"no object", `{"type":"ADDED"}`, ErrMissingObject, "ADDED"},
		{"null object", `{"type":"MODIFIED","object":null}`, ErrMissingObject, ""},
		{"empty stream after whitespace only", "  \n", io.EOF, ""},
		{"truncated mid-event", `{"type":"ADDED","object":` + pod[:len(pod)/2], io.ErrUnexpectedEOF, ""},
		{"truncated mid-string", `{"type":"ADDED","object":{"metadata":{"name":"ab`, io.ErrUnexpectedEOF, ""},
		{"truncated after object", `{"type":"ADDED","object":` + pod, io.ErrUnexpectedEOF, ""},
		{"truncated in literal", `{"type":"ADDED","object":{"metadata":{"deletionTimestamp":nu`, io.ErrUnexpectedEOF, ""},
		{"second event truncated", `{"type":"ADDED","object":` + pod + "}\n{\"ty", io.ErrUnexpectedEOF, "event 2"},
		{"too large", `{"type":"ADDED","object":` + pod + `}`, ErrFrameTooLarge, "limit 1000"},
		{"whitespace flood", strings.Repeat(" ", 40000), ErrFrameTooLarge, ""},
		{"too deep", `{"type":"ADDED","object":{"metadata":{"labels":` + strings.Repeat("[", 20000) + `}}}`, ErrMalformed, ""},
	} {
		maxFrame := 0
		if tc.want == ErrFrameTooLarge {
			maxFrame = 1000
		}
		c := mustCodec[*corev1.Pod](t, podGVK)
		t.Run(tc.name, func(t *testing.T) {
			checkFinalError(t, NewJSONWatchDecoder(strings.NewReader(tc.stream), c, maxFrame).Next, tc.want, tc.detail)
		})
		t.Run(tc.name+"/parallel", func(t *testing.T) {
			d := NewParallelJSONWatchDecoder(strings.NewReader(tc.stream), c, maxFrame, parallelWorkers)
			defer d.Close()
			checkFinalError(t, d.Next, tc.want, tc.detail)
		})
	}
}

func TestJSONWatchReadError(t *testing.T) {
	boom := errors.New("connection reset")
	stream := jsonStream(t, event{"ADDED", realisticPod(1)})
	r := io.MultiReader(bytes.NewReader(stream), bytes.NewReader(stream[:100]), iotest.ErrReader(boom))
	evs, err := drainJSON(t, r, mustCodec[*corev1.Pod](t, podGVK), 0)
	if len(evs) != 1 || !errors.Is(err, boom) {
		t.Fatalf("got %d events and %v, want 1 and %v", len(evs), err, boom)
	}
}

func TestJSONWatchStuckReader(t *testing.T) {
	_, err := NewJSONWatchDecoder(stuckReader{}, mustCodec[*corev1.Pod](t, podGVK), 0).Next()
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

// stuckReader returns (0, nil) forever.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func TestJSONWatchWrongKindIsSkippable(t *testing.T) {
	stream := jsonStream(t,
		event{"ADDED", testConfigMap(1)},
		event{"ADDED", realisticPod(1)},
		event{"MODIFIED", testDeployment(1)}, // apps/v1
	)
	// An object-first event of the wrong kind is skippable too. The
	// event's type comes with the error: a DELETED cannot be skipped.
	stream = append(stream, `{"object":{"kind":"Secret","apiVersion":"v1"},"type":"ADDED"}`...)
	stream = append(stream, jsonStream(t, event{"DELETED", realisticPod(2)})...)
	d := NewJSONWatchDecoder(bytes.NewReader(stream), mustCodec[*corev1.Pod](t, podGVK), 0)
	var got []string
	for {
		ev, err := d.Next()
		if err == io.EOF {
			break
		}
		var wk *WrongKindError
		switch {
		case errors.As(err, &wk):
			got = append(got, "skip "+string(ev.Type)+" "+wk.Got.Kind)
			if wk.Want != podGVK || !errors.Is(err, ErrWrongKind) {
				t.Fatalf("want %v, errors.Is ErrWrongKind: %v", wk.Want, errors.Is(err, ErrWrongKind))
			}
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(ev.Type)+" "+ev.Object.Name)
		}
	}
	want := "skip ADDED ConfigMap|ADDED web-7d4b9c6f5-00001|skip MODIFIED Deployment|skip ADDED Secret|DELETED web-7d4b9c6f5-00002"
	if strings.Join(got, "|") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}

func TestJSONWatchStampsKind(t *testing.T) {
	// Objects without kind/apiVersion are accepted and stamped; a kind
	// with another apiVersion is not ours.
	c := mustCodec[*corev1.Pod](t, podGVK)
	ev := nextJSON(t, `{"type":"ADDED","object":{"metadata":{"name":"a"}}}`, c)
	if ev.Object.Kind != "Pod" || ev.Object.APIVersion != "v1" {
		t.Fatalf("got %q %q", ev.Object.Kind, ev.Object.APIVersion)
	}
	_, err := NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v2"}}`), c, 0).Next()
	if !errors.Is(err, ErrWrongKind) || !strings.Contains(err.Error(), "Pod v2") {
		t.Fatalf("got %v", err)
	}
}

func TestJSONWatchWithoutManagedFields(t *testing.T) {
	pods := []*corev1.Pod{realisticPod(1), realisticPod(2)}
	stream := jsonStream(t, event{"ADDED", pods[0]}, event{"MODIFIED", pods[1]})
	t.Run("typed", func(t *testing.T) {
		c := mustCodec[*corev1.Pod](t, podGVK, WithoutManagedFields())
		evs, err := drainJSON(t, bytes.NewReader(stream), c, 0)
		if err != io.EOF || len(evs) != 2 {
			t.Fatalf("got %d events, %v", len(evs), err)
		}
		for i, ev := range evs {
			semanticEqual(t, ev.Object, withoutManagedFields(pods[i]))
		}
		// Another codec of the same type still decodes them.
		evs, _ = drainJSON(t, bytes.NewReader(stream), mustCodec[*corev1.Pod](t, podGVK), 0)
		if len(evs[0].Object.ManagedFields) != 2 {
			t.Fatalf("a codec without the option lost managedFields")
		}
	})
	t.Run("unstructured", func(t *testing.T) {
		evs, err := drainJSON(t, bytes.NewReader(stream), UnstructuredCodec(podGVK, WithoutManagedFields()), 0)
		if err != io.EOF || len(evs) != 2 {
			t.Fatalf("got %d events, %v", len(evs), err)
		}
		want := unstructuredOf(t, withoutManagedFields(pods[0]))
		semanticEqual(t, evs[0].Object, want)
	})
	t.Run("metadata", func(t *testing.T) {
		evs, err := drainJSON(t, bytes.NewReader(stream), MetadataCodec(podGVK, WithoutManagedFields()), 0)
		if err != io.EOF || len(evs) != 2 {
			t.Fatalf("got %d events, %v", len(evs), err)
		}
		want := withoutManagedFields(pods[0]).ObjectMeta
		semanticEqual(t, evs[0].Object.ObjectMeta, want)
	})
}

// unstructuredOf is what apimachinery's unstructured JSON scheme makes of obj.
func unstructuredOf(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	u := new(unstructured.Unstructured)
	if err := u.UnmarshalJSON(jsonOf(t, obj)); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestJSONWatchUnstructured(t *testing.T) {
	c := UnstructuredCodec(deploymentGVK)
	stream := jsonStream(t, event{"ADDED", testDeployment(1)}, event{"BOOKMARK", &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "77", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
	}})
	evs, err := drainJSON(t, bytes.NewReader(stream), c, 0)
	if err != io.EOF || len(evs) != 2 {
		t.Fatalf("got %d events, %v", len(evs), err)
	}
	semanticEqual(t, evs[0].Object, unstructuredOf(t, testDeployment(1)))
	if g, _, _ := unstructured.NestedInt64(evs[0].Object.Object, "metadata", "generation"); g != 1<<40 {
		t.Fatalf("generation: got %d", g)
	}
	if evs[1].Object.GetResourceVersion() != "77" || evs[1].Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("bookmark: got %v", evs[1].Object.Object)
	}
	// Numbers follow apimachinery: int64 when integral and in range.
	ev := nextJSON(t, `{"type":"ADDED","object":{"kind":"Deployment","apiVersion":"apps/v1","spec":{"a":1,"b":1.5,"c":-9223372036854775808,"d":9223372036854775808,"e":1e3,"f":[],"g":{},"h":null,"i":true}}}`, c)
	want := new(unstructured.Unstructured)
	if err := want.UnmarshalJSON([]byte(`{"kind":"Deployment","apiVersion":"apps/v1","spec":{"a":1,"b":1.5,"c":-9223372036854775808,"d":9223372036854775808,"e":1e3,"f":[],"g":{},"h":null,"i":true}}`)); err != nil {
		t.Fatal(err)
	}
	semanticEqual(t, ev.Object, want)
	// A missing kind is filled in; another kind is skippable.
	ev = nextJSON(t, `{"type":"ADDED","object":{"metadata":{"name":"x"}}}`, c)
	if ev.Object.GetKind() != "Deployment" || ev.Object.GetAPIVersion() != "apps/v1" {
		t.Fatalf("got %v", ev.Object.Object)
	}
	_, err = NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":{"kind":"StatefulSet","apiVersion":"apps/v1"}}`), c, 0).Next()
	if !errors.Is(err, ErrWrongKind) {
		t.Fatalf("got %v", err)
	}
	// A number out of float64's range is malformed, as in apimachinery.
	_, err = NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":{"n":1e999}}`), c, 0).Next()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

func TestJSONWatchMetadata(t *testing.T) {
	c := MetadataCodec(podGVK)
	pod := realisticPod(1)
	partial := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: pod.ObjectMeta}
	stream := jsonStream(t, event{"ADDED", partial}, event{"MODIFIED", pod})
	stream = append(stream, `{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":{"name":"b"}}}`...)
	evs, err := drainJSON(t, bytes.NewReader(stream), c, 0)
	if err != io.EOF || len(evs) != 3 {
		t.Fatalf("got %d events, %v", len(evs), err)
	}
	for _, ev := range evs[:2] {
		semanticEqual(t, ev.Object, partial)
	}
	if evs[2].Object.Name != "b" || evs[2].Object.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("got %+v", evs[2].Object)
	}
	_, err = NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1"}}`), c, 0).Next()
	if !errors.Is(err, ErrWrongKind) {
		t.Fatalf("got %v", err)
	}
	// Told no kind, a metadata codec takes any object.
	ev := nextJSON(t, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}}`, MetadataCodec(podGVK.GroupVersion().WithKind("")))
	if ev.Object.Name != "c" || ev.Object.Kind != "PartialObjectMetadata" {
		t.Fatalf("got %+v", ev.Object)
	}
}

// "type" met again after "object", changing ERROR to another type or back:
// the object was decoded for the first, and the event must not carry the
// second (ADDED came out with a nil object, ERROR with no Status).
func TestJSONWatchTypeChangedAfterTheObject(t *testing.T) {
	codec := mustCodec[*corev1.Pod](t, podGVK)
	for _, stream := range []string{
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410},"type":"ADDED"}`,
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}},"type":"ERROR"}`,
	} {
		for name, next := range map[string]func() (Event[*corev1.Pod], error){
			"sequential": NewJSONWatchDecoder(strings.NewReader(stream), codec, 0).Next,
			"parallel":   NewParallelJSONWatchDecoder(strings.NewReader(stream), codec, 0, 1).Next,
		} {
			ev, err := next()
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %s: event %s with object %v and status %v, error %v; want ErrMalformed", name, stream, ev.Type, ev.Object, ev.Status, err)
			}
		}
	}
}

// An object sent before the event's "type" decodes as one sent after it,
// and as apimachinery decodes it: it was read into a map and written
// again, which turned 1e3 into 1k and 0.1000000000000000000001 into 100m,
// kept only the last of two "metadata" (apimachinery merges them), and
// took 30.0 for an integer (apimachinery refuses it).
func TestJSONWatchObjectBeforeTypeDecodesAsAfter(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for _, obj := range []string{
		`{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":1e3,"memory":0.1000000000000000000001}}}]}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"labels":{"a":"1"}},"metadata":{"annotations":{"b":"2"}}}`,
		`{"kind":"Pod","apiVersion":"v1","spec":{"terminationGracePeriodSeconds":30.0}}`,
	} {
		want := new(corev1.Pod)
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(obj), want)
		for _, ev := range []string{`{"type":"ADDED","object":` + obj + `}`, `{"object":` + obj + `,"type":"ADDED"}`} {
			got, err := NewJSONWatchDecoder(strings.NewReader(ev), c, 0).Next()
			if wantErr != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("%s: got %v, want ErrMalformed (apimachinery: %v)", ev, err, wantErr)
				}
				continue
			}
			require.NoError(t, err, ev)
			if !apiequality.Semantic.DeepEqual(want, got.Object) || got.Object.Spec.Containers != nil &&
				got.Object.Spec.Containers[0].Resources.Limits.Cpu().String() != want.Spec.Containers[0].Resources.Limits.Cpu().String() {
				t.Errorf("%s:\n got %+v\nwant %+v", ev, got.Object, want)
			}
		}
	}
}
