package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	goruntime "runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func drainProto[T any](t *testing.T, r io.Reader, c *Codec[T], maxFrame int) ([]Event[T], error) {
	t.Helper()
	evs, err := drainNext(NewProtobufWatchDecoder(r, c, maxFrame).Next)
	sameAsParallel(t, r, evs, err, func(r io.Reader) *ParallelWatchDecoder[T] {
		return NewParallelProtobufWatchDecoder(r, c, maxFrame, parallelWorkers)
	})
	return evs, err
}

func TestProtobufWatchRoundTrip(t *testing.T) {
	pods := []*corev1.Pod{realisticPod(1), realisticPod(2), realisticPod(3)}
	stream := protoWatchStream(t,
		event{"ADDED", pods[0]}, event{"MODIFIED", pods[1]}, event{"DELETED", pods[2]},
		event{"BOOKMARK", bookmarkPod("200", true)},
		event{"ERROR", goneStatus()},
	)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			evs, err := drainProto(t, r(), mustCodec[*corev1.Pod](t, podGVK), 0)
			if err != io.EOF {
				t.Fatalf("end of stream: got %v, want io.EOF", err)
			}
			if len(evs) != 5 {
				t.Fatalf("got %d events, want 5", len(evs))
			}
			for i, typ := range []EventType{Added, Modified, Deleted} {
				if evs[i].Type != typ || evs[i].Status != nil {
					t.Fatalf("event %d: got %s, want %s", i, evs[i].Type, typ)
				}
				// Earlier objects must not alias the reused frame buffer.
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
			if e.Status.Message != goneStatus().Message || e.Status.Kind != "Status" {
				t.Fatalf("error event status: got %+v", e.Status)
			}
		})
	}
}

// JSON and protobuf give equal objects for the same state.
func TestProtobufMatchesJSON(t *testing.T) {
	check := func(t *testing.T, obj runtime.Object, jsonObj, protoObj any) {
		t.Helper()
		semanticEqual(t, jsonObj, protoObj)
		semanticEqual(t, protoObj, obj)
	}
	t.Run("Deployment", func(t *testing.T) {
		c := mustCodec[*appsv1.Deployment](t, deploymentGVK)
		d := testDeployment(3)
		je, _ := drainJSON(t, bytes.NewReader(jsonStream(t, event{"ADDED", d})), c, 0)
		pe, _ := drainProto(t, bytes.NewReader(protoWatchStream(t, event{"ADDED", d})), c, 0)
		check(t, d, je[0].Object, pe[0].Object)
	})
	t.Run("ConfigMap", func(t *testing.T) {
		c := mustCodec[*corev1.ConfigMap](t, configMapGVK)
		cm := testConfigMap(3)
		je, _ := drainJSON(t, bytes.NewReader(jsonStream(t, event{"ADDED", cm})), c, 0)
		pe, _ := drainProto(t, bytes.NewReader(protoWatchStream(t, event{"ADDED", cm})), c, 0)
		check(t, cm, je[0].Object, pe[0].Object)
	})
	t.Run("metadata", func(t *testing.T) {
		c := MetadataCodec(podGVK)
		pod := realisticPod(1)
		partial := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: pod.ObjectMeta}
		je, _ := drainJSON(t, bytes.NewReader(jsonStream(t, event{"ADDED", partial})), c, 0)
		pe, err := drainProto(t, bytes.NewReader(protoWatchStream(t, event{"ADDED", partial})), c, 0)
		if len(pe) != 1 {
			t.Fatal(err)
		}
		check(t, partial, je[0].Object, pe[0].Object)
	})
}

func TestProtobufWatchWithoutManagedFields(t *testing.T) {
	pods := []*corev1.Pod{realisticPod(1), realisticPod(2)}
	stream := protoWatchStream(t, event{"ADDED", pods[0]}, event{"MODIFIED", pods[1]})
	evs, err := drainProto(t, bytes.NewReader(stream), mustCodec[*corev1.Pod](t, podGVK, WithoutManagedFields()), 0)
	if err != io.EOF || len(evs) != 2 {
		t.Fatalf("got %d events, %v", len(evs), err)
	}
	for i, ev := range evs {
		semanticEqual(t, ev.Object, withoutManagedFields(pods[i]))
	}
	// The relabelling happens in the decoder's own buffer, not in the
	// caller's bytes.
	evs, _ = drainProto(t, bytes.NewReader(stream), mustCodec[*corev1.Pod](t, podGVK), 0)
	semanticEqual(t, evs[0].Object, pods[0])
}

