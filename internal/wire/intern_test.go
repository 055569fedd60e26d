package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func decodePods(t testing.TB, c *Codec[*corev1.Pod], stream []byte) []*corev1.Pod {
	t.Helper()
	return objectsOf(t, NewJSONWatchDecoder(bytes.NewReader(stream), c, 0).Next)
}

// objectsOf decodes until the end of the stream and returns the objects.
func objectsOf(t testing.TB, next func() (Event[*corev1.Pod], error)) []*corev1.Pod {
	t.Helper()
	evs, err := drainNext(next)
	require.ErrorIs(t, err, io.EOF)
	pods := make([]*corev1.Pod, len(evs))
	for i, ev := range evs {
		pods[i] = ev.Object
	}
	return pods
}

// decodeAll is decodePods for other goroutines: it stops at the first error.
func decodeAll(c *Codec[*corev1.Pod], stream []byte) (pods []*corev1.Pod) {
	return decodeAllWith(NewJSONWatchDecoder(bytes.NewReader(stream), c, 0).Next)
}

// decodeAllWith collects the objects of the events next returns, up to the
// first error (io.EOF at the end); the caller compares them.
func decodeAllWith(next func() (Event[*corev1.Pod], error)) (pods []*corev1.Pod) {
	for {
		ev, err := next()
		if err != nil {
			return pods
		}
		pods = append(pods, ev.Object)
	}
}

func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestJSONInterning(t *testing.T) {
	// Small pods: a few distinct strings never evict one another.
	small := func(i int) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", i), Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	stream := jsonStream(t, event{"ADDED", small(1)}, event{"ADDED", small(2)})

	pods := decodePods(t, mustCodec[*corev1.Pod](t, podGVK), stream)
	plain := decodePods(t, mustCodec[*corev1.Pod](t, podGVK, WithoutStringInterning()), stream)
	require.Len(t, pods, 2)
	require.Equal(t, plain, pods, "interning changed the decoded objects")

	a, b := pods[0], pods[1]
	require.True(t, sameData(a.Namespace, b.Namespace), "namespace")
	require.True(t, sameData(a.Labels["app"], b.Labels["app"]), "label value")
	for k := range a.Labels {
		for k2 := range b.Labels {
			require.True(t, sameData(k, k2), "label key %q", k)
		}
	}
	require.False(t, sameData(a.Name, b.Name), "a name is not interned")
	require.True(t, sameData(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image), "image")
	require.True(t, sameData(string(a.Status.Phase), string(b.Status.Phase)), "phase (a named string type)")

	p, q := plain[0], plain[1]
	require.False(t, sameData(p.Namespace, q.Namespace), "WithoutStringInterning still interned")

	// Long strings are copied, not interned.
	long := small(3)
	long.Spec.NodeName = strings.Repeat("n", maxInternLen+1)
	stream = jsonStream(t, event{"ADDED", long}, event{"ADDED", long})
	pods = decodePods(t, mustCodec[*corev1.Pod](t, podGVK), stream)
	require.Equal(t, long.Spec.NodeName, pods[0].Spec.NodeName)
	require.False(t, sameData(pods[0].Spec.NodeName, pods[1].Spec.NodeName))
}

// Codecs given one Strings share it: objects decoded by one hand out the
// strings the other's objects have, as with one codec; codecs with tables
// of their own do not.
func TestCodecsShareStrings(t *testing.T) {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	stream := jsonStream(t, event{"ADDED", pod})
	shared := NewStrings()
	a := decodePods(t, mustCodec[*corev1.Pod](t, podGVK, WithStrings(shared)), stream)[0]
	b := decodePods(t, mustCodec[*corev1.Pod](t, podGVK, WithStrings(shared)), stream)[0]
	require.True(t, sameData(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image), "image, through a shared table")
	require.True(t, sameData(a.Labels["app"], b.Labels["app"]), "label value, through a shared table")
	c := decodePods(t, mustCodec[*corev1.Pod](t, podGVK), stream)[0]
	require.False(t, sameData(a.Spec.Containers[0].Image, c.Spec.Containers[0].Image), "a codec with its own table")
	d := decodePods(t, mustCodec[*corev1.Pod](t, podGVK, WithStrings(shared), WithoutStringInterning()), stream)[0]
	require.False(t, sameData(a.Spec.Containers[0].Image, d.Spec.Containers[0].Image), "WithoutStringInterning wins")

	// Protobuf codecs intern in the same table.
	pb := protoWatchStream(t, event{"ADDED", pod})
	e := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK, WithStrings(shared)), pb)[0]
	require.True(t, sameData(a.Spec.Containers[0].Image, e.Spec.Containers[0].Image), "image, decoded from protobuf")
}

