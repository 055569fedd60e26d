package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// parallelWorkers is how many workers the differential checks use: more
// than one, so that events are decoded out of order.
const parallelWorkers = 3

// sameAsParallel decodes stream again with the parallel decoder and fails
// unless it gives the same events and the same error as the sequential
// decoder did (evs, err). Streams that are not in memory are left alone:
// the read errors and stuck readers of some tests cannot be replayed.
func sameAsParallel[T any](t *testing.T, r io.Reader, evs []Event[T], err error, open func(io.Reader) *ParallelWatchDecoder[T]) {
	t.Helper()
	var data []byte
	switch r := r.(type) {
	case *bytes.Reader:
		data = make([]byte, r.Size())
		r.ReadAt(data, 0)
	case *strings.Reader:
		data = make([]byte, r.Size())
		r.ReadAt(data, 0)
	default:
		return
	}
	p := open(bytes.NewReader(data))
	defer p.Close()
	pevs, perr := drainNext(p.Next)
	if len(pevs) != len(evs) {
		t.Fatalf("parallel decoder: %d events, sequential %d", len(pevs), len(evs))
	}
	for i := range evs {
		if !reflect.DeepEqual(pevs[i], evs[i]) {
			t.Fatalf("event %d: parallel decoder\n\t%s\nsequential\n\t%s", i+1, jsonOfAny(pevs[i]), jsonOfAny(evs[i]))
		}
	}
	if !sameError(perr, err) {
		t.Fatalf("parallel decoder ended with\n\t%v\nsequential with\n\t%v", perr, err)
	}
}

func drainNext[T any](next func() (Event[T], error)) ([]Event[T], error) {
	var evs []Event[T]
	for {
		ev, err := next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// sameError reports whether two decoders ended alike: both cleanly, both
// at the same skippable error, or both broken. Broken streams may say so
// differently: the parallel decoder's framer notices a stream cut inside
// an event before the event's syntax error that the sequential decoder
// meets first, and the reflector treats every broken stream alike.
func sameError(a, b error) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case a == io.EOF || b == io.EOF:
		return a == b
	case errors.Is(a, ErrWrongKind) || errors.Is(b, ErrWrongKind):
		return a.Error() == b.Error()
	}
	return true
}

// checkFinalError decodes until an error and checks that it is want, that
// its message mentions detail, and that the decoder keeps returning it.
func checkFinalError[T any](t *testing.T, next func() (Event[T], error), want error, detail string) {
	t.Helper()
	var err error
	for err == nil {
		_, err = next()
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), detail) {
		t.Fatalf("error %q does not mention %q", err, detail)
	}
	if _, again := next(); again != err {
		t.Fatalf("second call: got %v, want the same %v", again, err)
	}
}

// A JSON stream that is not one event per line is decoded in order by the
// reader itself: a pretty-printed stream gives the same events as the
// sequential decoder gives (the objects of a compact one, but for the
// managed fields, kept as they came, as apimachinery keeps them), and an
// event broken off before the next one is reported as soon as the next one
// arrives, as the sequential decoder would, not when the braces happen to
// balance.
func TestParallelJSONNotOnePerLine(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	evs := []event{{"ADDED", realisticPod(1)}, {"MODIFIED", realisticPod(2)}, {"DELETED", realisticPod(3)}}
	t.Run("pretty-printed", func(t *testing.T) {
		var pretty bytes.Buffer
		for _, e := range evs {
			b, err := json.MarshalIndent(map[string]any{"type": e.typ, "object": e.obj}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			pretty.Write(append(b, '\n'))
		}
		want, err := drainNext(NewJSONWatchDecoder(bytes.NewReader(pretty.Bytes()), c, 0).Next)
		if err != io.EOF || len(want) != len(evs) {
			t.Fatalf("sequential decoder: %d events, %v", len(want), err)
		}
		compact, err := drainNext(NewJSONWatchDecoder(bytes.NewReader(jsonStream(t, evs...)), c, 0).Next)
		if err != io.EOF || len(compact) != len(evs) {
			t.Fatalf("compact stream: %d events, %v", len(compact), err)
		}
		for i := range want {
			a, b := want[i].Object.DeepCopy(), compact[i].Object.DeepCopy()
			a.ManagedFields, b.ManagedFields = nil, nil
			if want[i].Type != compact[i].Type {
				t.Fatalf("event %d: %s, compact %s", i, want[i].Type, compact[i].Type)
			}
			semanticEqual(t, a, b)
		}
		d := NewParallelJSONWatchDecoder(bytes.NewReader(pretty.Bytes()), c, 0, parallelWorkers)
		defer d.Close()
		got, err := drainNext(d.Next)
		if err != io.EOF {
			t.Fatalf("pretty-printed stream ended with %v", err)
		}
		semanticEqual(t, got, want)
	})
	t.Run("broken event", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		d := NewParallelJSONWatchDecoder(pr, c, 0, parallelWorkers)
		defer func() { pr.Close(); d.Close() }()
		go pw.Write(append([]byte("{\"type\":\"ADDED\",\"object\":{\"kind\":\n"), jsonStream(t, evs...)...))
		// The stream stays open: the error must not wait for its end.
		_, err := d.Next()
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "event 1") {
			t.Fatalf("got %v, want a malformed event 1", err)
		}
	})
	t.Run("events before the broken one", func(t *testing.T) {
		stream := append(jsonStream(t, evs[0]), "{\"type\":\"ADDED\",\"object\":{\"kind\":\n"...)
		stream = append(stream, jsonStream(t, evs[1:]...)...)
		seq, seqErr := drainNext(NewJSONWatchDecoder(bytes.NewReader(stream), c, 0).Next)
		sameAsParallel(t, bytes.NewReader(stream), seq, seqErr, func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelJSONWatchDecoder(r, c, 0, parallelWorkers)
		})
		if len(seq) != 1 || !errors.Is(seqErr, ErrMalformed) || !strings.Contains(seqErr.Error(), "event 2") {
			t.Fatalf("sequential: %d events, %v", len(seq), seqErr)
		}
	})
}