func TestProtobufWatchWrongKindIsSkippable(t *testing.T) {
	stream := protoWatchStream(t,
		event{"ADDED", testConfigMap(1)},
		event{"ADDED", realisticPod(1)},
		event{"MODIFIED", testDeployment(1)},
		event{"DELETED", realisticPod(2)},
	)
	d := NewProtobufWatchDecoder(bytes.NewReader(stream), mustCodec[*corev1.Pod](t, podGVK), 0)
	var got []string
	for {
		ev, err := d.Next()
		if err == io.EOF {
			break
		}
		var wk *WrongKindError
		switch {
		case errors.As(err, &wk):
			got = append(got, "skip "+string(ev.Type)+" "+wk.Got.Kind+" "+wk.Got.GroupVersion().String())
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(ev.Type)+" "+ev.Object.Name)
		}
	}
	want := "skip ADDED ConfigMap v1|ADDED web-7d4b9c6f5-00001|skip MODIFIED Deployment apps/v1|DELETED web-7d4b9c6f5-00002"
	if strings.Join(got, "|") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// frame builds a raw frame around arbitrary WatchEvent bytes.
func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// tagged encodes one length-delimited protobuf field.
func tagged(num int, data []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(num<<3|wireBytes))
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func TestProtobufWatchErrors(t *testing.T) {
	pod := protoOf(t, realisticPod(1))
	good := protoFrame(t, "ADDED", pod)
	unknownEnvelope := func(apiVersion, kind string, raw []byte) []byte {
		tm := append(tagged(1, []byte(apiVersion)), tagged(2, []byte(kind))...)
		return append(append([]byte("k8s\x00"), tagged(1, tm)...), tagged(2, raw)...)
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		max    int
		want   error
		detail string
	}{
		{"truncated length prefix", good[:2], 0, io.ErrUnexpectedEOF, "length prefix"},
		{"truncated frame", good[:len(good)/2], 0, io.ErrUnexpectedEOF, "inside the frame"},
		{"second frame truncated", append(append([]byte{}, good...), good[:3]...), 0, io.ErrUnexpectedEOF, "event 2"},
		{"too large", good, 1000, ErrFrameTooLarge, "limit 1000"},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, 0, ErrFrameTooLarge, "4294967295 bytes"},
		{"unknown type", protoFrame(t, "RENAMED", pod), 0, ErrUnknownEventType, `"RENAMED"`},
		{"no type", frame(tagged(2, tagged(1, pod))), 0, ErrMalformed, "no type"},
		{"no object", frame(tagged(1, []byte("ADDED"))), 0, ErrMissingObject, "ADDED"},
		{"empty object", protoFrame(t, "DELETED", nil), 0, ErrMissingObject, ""},
		{"empty frame", frame(nil), 0, ErrMalformed, ""},
		{"garbage", frame([]byte{0xff, 0xff, 0xff}), 0, ErrMalformed, ""},
		{"type as varint", frame([]byte{0x08, 0x01}), 0, ErrMalformed, "wire type 0"},
		{"group wire type", frame([]byte{0x0b}), 0, ErrMalformed, "wire type 3"},
		{"field length past end", frame([]byte{0x0a, 0x7f, 'A'}), 0, ErrMalformed, "exceeds"},
		{"no magic", protoFrame(t, "ADDED", []byte(`{"kind":"Pod"}`)), 0, ErrMalformed, "prefix"},
		{"bad object", protoFrame(t, "ADDED", unknownEnvelope("v1", "Pod", []byte{0x0a, 0x05, 0x01})), 0, ErrMalformed, "Pod"},
		{"gzip encoded", protoFrame(t, "ADDED", append(unknownEnvelope("v1", "Pod", nil), tagged(3, []byte("gzip"))...)), 0, ErrMalformed, "gzip"},
		{"JSON inside", protoFrame(t, "ADDED", append(unknownEnvelope("v1", "Pod", []byte("{}")), tagged(4, []byte("application/json"))...)), 0, ErrMalformed, "application/json"},
		{"bad status", protoFrame(t, "ERROR", unknownEnvelope("v1", "Status", []byte{0x2a, 0x05})), 0, ErrMalformed, "Status"},
	} {
		c := mustCodec[*corev1.Pod](t, podGVK)
		t.Run(tc.name, func(t *testing.T) {
			checkFinalError(t, NewProtobufWatchDecoder(bytes.NewReader(tc.stream), c, tc.max).Next, tc.want, tc.detail)
		})
		t.Run(tc.name+"/parallel", func(t *testing.T) {
			d := NewParallelProtobufWatchDecoder(bytes.NewReader(tc.stream), c, tc.max, parallelWorkers)
			defer d.Close()
			checkFinalError(t, d.Next, tc.want, tc.detail)
		})
	}
}

