package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	goruntime "runtime"
	"testing"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	kjson "sigs.k8s.io/json"
)

// Benchmarks decode a stream of realistic pods (realisticPod: ~4.7 KB of
// JSON, ~2.4 KB of protobuf, two managedFields entries). One op is one
// event; MB/s counts the stream's bytes. The Apimachinery benchmarks decode
// the same bytes the way client-go does, as the baseline.

const benchEvents = 1000

func benchPodEvents() []event {
	evs := make([]event, benchEvents)
	for i := range evs {
		typ := "MODIFIED"
		if i%10 == 0 {
			typ = "ADDED"
		}
		evs[i] = event{typ, realisticPod(i)}
	}
	return evs
}

// benchWatch runs next over the stream of benchEvents events again and
// again, b.N events in all.
func benchWatch[T any](b *testing.B, stream []byte, open func(io.Reader) func() (T, error)) {
	benchWatchN(b, stream, benchEvents, open)
}

// benchWatchN is benchWatch for a stream of n events.
func benchWatchN[T any](b *testing.B, stream []byte, n int, open func(io.Reader) func() (T, error)) {
	b.SetBytes(int64(len(stream) / n))
	b.ReportAllocs()
	b.ResetTimer()
	var next func() (T, error)
	for i := range b.N {
		if i%n == 0 {
			next = open(bytes.NewReader(stream))
		}
		if _, err := next(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchParallel is benchWatch for a ParallelWatchDecoder, which must be
// closed. With GOMAXPROCS=1 it measures the pipeline's overhead; with more,
// its speed-up.
func benchParallel[T any](b *testing.B, stream []byte, open func(io.Reader) *ParallelWatchDecoder[T]) {
	var d *ParallelWatchDecoder[T]
	defer func() { d.Close() }()
	benchWatch(b, stream, func(r io.Reader) func() (Event[T], error) {
		if d != nil {
			d.Close()
		}
		d = open(r)
		return d.Next
	})
}

func BenchmarkJSONWatchDecode(b *testing.B) {
	stream := jsonStream(b, benchPodEvents()...)
	b.Run("typed-parallel", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK)
		benchParallel(b, stream, func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelJSONWatchDecoder(r, c, 0, goruntime.GOMAXPROCS(0))
		})
	})
	b.Run("typed", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK)
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewJSONWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-shared-parts", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, WithSharedParts())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewJSONWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-without-managedFields", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, WithoutManagedFields())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewJSONWatchDecoder(r, c, 0).Next })
	})
	b.Run("metadata", func(b *testing.B) {
		c := MetadataCodec(podGVK)
		benchWatch(b, stream, func(r io.Reader) func() (Event[*metav1.PartialObjectMetadata], error) {
			return NewJSONWatchDecoder(r, c, 0).Next
		})
	})
	b.Run("unstructured", func(b *testing.B) {
		c := UnstructuredCodec(podGVK)
		benchWatch(b, stream, func(r io.Reader) func() (Event[*unstructuredObj], error) { return NewJSONWatchDecoder(r, c, 0).Next })
	})
}

func BenchmarkProtobufWatchDecode(b *testing.B) {
	stream := protoWatchStream(b, benchPodEvents()...)
	b.Run("typed-parallel", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK)
		benchParallel(b, stream, func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelProtobufWatchDecoder(r, c, 0, goruntime.GOMAXPROCS(0))
		})
	})
	b.Run("typed", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK)
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-copied", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, WithoutStringInterning())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-shared-parts", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, WithSharedParts())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-generated", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, withGeneratedUnmarshal())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-generated-interned", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, withGeneratedUnmarshal(), WithProtobufInterning())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("typed-without-managedFields", func(b *testing.B) {
		c := mustCodec[*corev1.Pod](b, podGVK, WithoutManagedFields())
		benchWatch(b, stream, func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next })
	})
	b.Run("metadata", func(b *testing.B) {
		c := MetadataCodec(podGVK)
		benchWatch(b, stream, func(r io.Reader) func() (Event[*metav1.PartialObjectMetadata], error) {
			return NewProtobufWatchDecoder(r, c, 0).Next
		})
	})
}