// Many events, decoded by more workers than there are CPUs, come out in
// stream order.
func TestParallelKeepsOrder(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	var evs []event
	for i := range 300 {
		evs = append(evs, event{"MODIFIED", realisticPod(i)})
	}
	for name, open := range map[string]func() *ParallelWatchDecoder[*corev1.Pod]{
		"JSON": func() *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelJSONWatchDecoder(bytes.NewReader(jsonStream(t, evs...)), c, 0, 8)
		},
		"protobuf": func() *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelProtobufWatchDecoder(bytes.NewReader(protoWatchStream(t, evs...)), c, 0, 8)
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := open()
			defer d.Close()
			got, err := drainNext(d.Next)
			if err != io.EOF || len(got) != len(evs) {
				t.Fatalf("%d events, %v", len(got), err)
			}
			for i, ev := range got {
				if ev.Object.Name != realisticPod(i).Name {
					t.Fatalf("event %d is %s, want %s", i, ev.Object.Name, realisticPod(i).Name)
				}
			}
		})
	}
}

// A worker count past MaxParallelWorkers is lowered to it: 100k would
// start 100k goroutines per watch, and math.MaxInt overflowed the count of
// jobs.
func TestParallelWorkersAreBounded(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for _, workers := range []int{100_000, math.MaxInt} {
		d := NewParallelJSONWatchDecoder(bytes.NewReader(jsonStream(t, event{"ADDED", realisticPod(1)})), c, 0, workers)
		if got, want := cap(d.free), 2*MaxParallelWorkers+2; got != want {
			t.Errorf("%d workers: %d jobs, want %d", workers, got, want)
		}
		evs, err := drainNext(d.Next)
		if err != io.EOF || len(evs) != 1 {
			t.Errorf("%d workers: %d events, %v", workers, len(evs), err)
		}
		d.Close()
	}
}

// Close returns once the body is closed, whatever the reader and the
// workers were doing, and Next then fails instead of blocking.
func TestParallelClose(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for name, open := range map[string]func(io.Reader) *ParallelWatchDecoder[*corev1.Pod]{
		"JSON": func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] { return NewParallelJSONWatchDecoder(r, c, 0, 2) },
		"protobuf": func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelProtobufWatchDecoder(r, c, 0, 2)
		},
	} {
		t.Run(name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			d := open(pr)
			pr.Close() // the body, closed by the caller first
			d.Close()
			d.Close() // twice is fine
			if _, err := d.Next(); err == nil {
				t.Fatal("Next after Close: no error")
			}
		})
	}
}

// TestByteBudget checks that acquire waits while the frames in flight
// leave no room (unless nothing is held), that release wakes it, and that
// close wakes a waiting acquire, which then fails. Inside a synctest
// bubble, synctest.Wait lets the acquiring goroutine park in cond.Wait
// before each check that it has not returned.
func TestByteBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b byteBudget
		b.init(10)
		require.True(t, b.acquire(25), "alone, a frame larger than the budget goes")

		acquired := make(chan bool)
		go func() { acquired <- b.acquire(1) }()
		synctest.Wait()
		select {
		case <-acquired:
			t.Fatal("acquired past the budget")
		default:
		}
		b.release(25)
		require.True(t, <-acquired, "acquire refused after release")

		// 1 byte is held; 20 more do not fit, so this acquire waits
		// until close wakes it.
		go func() { acquired <- b.acquire(20) }()
		synctest.Wait()
		select {
		case <-acquired:
			t.Fatal("acquired past the budget while a frame is held")
		default:
		}
		b.close()
		require.False(t, <-acquired, "acquire succeeded after close")
		require.False(t, b.acquire(1), "acquire on a closed budget succeeded")
	})
}

// Strings holding escaped quotes next to braces (JSON held in a string,
// as kubectl's last-applied-configuration annotation) do not end a JSON
// event early in the parallel decoder's framer, whole or read a byte at
// a time.
func TestParallelJSONFramerFollowsEscapes(t *testing.T) {
	c := mustCodec[*corev1.ConfigMap](t, configMapGVK)
	var evs []event
	for i := range 3 {
		cm := testConfigMap(i)
		cm.Annotations = map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","data":{"k":"}"},"kind":"ConfigMap"}` + "\n",
			"quote-brace": `a"}{"b\`,
		}
		evs = append(evs, event{"MODIFIED", cm})
	}
	stream := jsonStream(t, evs...)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			d := NewParallelJSONWatchDecoder(r(), c, 0, parallelWorkers)
			defer d.Close()
			got, err := drainNext(d.Next)
			require.ErrorIs(t, err, io.EOF)
			require.Len(t, got, len(evs))
			for i, ev := range got {
				require.Equal(t, evs[i].obj.(*corev1.ConfigMap).Annotations, ev.Object.Annotations)
				require.Equal(t, evs[i].obj.(*corev1.ConfigMap).Data, ev.Object.Data)
			}
		})
	}
}