// A frame over the limit is refused from its length prefix alone: nothing
// is allocated for it and its bytes are not read. A length prefix under the
// limit that lies costs memory only for the bytes that really arrive.
func TestProtobufWatchFrameMemory(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	t.Run("over the limit", func(t *testing.T) {
		r := &countingReader{r: bytes.NewReader(append([]byte{0x40, 0, 0, 0}, make([]byte, 1<<20)...))}
		var err error
		if alloc := allocatedBy(func() { _, err = NewProtobufWatchDecoder(r, c, 1<<20).Next() }); alloc > 64<<10 {
			t.Fatalf("allocated %d bytes", alloc)
		}
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("got %v", err)
		}
		if r.n != 4 {
			t.Fatalf("read %d bytes, want only the 4-byte prefix", r.n)
		}
	})
	t.Run("lying prefix", func(t *testing.T) {
		stream := append([]byte{0x3f, 0xff, 0xff, 0xff}, make([]byte, 3<<20)...) // claims 1 GiB, sends 3 MiB
		var err error
		if alloc := allocatedBy(func() { _, err = NewProtobufWatchDecoder(bytes.NewReader(stream), c, 1<<30).Next() }); alloc > 16<<20 {
			t.Fatalf("allocated %d bytes for 3 MiB received", alloc)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("got %v", err)
		}
	})
}

// allocatedBy reports the bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	f()
	goruntime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestProtobufWatchReadError(t *testing.T) {
	boom := errors.New("connection reset")
	good := protoFrame(t, "ADDED", protoOf(t, realisticPod(1)))
	evs, err := drainProto(t, io.MultiReader(bytes.NewReader(good), bytes.NewReader(good[:10]), iotest.ErrReader(boom)), mustCodec[*corev1.Pod](t, podGVK), 0)
	if len(evs) != 1 || !errors.Is(err, boom) {
		t.Fatalf("got %d events and %v", len(evs), err)
	}
}

func TestProtobufWatchUnsupported(t *testing.T) {
	_, err := NewProtobufWatchDecoder(bytes.NewReader(nil), UnstructuredCodec(podGVK), 0).Next()
	if !errors.Is(err, ErrProtobufUnsupported) {
		t.Fatalf("got %v", err)
	}
}

// Frames larger than the retained buffer get one of their own; the
// decoder keeps working across sizes.
func TestProtobufWatchLargeFrames(t *testing.T) {
	big := testConfigMap(1)
	big.Data["big"] = strings.Repeat("x", maxRetainedFrame+10)
	small := testConfigMap(2)
	stream := protoWatchStream(t, event{"ADDED", small}, event{"ADDED", big}, event{"ADDED", small})
	evs, err := drainProto(t, bytes.NewReader(stream), mustCodec[*corev1.ConfigMap](t, configMapGVK), 0)
	if err != io.EOF || len(evs) != 3 {
		t.Fatalf("got %d events, %v", len(evs), err)
	}
	semanticEqual(t, evs[1].Object, big)
	semanticEqual(t, evs[2].Object, small)
}

// An ERROR event whose object is not a Status comes out as a Status that
// keeps the object's kind, from either encoding, so the error can say what
// the server sent (rest.FromStatus).
func TestErrorEventWithAnotherObject(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	pod := realisticPod(1)
	decoders := map[string]func() (Event[*corev1.Pod], error){
		"json":     NewJSONWatchDecoder(bytes.NewReader(jsonStream(t, event{"ERROR", pod})), c, 0).Next,
		"protobuf": NewProtobufWatchDecoder(bytes.NewReader(protoWatchStream(t, event{"ERROR", pod})), c, 0).Next,
	}
	for name, next := range decoders {
		t.Run(name, func(t *testing.T) {
			ev, err := next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != Error || ev.Status == nil || ev.Status.Kind != "Pod" || ev.Status.APIVersion != "v1" {
				t.Fatalf("got %+v, status %+v", ev, ev.Status)
			}
		})
	}
}

// A RawExtension's fields other than raw (1) are skipped, as its
// generated Unmarshal skips them, not taken for the object.
func TestProtobufWatchSkipsUnknownRawExtensionFields(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	pod := realisticPod(1)
	ext := append(tagged(1, protoOf(t, pod)), tagged(2, []byte("not the object"))...)
	we := append(tagged(1, []byte("ADDED")), tagged(2, ext)...)
	evs, err := drainProto(t, bytes.NewReader(frame(we)), c, 0)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 1)
	require.Equal(t, pod.Name, evs[0].Object.Name)
	require.Equal(t, pod.Spec, evs[0].Object.Spec)
}
