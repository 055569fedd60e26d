package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A watch decoder must hand out an event as soon as its last byte has
// arrived, without reading ahead into bytes the server has not sent yet:
// otherwise a quiet watch would hold back the last change.
func TestWatchDecodersDoNotWaitForTheNextEvent(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for name, tc := range map[string]struct {
		encode func(event) []byte
		open   func(io.Reader) func() (Event[*corev1.Pod], error)
	}{
		"JSON": {
			func(e event) []byte { return jsonStream(t, e) },
			func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewJSONWatchDecoder(r, c, 0).Next },
		},
		"JSON without newline": {
			func(e event) []byte { b := jsonStream(t, e); return b[:len(b)-1] },
			func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewJSONWatchDecoder(r, c, 0).Next },
		},
		"protobuf": {
			func(e event) []byte { return protoWatchStream(t, e) },
			func(r io.Reader) func() (Event[*corev1.Pod], error) { return NewProtobufWatchDecoder(r, c, 0).Next },
		},
		"JSON parallel": {
			func(e event) []byte { b := jsonStream(t, e); return b[:len(b)-1] },
			func(r io.Reader) func() (Event[*corev1.Pod], error) {
				d := NewParallelJSONWatchDecoder(r, c, 0, parallelWorkers)
				t.Cleanup(d.Close)
				return d.Next
			},
		},
		"protobuf parallel": {
			func(e event) []byte { return protoWatchStream(t, e) },
			func(r io.Reader) func() (Event[*corev1.Pod], error) {
				d := NewParallelProtobufWatchDecoder(r, c, 0, parallelWorkers)
				t.Cleanup(d.Close)
				return d.Next
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pr, pw := io.Pipe()
			next := tc.open(pr)
			proceed := make(chan struct{})
			done := make(chan error)
			go func() {
				_, err := pw.Write(tc.encode(event{"ADDED", realisticPod(1)}))
				if err == nil {
					<-proceed
					_, err = pw.Write(tc.encode(event{"DELETED", realisticPod(2)}))
				}
				pw.Close()
				done <- err
			}()
			// The second event is written only after the first is decoded:
			// a decoder that waited for more bytes would deadlock here.
			ev, err := next()
			if err != nil || ev.Type != Added || ev.Object.Name != realisticPod(1).Name {
				t.Fatalf("first event: %+v, %v", ev.Type, err)
			}
			close(proceed)
			ev, err = next()
			if err != nil || ev.Type != Deleted {
				t.Fatalf("second event: %+v, %v", ev.Type, err)
			}
			if _, err := next(); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An ERROR event whose Status does not say its kind is still read as a
// Status, code and reason kept (410 Expired: the informer relists), by
// both decoders, as a kindless protobuf Status is; so is one of an
// apiVersion no Status has, which is not checked (Event).
func TestErrorEventWithKindlessStatus(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	status := metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}
	st, err := status.Marshal()
	require.NoError(t, err)
	protoObj := append(append([]byte(nil), protobufMagic...), tagged(2, st)...) // an Unknown without typeMeta
	jsonObj, err := json.Marshal(status)                                        // no kind, no apiVersion
	require.NoError(t, err)
	v2 := status
	v2.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v2"}
	jsonV2, err := json.Marshal(v2)
	require.NoError(t, err)
	protoV2 := append(append([]byte(nil), protobufMagic...), append(tagged(1, append(tagged(1, []byte("v2")), tagged(2, []byte("Status"))...)), tagged(2, st)...)...)
	decoders := map[string]func() (Event[*corev1.Pod], error){
		"json":        NewJSONWatchDecoder(strings.NewReader(`{"type":"ERROR","object":`+string(jsonObj)+"}\n"), c, 0).Next,
		"protobuf":    NewProtobufWatchDecoder(bytes.NewReader(protoFrame(t, "ERROR", protoObj)), c, 0).Next,
		"json v2":     NewJSONWatchDecoder(strings.NewReader(`{"type":"ERROR","object":`+string(jsonV2)+"}\n"), c, 0).Next,
		"protobuf v2": NewProtobufWatchDecoder(bytes.NewReader(protoFrame(t, "ERROR", protoV2)), c, 0).Next,
	}
	for name, next := range decoders {
		t.Run(name, func(t *testing.T) {
			ev, err := next()
			require.NoError(t, err)
			require.Equal(t, Error, ev.Type)
			require.NotNil(t, ev.Status)
			require.EqualValues(t, 410, ev.Status.Code)
			require.Equal(t, metav1.StatusReasonExpired, ev.Status.Reason)
			require.Equal(t, status.Message, ev.Status.Message)
		})
	}
}

// An event of exactly maxFrame bytes is decoded; one byte more is too
// large: protobuf and JSON, sequential and parallel.
func TestFrameOfExactlyTheLimit(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	pod := realisticPod(1)
	protoStream := protoWatchStream(t, event{"ADDED", pod})
	protoLen := len(protoStream) - 4
	jsonEv := jsonStream(t, event{"ADDED", pod}) // one line, then "\n"
	jsonLen := len(jsonEv) - 1
	decoders := map[string]func(max int) func() (Event[*corev1.Pod], error){
		"protobuf": func(max int) func() (Event[*corev1.Pod], error) {
			return NewProtobufWatchDecoder(bytes.NewReader(protoStream), c, max).Next
		},
		"protobuf parallel": func(max int) func() (Event[*corev1.Pod], error) {
			d := NewParallelProtobufWatchDecoder(bytes.NewReader(protoStream), c, max, parallelWorkers)
			t.Cleanup(d.Close)
			return d.Next
		},
		"JSON": func(max int) func() (Event[*corev1.Pod], error) {
			return NewJSONWatchDecoder(bytes.NewReader(jsonEv), c, max).Next
		},
		"JSON parallel": func(max int) func() (Event[*corev1.Pod], error) {
			d := NewParallelJSONWatchDecoder(bytes.NewReader(jsonEv), c, max, parallelWorkers)
			t.Cleanup(d.Close)
			return d.Next
		},
	}
	for name, open := range decoders {
		t.Run(name, func(t *testing.T) {
			limit := protoLen
			if strings.HasPrefix(name, "JSON") {
				limit = jsonLen
			}
			evs, err := drainNext(open(limit))
			require.ErrorIs(t, err, io.EOF, "a frame of exactly the limit")
			require.Len(t, evs, 1)
			require.Equal(t, pod.Name, evs[0].Object.Name)
			_, err = drainNext(open(limit - 1))
			require.ErrorIs(t, err, ErrFrameTooLarge, "a frame one byte over the limit")
		})
	}
}
