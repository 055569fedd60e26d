package wire

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// Elements that are empty on the wire decode to hundreds of bytes each
// (a Container takes 408), and the part table keeps what it remembers
// after the objects holding it are deleted. These pods bring parts of
// under maxPartLen bytes that decode to far more.

// jsonPodEvent is a watch event of a pod whose spec is spec, in JSON.
func jsonPodEvent(i int, spec string) string {
	return fmt.Sprintf(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p%d","namespace":"ns","resourceVersion":"%d"},"spec":%s}}`+"\n", i, i+1, spec)
}

// jsonContainers is a JSON array of one container named name, with the
// fields of inside, and then empty ones up to n.
func jsonContainers(name, inside string, n int) string {
	return fmt.Sprintf(`[{"name":%q%s}%s]`, name, inside, strings.Repeat(",{}", n-1))
}

// protoPodFrame is a watch frame of a pod whose PodSpec's fields are
// spec, written by hand: the generated marshaler writes an empty
// Container's empty fields.
func protoPodFrame(t testing.TB, i int, spec []byte) []byte {
	meta := tagged(1, []byte(fmt.Sprint("p", i)))
	meta = append(meta, tagged(3, []byte("ns"))...)
	meta = append(meta, tagged(6, []byte(fmt.Sprint(i+1)))...)
	pod := append(tagged(1, meta), tagged(2, spec)...)
	typeMeta := append(tagged(1, []byte("v1")), tagged(2, []byte("Pod"))...)
	unknown := append(tagged(1, typeMeta), tagged(2, pod)...)
	return protoFrame(t, "ADDED", append([]byte("k8s\x00"), unknown...))
}

// protoContainers is the PodSpec field containers (2, initContainers
// 20), of one container named name with the fields inside, and then
// empty ones up to n.
func protoContainers(field int, name string, inside []byte, n int) []byte {
	b := tagged(field, append(tagged(1, []byte(name)), inside...))
	for range n - 1 {
		b = append(b, tagged(field, nil)...)
	}
	return b
}

// protoEmptyPorts is the Container field ports with n empty ports.
func protoEmptyPorts(n int) []byte {
	var b []byte
	for range n {
		b = append(b, tagged(6, nil)...)
	}
	return b
}

// podStreams are watch streams of pods, in JSON and protobuf.
type podStreams struct{ json, proto []byte }

// dropPods decodes the n pods of stream with c, dropping them.
func dropPods(t *testing.T, c *Codec[*corev1.Pod], format string, stream []byte, n int) {
	t.Helper()
	var dec interface {
		Next() (Event[*corev1.Pod], error)
	}
	if format == "json" {
		dec = NewJSONWatchDecoder(strings.NewReader(string(stream)), c, 0)
	} else {
		dec = NewProtobufWatchDecoder(strings.NewReader(string(stream)), c, 0)
	}
	for range n {
		if _, err := dec.Next(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPartsDecodedFarBeyondTheirBytesAreNotRemembered decodes pods whose
// containers or ports are empty elements and checks that no remembered
// part is larger than its bytes allow: neither such a slice, nor a part
// holding one, also when that slice's field was not looked up in the
// table (it had missed in every object before: the ports of init
// containers, which the field is too, differ in every pod).
func TestPartsDecodedFarBeyondTheirBytesAreNotRemembered(t *testing.T) {
	const warmup = 2 * shareWindow
	for _, tc := range []struct {
		name           string
		warmup, stream podStreams
	}{{
		name: "empty containers",
		stream: podStreams{
			json:  []byte(jsonPodEvent(0, `{"containers":`+jsonContainers("c", "", 600)+`}`)),
			proto: protoPodFrame(t, 0, protoContainers(2, "c", nil, 150)),
		},
	}, {
		name: "empty ports, not looked up",
		warmup: func() podStreams {
			var s podStreams
			for i := range warmup {
				s.json = append(s.json, jsonPodEvent(i, fmt.Sprintf(`{"initContainers":[{"name":"i","ports":[{"name":"port-%d"}]}]}`, i))...)
				port := tagged(6, tagged(1, []byte(fmt.Sprint("port-", i))))
				s.proto = append(s.proto, protoPodFrame(t, i, protoContainers(20, "i", port, 1))...)
			}
			return s
		}(),
		stream: podStreams{
			json:  []byte(jsonPodEvent(0, `{"containers":`+jsonContainers("c", `,"ports":[{}`+strings.Repeat(",{}", 599)+`]`, 1)+`}`)),
			proto: protoPodFrame(t, 0, protoContainers(2, "c", protoEmptyPorts(300), 1)),
		},
	}} {
		for _, format := range []string{"json", "protobuf"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				warm, stream := tc.warmup.json, tc.stream.json
				if format == "protobuf" {
					warm, stream = tc.warmup.proto, tc.stream.proto
				}
				c := mustCodec[*corev1.Pod](t, corev1.SchemeGroupVersion.WithKind("Pod"), WithSharedParts())
				if warm != nil {
					dropPods(t, c, format, warm, warmup)
				}
				dropPods(t, c, format, stream, 1)
				checkRememberedParts(t, c.parts, nil, tc.name)
			})
		}
	}
}

// TestPartTableKeepsLittleOfDeletedPods decodes and drops pods of many
// empty containers, each pod's differing in the first one's name, and
// measures what the codec keeps alive: the part table used to keep every
// pod's containers (60 MiB from JSON, 15 MiB from protobuf).
func TestPartTableKeepsLittleOfDeletedPods(t *testing.T) {
	const pods = 256
	var streams podStreams
	for i := range pods {
		streams.json = append(streams.json, jsonPodEvent(i, `{"containers":`+jsonContainers(fmt.Sprint(i), "", 600)+`}`)...)
		streams.proto = append(streams.proto, protoPodFrame(t, i, protoContainers(2, fmt.Sprint(i), nil, 150))...)
	}
	for _, format := range []string{"json", "protobuf"} {
		t.Run(format, func(t *testing.T) {
			stream := streams.json
			if format == "protobuf" {
				stream = streams.proto
			}
			c := mustCodec[*corev1.Pod](t, corev1.SchemeGroupVersion.WithKind("Pod"), WithSharedParts())
			before := heapAlloc()
			dropPods(t, c, format, stream, pods)
			after := heapAlloc()
			kept := after - min(before, after)
			runtime.KeepAlive(c)
			t.Logf("%d pods decoded from %d KiB and dropped: the codec keeps %.1f MiB", pods, len(stream)>>10, float64(kept)/(1<<20))
			if kept > 4<<20 {
				t.Errorf("the codec keeps %.1f MiB of dropped pods", float64(kept)/(1<<20))
			}
		})
	}
}

// heapAlloc is the heap in use after a collection.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// walkedSize is the size of a remembered part, walked: the arrays of its
// slices of structs and strings, its maps' entries and the structs it
// points to, each map and pointer once. The decoders count at least this
// (ownSize).
func walkedSize(v reflect.Value) int {
	size := 0
	walkValues(v, "", map[unsafe.Pointer]bool{}, func(_ string, v reflect.Value) {
		switch e := v.Type().Elem(); v.Kind() {
		case reflect.Slice:
			if e.Kind() == reflect.Struct || e.Kind() == reflect.String {
				size += v.Cap() * int(e.Size())
			}
		case reflect.Map:
			size += v.Len() * int(v.Type().Key().Size()+e.Size())
		case reflect.Pointer:
			if e.Kind() == reflect.Struct {
				size += int(e.Size())
			}
		}
	})
	return size
}
