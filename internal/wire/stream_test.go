package wire

import (
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