// BenchmarkApimachineryJSONWatchDecode decodes the JSON stream the way
// client-go's watch decoder does with k8s.io/apimachinery's JSON
// serializer: a json.Decoder frames each event (the serializer's framer);
// the serializer decodes the frame into a metav1.WatchEvent (Interpret
// reads apiVersion/kind with encoding/json, then sigs.k8s.io/json fills the
// struct, copying the object into a RawExtension); the object goes through
// the serializer again (Interpret, scheme.New, sigs.k8s.io/json) and
// WithoutVersionDecoder clears its kind. The serializer package itself
// cannot be imported here without adding sigs.k8s.io/yaml to go.mod, so
// its Decode steps are spelled out with the same libraries in the same
// order (see apimachineryJSONWatch). Checked against the real serializer
// (json.NewSerializerWithOptions + json.Framer + streaming.NewDecoder) in a
// copy of the module that requires sigs.k8s.io/yaml: the CPU per event
// agreed within 5%.
func BenchmarkApimachineryJSONWatchDecode(b *testing.B) {
	stream := jsonStream(b, benchPodEvents()...)
	scheme := testScheme(b)
	benchWatch(b, stream, func(r io.Reader) func() (runtime.Object, error) {
		return newApimachineryJSONWatch(r, scheme).next
	})
}

// BenchmarkApimachineryProtobufWatchDecode decodes the protobuf stream
// exactly as client-go does: streaming.Decoder over the length-delimited
// framer with protobuf.RawSerializer for the WatchEvent, then
// protobuf.Serializer behind runtime.WithoutVersionDecoder for the object.
func BenchmarkApimachineryProtobufWatchDecode(b *testing.B) {
	stream := protoWatchStream(b, benchPodEvents()...)
	scheme := testScheme(b)
	raw := protobuf.NewRawSerializer(scheme, scheme)
	embedded := runtime.WithoutVersionDecoder{Decoder: protobuf.NewSerializer(scheme, scheme)}
	benchWatch(b, stream, func(r io.Reader) func() (runtime.Object, error) {
		dec := streaming.NewDecoder(protobuf.LengthDelimitedFramer.NewFrameReader(io.NopCloser(r)), raw)
		return func() (runtime.Object, error) {
			var got metav1.WatchEvent
			if _, _, err := dec.Decode(nil, &got); err != nil {
				return nil, err
			}
			return runtime.Decode(embedded, got.Object.Raw)
		}
	})
}

// apimachineryJSONWatch is client-go's JSON watch decoding, step by step.
type apimachineryJSONWatch struct {
	frames *json.Decoder
	buf    []byte
	scheme *runtime.Scheme
}

func newApimachineryJSONWatch(r io.Reader, scheme *runtime.Scheme) *apimachineryJSONWatch {
	return &apimachineryJSONWatch{frames: json.NewDecoder(r), buf: make([]byte, 1024), scheme: scheme}
}

func (a *apimachineryJSONWatch) next() (runtime.Object, error) {
	// The framer decodes a json.RawMessage and copies it into the
	// streaming decoder's buffer.
	var frame json.RawMessage
	if err := a.frames.Decode(&frame); err != nil {
		return nil, err
	}
	a.buf = append(a.buf[:0], frame...)
	var got metav1.WatchEvent
	if err := a.decode(a.buf, &got); err != nil {
		return nil, err
	}
	obj, err := a.decodeNew(got.Object.Raw)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // WithoutVersionDecoder
	return obj, nil
}

// interpret is json.SimpleMetaFactory.Interpret.
func interpret(data []byte) (*schema.GroupVersionKind, error) {
	findKind := struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}{}
	if err := json.Unmarshal(data, &findKind); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(findKind.APIVersion)
	if err != nil {
		return nil, err
	}
	return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: findKind.Kind}, nil
}