// One codec decodes on several goroutines at once (run with -race).
func TestJSONInterningConcurrent(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	stream := jsonStream(t, benchPodEvents()[:50]...)
	want := decodePods(t, mustCodec[*corev1.Pod](t, podGVK, WithoutStringInterning()), stream)
	decodeConcurrently(t, want, func() []*corev1.Pod { return decodeAll(c, stream) })
}

// The same for protobuf: the compiled decoder's tables (strings, the last
// string of each field, quantities) are shared by every goroutine.
func TestProtobufInterningConcurrent(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	stream := protoWatchStream(t, benchPodEvents()[:50]...)
	want := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK, withGeneratedUnmarshal()), stream)
	decodeConcurrently(t, want, func() []*corev1.Pod {
		return decodeAllWith(NewProtobufWatchDecoder(bytes.NewReader(stream), c, 0).Next)
	})
}

// decodeConcurrently runs decode on four goroutines at once and checks
// that each got want.
func decodeConcurrently(t *testing.T, want []*corev1.Pod, decode func() []*corev1.Pod) {
	t.Helper()
	var wg sync.WaitGroup
	got := make([][]*corev1.Pod, 4)
	for i := range got {
		wg.Go(func() { got[i] = decode() })
	}
	wg.Wait()
	for _, pods := range got {
		require.Equal(t, want, pods)
	}
}

// BenchmarkJSONRetainedHeap decodes a stream of pods, keeps them all and
// reports the heap they hold per pod (retained-B/pod) after a collection.
func BenchmarkJSONRetainedHeap(b *testing.B) {
	benchRetained(b, jsonStream(b, benchPodEvents()...), decodePods, map[string][]CodecOption{
		"interned":     nil,
		"copied":       {WithoutStringInterning()},
		"shared-parts": {WithSharedParts()},
	})
}

// BenchmarkProtobufRetainedHeap is BenchmarkJSONRetainedHeap for protobuf.
func BenchmarkProtobufRetainedHeap(b *testing.B) {
	benchRetained(b, protoWatchStream(b, benchPodEvents()...), decodeProtoPods, map[string][]CodecOption{
		"interned":       nil,
		"copied":         {WithoutStringInterning()},
		"generated":      {withGeneratedUnmarshal()},
		"generated+walk": {withGeneratedUnmarshal(), WithProtobufInterning()},
		"shared-parts":   {WithSharedParts()},
	})
}

func benchRetained(b *testing.B, stream []byte, decode func(testing.TB, *Codec[*corev1.Pod], []byte) []*corev1.Pod, variants map[string][]CodecOption) {
	for name, opts := range variants {
		b.Run(name, func(b *testing.B) {
			c := mustCodec[*corev1.Pod](b, podGVK, opts...)
			var retained float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				pods := decode(b, c, stream)
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained = float64(after.HeapAlloc-before.HeapAlloc) / float64(len(pods))
				runtime.KeepAlive(pods)
			}
			b.ReportMetric(retained, "retained-B/pod")
		})
	}
}

// decodeProtoPods decodes every event of a protobuf watch stream.
func decodeProtoPods(t testing.TB, c *Codec[*corev1.Pod], stream []byte) []*corev1.Pod {
	t.Helper()
	return objectsOf(t, NewProtobufWatchDecoder(bytes.NewReader(stream), c, 0).Next)
}

