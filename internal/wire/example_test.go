package wire_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/wire"
)

func ExampleNewJSONWatchDecoder() {
	codec, err := wire.TypedCodec[*corev1.Pod](corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		panic(err)
	}
	body := strings.NewReader(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"10"}}}
{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"stray"}}}
{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}
`)
	dec := wire.NewJSONWatchDecoder(body, codec, 0)
	for {
		ev, err := dec.Next()
		switch {
		case err == io.EOF:
			fmt.Println("end of stream")
			return
		case errors.Is(err, wire.ErrWrongKind):
			fmt.Println("skipped:", err)
			continue
		case err != nil:
			fmt.Println("reconnect:", err)
			return
		}
		switch ev.Type {
		case wire.Error:
			fmt.Println(ev.Type, ev.Status.Code, ev.Status.Reason)
		case wire.Bookmark:
			fmt.Println(ev.Type, ev.Object.ResourceVersion, ev.Object.Annotations["k8s.io/initial-events-end"])
		default:
			fmt.Println(ev.Type, ev.Object.Name, ev.Object.ResourceVersion)
		}
	}
	// Output:
	// ADDED a 10
	// skipped: JSON watch event 2 (ADDED): object of the wrong kind: got ConfigMap v1, want Pod v1
	// BOOKMARK 12 true
	// ERROR 410 Expired
	// end of stream
}

func ExampleDecodeJSONList() {
	codec, err := wire.TypedCodec[*corev1.Pod](corev1.SchemeGroupVersion.WithKind("Pod"), wire.WithoutManagedFields())
	if err != nil {
		panic(err)
	}
	body := strings.NewReader(`{"kind":"PodList","apiVersion":"v1",
		"metadata":{"resourceVersion":"42","continue":"next-page"},
		"items":[{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}},{"metadata":{"name":"b"}}]}`)
	meta, err := wire.DecodeJSONList(body, codec, 0, func(p *corev1.Pod) error {
		fmt.Println(p.Kind, p.Name, len(p.ManagedFields))
		return nil
	})
	fmt.Println(meta.ResourceVersion, meta.Continue, err)

	_, err = wire.DecodeJSONList(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"continue token too old"}`),
		codec, 0, func(*corev1.Pod) error { return nil })
	var status *wire.StatusError
	if errors.As(err, &status) {
		fmt.Println(status.Status.Code, err)
	}
	// Output:
	// Pod a 0
	// Pod b 0
	// 42 next-page <nil>
	// 410 server returned Status Failure 410 Expired: continue token too old
}