// decode is json.Serializer.Decode into a registered object.
func (a *apimachineryJSONWatch) decode(data []byte, into runtime.Object) error {
	if _, err := interpret(data); err != nil {
		return err
	}
	if _, _, err := a.scheme.ObjectKinds(into); err != nil {
		return err
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(data, into)
}

// decodeNew is json.Serializer.Decode with no target: the kind picks the type.
func (a *apimachineryJSONWatch) decodeNew(data []byte) (runtime.Object, error) {
	gvk, err := interpret(data)
	if err != nil {
		return nil, err
	}
	obj, err := a.scheme.New(*gvk)
	if err != nil {
		return nil, err
	}
	return obj, kjson.UnmarshalCaseSensitivePreserveInts(data, obj)
}

// BenchmarkJSONLibraries decodes one pod's JSON into a *corev1.Pod with
// each candidate library: the reason this package uses json-iterator.
func BenchmarkJSONLibraries(b *testing.B) {
	data := jsonOf(b, realisticPod(1))
	api := newJSONAPI(false, nil, nil)
	for name, decode := range map[string]func() error{
		"encoding-json":    func() error { return json.Unmarshal(data, new(corev1.Pod)) },
		"sigs.k8s.io-json": func() error { return kjson.UnmarshalCaseSensitivePreserveInts(data, new(corev1.Pod)) },
		"json-iterator": func() error {
			it := api.BorrowIterator(data)
			defer api.ReturnIterator(it)
			it.ReadVal(new(corev1.Pod))
			return it.Error
		},
		"json-iterator-reader": func() error {
			it := jsoniter.Parse(api, bytes.NewReader(data), 4096)
			it.ReadVal(new(corev1.Pod))
			return it.Error
		},
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(); err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkListDecode(b *testing.B) {
	list, _ := podList(benchEvents, "1", "", nil)
	c := mustCodec[*corev1.Pod](b, podGVK)
	for name, tc := range map[string]struct {
		body   []byte
		decode func(io.Reader) error
	}{
		"JSON": {jsonOf(b, list), func(r io.Reader) error {
			_, err := DecodeJSONList(r, c, 0, discard[*corev1.Pod])
			return err
		}},
		"protobuf": {protoOf(b, list), func(r io.Reader) error {
			_, err := DecodeProtobufList(r, c, 0, discard[*corev1.Pod])
			return err
		}},
	} {
		b.Run(name, func(b *testing.B) {
			// One op is the whole list of benchEvents items.
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.decode(bytes.NewReader(tc.body)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/item")
		})
	}
}

// BenchmarkJSONLargeStrings decodes ConfigMaps holding 100 KB of text in
// three values, longer than the read buffer and full of escapes (\n), as
// kube-apiserver writes configuration files, and Secrets holding the same
// text as bytes (base64). One op is one event.
func BenchmarkJSONLargeStrings(b *testing.B) {
	const n = 20
	data := func(i int) map[string]string {
		return map[string]string{
			"application.yaml": configText(i, 50<<10),
			"routes.yaml":      configText(i+n, 25<<10),
			"features.yaml":    configText(i+2*n, 25<<10),
		}
	}
	configMaps, secrets := make([]event, n), make([]event, n)
	for i := range n {
		cm := testConfigMap(i)
		cm.Data, cm.BinaryData = data(i), nil
		configMaps[i] = event{"ADDED", cm}
		s := &corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: cm.ObjectMeta, Data: map[string][]byte{}}
		for k, v := range data(i) {
			s.Data[k] = []byte(v)
		}
		secrets[i] = event{"ADDED", s}
	}
	b.Run("configmaps", func(b *testing.B) {
		benchJSONEvents(b, configMaps, mustCodec[*corev1.ConfigMap](b, configMapGVK))
	})
	b.Run("configmaps-shared-parts", func(b *testing.B) {
		benchJSONEvents(b, configMaps, mustCodec[*corev1.ConfigMap](b, configMapGVK, WithSharedParts()))
	})
	b.Run("secrets", func(b *testing.B) {
		benchJSONEvents(b, secrets, mustCodec[*corev1.Secret](b, corev1.SchemeGroupVersion.WithKind("Secret")))
	})
}

// benchJSONEvents decodes a JSON watch stream of events with c.
func benchJSONEvents[T any](b *testing.B, events []event, c *Codec[T]) {
	benchWatchN(b, jsonStream(b, events...), len(events), func(r io.Reader) func() (Event[T], error) {
		return NewJSONWatchDecoder(r, c, 0).Next
	})
}

// configText returns about size bytes of YAML-like lines.
func configText(seed, size int) string {
	var s []byte
	for line := 0; len(s) < size; line++ {
		s = fmt.Appendf(s, "setting_%05d: value-%08x-%d\n", line, seed*7919+line, seed)
	}
	return string(s)
}