// Protobuf objects get the same sharing as JSON ones: the compiled
// decoder interns while decoding (equal objects; shared strings, FieldsV1
// bytes; the unique fields left alone). A type decoded by its generated
// Unmarshal gets it WithProtobufInterning, by a walk after decoding, for
// strings of 16 bytes or more.
func TestProtobufInterning(t *testing.T) {
	a, b := realisticPod(1), realisticPod(2)
	stream := protoWatchStream(t, event{"ADDED", a}, event{"ADDED", b})
	pods := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK), stream)
	copied := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK, WithoutStringInterning()), stream)
	generated := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK, withGeneratedUnmarshal()), stream)
	walked := decodeProtoPods(t, mustCodec[*corev1.Pod](t, podGVK, withGeneratedUnmarshal(), WithProtobufInterning()), stream)
	require.Len(t, pods, 2)
	for _, other := range [][]*corev1.Pod{copied, generated, walked} {
		require.Equal(t, generated, other, "interning changed the decoded objects")
	}

	for _, c := range []struct {
		name  string
		pods  []*corev1.Pod
		short bool // strings under 16 bytes are shared
	}{{"compiled", pods, true}, {"generated+walk", walked, false}} {
		p, q := c.pods[0], c.pods[1]
		require.True(t, sameData(p.Spec.Containers[0].Image, q.Spec.Containers[0].Image), "%s: image", c.name)
		require.True(t, sameData(p.Spec.Containers[0].TerminationMessagePath, q.Spec.Containers[0].TerminationMessagePath), "%s: termination message path", c.name)
		require.True(t, sameData(p.ManagedFields[0].Manager, q.ManagedFields[0].Manager), "%s: manager", c.name)
		require.True(t, sameData(p.Annotations["kubectl.kubernetes.io/restartedAt"], q.Annotations["kubectl.kubernetes.io/restartedAt"]), "%s: annotation value", c.name)
		require.Equal(t, c.short, sameData(p.Namespace, q.Namespace), "%s: namespace", c.name)
		require.Equal(t, p.ManagedFields[0].FieldsV1.GetRawString(), q.ManagedFields[0].FieldsV1.GetRawString())
		require.True(t, sameFieldsV1(p.ManagedFields[0].FieldsV1, q.ManagedFields[0].FieldsV1), "%s: identical FieldsV1 bytes", c.name)
		require.False(t, sameData(p.Name, q.Name), "%s: a name is not interned", c.name)
		require.False(t, sameData(string(p.UID), string(q.UID)), "%s: a uid is not interned", c.name)
		require.False(t, sameData(p.ResourceVersion, q.ResourceVersion), "%s: a resourceVersion is not interned", c.name)
	}
	for _, other := range [][]*corev1.Pod{copied, generated} {
		require.False(t, sameData(other[0].Spec.Containers[0].Image, other[1].Spec.Containers[0].Image), "interned WithoutStringInterning or without a walk")
	}
}

// Metadata-only objects are interned too.
func TestProtobufInterningMetadata(t *testing.T) {
	var objs []event
	for i := range 2 {
		p := realisticPod(i)
		objs = append(objs, event{"ADDED", &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: p.ObjectMeta,
		}})
	}
	dec := NewProtobufWatchDecoder(bytes.NewReader(protoWatchStream(t, objs...)), MetadataCodec(podGVK, WithProtobufInterning()), 0)
	first, err := dec.Next()
	require.NoError(t, err)
	second, err := dec.Next()
	require.NoError(t, err)
	require.True(t, sameData(first.Object.ManagedFields[0].Manager, second.Object.ManagedFields[0].Manager))
	semanticEqual(t, second.Object, objs[1].obj)
}

// stringInBuffer reads a string in place only when it lies whole in
// json-iterator's buffer without escapes or control characters; the
// iterator then goes on from after it, exactly as after ReadString.
// Everything else is left to ReadString, which finds the string untouched.
func TestStringInBuffer(t *testing.T) {
	require.True(t, iterFields.ok, "json-iterator's Iterator no longer has the fields stringInBuffer reads: JSON strings are all copied")
	api := newJSONAPI(false, nil, nil)
	const doc = `{"a":"plain","b":"","c":"with \"escapes\"","d":"café","e":"a string longer than sixteen bytes","f":"tab	inside","g":"last"}`
	want := map[string]string{"a": "plain", "b": "", "c": `with "escapes"`, "d": "café", "e": "a string longer than sixteen bytes", "f": "tab\tinside", "g": "last"}
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(doc) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(doc)) },
	} {
		for _, bufSize := range []int{8, 16, 4096} {
			t.Run(fmt.Sprint(name, bufSize), func(t *testing.T) {
				it := jsoniter.Parse(api, r(), bufSize)
				got, inPlace := map[string]string{}, map[string]bool{}
				it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
					require.Equal(t, jsoniter.StringValue, it.WhatIsNext())
					if b, ok := stringInBuffer(it); ok {
						got[key], inPlace[key] = string(b), true
					} else if s := it.ReadString(); it.Error == nil {
						got[key] = s
					}
					return true
				})
				if it.Error != nil { // the raw tab, refused by ReadString's fast path
					require.Contains(t, it.Error.Error(), "invalid control character")
					require.False(t, inPlace["f"])
					return
				}
				require.Equal(t, want, got)
				require.False(t, inPlace["c"] || inPlace["f"], "a string with an escape or a control character, read in place")
				if name == "whole" && bufSize == 4096 {
					require.Len(t, inPlace, 5, "every other string, in place")
				}
			})
		}
	}
}

// valueInBuffer takes an object or array that lies whole in json-iterator's
// buffer, brackets inside strings (escaped quotes included) not counted,
// and leaves the iterator after it; anything else is left to json-iterator.
func TestValueInBuffer(t *testing.T) {
	api := newJSONAPI(false, nil, nil)
	values := []string{
		`{"a":[1,{"b":"]}"}],"c":"\"}"}`,
		`[]`,
		`[{"k:{\"type\":\"Ready\"}":{}}, "x\\"]`,
		`{"long":"` + strings.Repeat("z", 100) + `"}`,
		`"a string"`,
		`12`,
	}
	doc := "[" + strings.Join(values, " , ") + "]"
	for _, bufSize := range []int{16, 64, 4096} {
		t.Run(fmt.Sprint(bufSize), func(t *testing.T) {
			it := jsoniter.Parse(api, strings.NewReader(doc), bufSize)
			var got []string
			inPlace := 0
			for it.ReadArray() {
				it.WhatIsNext() // as the decoders do: the value starts at head
				if b, ok := valueInBuffer(it, math.MaxInt); ok {
					got = append(got, string(b))
					inPlace++
					continue
				}
				got = append(got, string(it.SkipAndReturnBytes()))
			}
			require.NoError(t, it.Error)
			require.Equal(t, values, got)
			if bufSize == 4096 {
				require.Equal(t, 4, inPlace, "the objects and arrays")
			}
		})
	}
}

// FieldsV1 bytes found in the read buffer are validated before the table
// keeps them, as json-iterator's Skip validated them before; a second
// object with the same bytes gets the kept copy.
func TestFieldsV1InBufferIsValidated(t *testing.T) {
	table := newInternTable()
	api := newJSONAPI(false, table, nil)
	decode := func(fields string) (*metav1.ObjectMeta, error) {
		var m metav1.ObjectMeta
		it := api.BorrowIterator([]byte(`{"name":"a","managedFields":[{"manager":"m","fieldsV1":` + fields + `}]}`))
		defer api.ReturnIterator(it)
		it.ReadVal(&m)
		return &m, it.Error
	}
	for _, bad := range []string{`{"f:a" {}}`, `{"f:a":{},}`, `[1 2]`, `{"f:a":{}]`, `{"f:a":tru}`} {
		_, err := decode(bad)
		require.Error(t, err, bad)
		require.Error(t, json.Unmarshal([]byte(bad), new(any)), "apimachinery refuses %s too", bad)
	}
	const good = `{"f:metadata":{"f:labels":{"f:app":{}}},"k:{\"type\":\"Ready\"}":{".":{}}}`
	first, err := decode(good)
	require.NoError(t, err)
	second, err := decode(good)
	require.NoError(t, err)
	require.Equal(t, good, first.ManagedFields[0].FieldsV1.GetRawString())
	require.True(t, sameFieldsV1(first.ManagedFields[0].FieldsV1, second.ManagedFields[0].FieldsV1))
}
