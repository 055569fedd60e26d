package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// podList is a list as the server sends it: items without kind/apiVersion.
func podList(n int, rv, cont string, remaining *int64) (*corev1.PodList, []*corev1.Pod) {
	l := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont, RemainingItemCount: remaining},
	}
	var want []*corev1.Pod
	for i := range n {
		p := realisticPod(i)
		want = append(want, p.DeepCopy())
		p.TypeMeta = metav1.TypeMeta{}
		l.Items = append(l.Items, *p)
	}
	return l, want
}

// collect returns an add func that appends to *items.
func collect[T any](items *[]T) func(T) error {
	return func(obj T) error { *items = append(*items, obj); return nil }
}

func TestJSONList(t *testing.T) {
	remaining := int64(42)
	list, want := podList(3, "1234", "token", &remaining)
	body := jsonOf(t, list)
	// The same list with metadata after the items.
	items := jsonOf(t, list.Items)
	after := fmt.Sprintf(`{"kind":"PodList","apiVersion":"v1","items":%s,"metadata":{"resourceVersion":"1234","continue":"token","remainingItemCount":42}}`, items)
	for name, r := range map[string]func() io.Reader{
		"metadata first":   func() io.Reader { return bytes.NewReader(body) },
		"metadata after":   func() io.Reader { return strings.NewReader(after) },
		"one byte at once": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
	} {
		t.Run(name, func(t *testing.T) {
			var got []*corev1.Pod
			meta, err := DecodeJSONList(r(), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
			if err != nil {
				t.Fatal(err)
			}
			if meta.ResourceVersion != "1234" || meta.Continue != "token" || meta.RemainingItemCount == nil || *meta.RemainingItemCount != 42 {
				t.Fatalf("meta: got %+v", meta)
			}
			semanticEqual(t, got, want)
		})
	}
	t.Run("empty", func(t *testing.T) {
		for _, body := range []string{`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[]}`, `{"metadata":{"resourceVersion":"9"},"items":null}`} {
			var got []*corev1.Pod
			meta, err := DecodeJSONList(strings.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
			if err != nil || meta.ResourceVersion != "9" || len(got) != 0 || meta.RemainingItemCount != nil {
				t.Fatalf("%s: got %+v, %d items, %v", body, meta, len(got), err)
			}
		}
	})
}

// A body without an "items" key is no list: taken as an empty one, a {}
// from a proxy would empty the cache.
func TestJSONListWithoutItems(t *testing.T) {
	pods := mustCodec[*corev1.Pod](t, podGVK)
	for _, body := range []string{
		`{}`,
		`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"}}`,
		`{"Kind":"Status","Code":403}`,
		`{"kind":"PodList","Items":[]}`,
	} {
		for name, decode := range map[string]func() error{
			"typed": func() error {
				_, err := DecodeJSONList(strings.NewReader(body), pods, 0, discard[*corev1.Pod])
				return err
			},
			"unstructured": func() error {
				_, err := DecodeJSONList(strings.NewReader(body), UnstructuredCodec(podGVK), 0, discard[*unstructured.Unstructured])
				return err
			},
			"metadata": func() error {
				_, err := DecodeJSONList(strings.NewReader(body), MetadataCodec(podGVK), 0, discard[*metav1.PartialObjectMetadata])
				return err
			},
		} {
			err := decode()
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `no "items"`) {
				t.Errorf("%s, %s: got %v, want ErrMalformed for a body without items", body, name, err)
			}
		}
	}
}

func TestProtobufList(t *testing.T) {
	// Past int32: remainingItemCount is an int64 on the wire.
	remaining := int64(1<<40 + 7)
	list, want := podList(3, "1234", "token", &remaining)
	body := protoOf(t, list)
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(body) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
	} {
		t.Run(name, func(t *testing.T) {
			var got []*corev1.Pod
			meta, err := DecodeProtobufList(r(), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
			if err != nil {
				t.Fatal(err)
			}
			if meta.ResourceVersion != "1234" || meta.Continue != "token" || meta.RemainingItemCount == nil || *meta.RemainingItemCount != remaining {
				t.Fatalf("meta: got %+v", meta)
			}
			// Items must not alias the reused item buffer.
			semanticEqual(t, got, want)
		})
	}
	t.Run("without managedFields", func(t *testing.T) {
		var got []*corev1.Pod
		if _, err := DecodeProtobufList(bytes.NewReader(body), mustCodec[*corev1.Pod](t, podGVK, WithoutManagedFields()), 0, collect(&got)); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			semanticEqual(t, got[i], withoutManagedFields(want[i]))
		}
	})
	t.Run("metadata after items", func(t *testing.T) {
		// Protobuf fields may come in any order.
		var items []byte
		for i := range list.Items {
			b, err := list.Items[i].Marshal()
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, tagged(2, b)...)
		}
		meta, _ := list.ListMeta.Marshal()
		raw := append(items, tagged(1, meta)...)
		body := append(append([]byte("k8s\x00"), tagged(1, append(tagged(1, []byte("v1")), tagged(2, []byte("PodList"))...))...), tagged(2, raw)...)
		var got []*corev1.Pod
		m, err := DecodeProtobufList(bytes.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
		if err != nil || m.ResourceVersion != "1234" {
			t.Fatalf("got %+v, %v", m, err)
		}
		semanticEqual(t, got, want)
	})
}

func TestListStatusBody(t *testing.T) {
	status := goneStatus()
	status.Message = "The provided continue parameter is too old"
	status.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "m"}}, RetryAfterSeconds: 3}
	check := func(t *testing.T, meta ListMeta, err error, n int) {
		t.Helper()
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("got %v, want a *StatusError", err)
		}
		if se.Status.Code != 410 || se.Status.Reason != metav1.StatusReasonExpired || se.Status.Message != status.Message ||
			se.Status.Details == nil || se.Status.Details.RetryAfterSeconds != 3 || len(se.Status.Details.Causes) != 1 {
			t.Fatalf("got %+v", se.Status)
		}
		if n != 0 {
			t.Fatalf("%d items handed over", n)
		}
		if !strings.Contains(err.Error(), "410 Expired: The provided continue parameter is too old") {
			t.Fatalf("message: %q", err)
		}
	}
	t.Run("JSON", func(t *testing.T) {
		var got []*corev1.Pod
		meta, err := DecodeJSONList(bytes.NewReader(jsonOf(t, status)), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
		check(t, meta, err, len(got))
	})
	t.Run("protobuf", func(t *testing.T) {
		var got []*corev1.Pod
		meta, err := DecodeProtobufList(bytes.NewReader(protoOf(t, status)), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
		check(t, meta, err, len(got))
	})
}

func TestListTooLarge(t *testing.T) {
	list, _ := podList(3, "1", "", nil)
	c := mustCodec[*corev1.Pod](t, podGVK)
	t.Run("JSON item", func(t *testing.T) {
		var got []*corev1.Pod
		_, err := DecodeJSONList(bytes.NewReader(jsonOf(t, list)), c, 2000, collect(&got))
		if !errors.Is(err, ErrListTooLarge) || !strings.Contains(err.Error(), "item 0") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("protobuf item", func(t *testing.T) {
		var got []*corev1.Pod
		_, err := DecodeProtobufList(bytes.NewReader(protoOf(t, list)), c, 2000, collect(&got))
		if !errors.Is(err, ErrListTooLarge) || !strings.Contains(err.Error(), "item 0") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("every item under the limit", func(t *testing.T) {
		// The limit is per item: a list far larger than it is fine.
		big, _ := podList(50, "1", "", nil)
		var got []*corev1.Pod
		if _, err := DecodeJSONList(bytes.NewReader(jsonOf(t, big)), c, 8000, collect(&got)); err != nil || len(got) != 50 {
			t.Fatalf("JSON: %d items, %v", len(got), err)
		}
		got = nil
		if _, err := DecodeProtobufList(bytes.NewReader(protoOf(t, big)), c, 8000, collect(&got)); err != nil || len(got) != 50 {
			t.Fatalf("protobuf: %d items, %v", len(got), err)
		}
	})
	// A compressed body that inflates to far more than the limit: the
	// decoder stops reading (and so inflating) right after the limit.
	t.Run("gzip bomb", func(t *testing.T) {
		const limit = 1 << 20
		for name, tc := range map[string]struct {
			prefix []byte
			decode func(io.Reader) error
		}{
			"JSON whitespace": {[]byte(`{"kind":"PodList","items":[`), func(r io.Reader) error {
				_, err := DecodeJSONList(r, c, limit, func(*corev1.Pod) error { return nil })
				return err
			}},
			"JSON string": {[]byte(`{"kind":"PodList","items":[{"metadata":{"name":"`), func(r io.Reader) error {
				_, err := DecodeJSONList(r, c, limit, func(*corev1.Pod) error { return nil })
				return err
			}},
		} {
			t.Run(name, func(t *testing.T) {
				var zbuf bytes.Buffer
				zw := gzip.NewWriter(&zbuf)
				zw.Write(tc.prefix)
				chunk := bytes.Repeat([]byte(" "), 1<<20)
				if name == "JSON string" {
					chunk = bytes.Repeat([]byte("a"), 1<<20)
				}
				for range 64 { // 64 MiB inflated
					zw.Write(chunk)
				}
				zw.Close()
				zr, err := gzip.NewReader(&zbuf)
				if err != nil {
					t.Fatal(err)
				}
				cr := &countingReader{r: zr}
				if err := tc.decode(cr); !errors.Is(err, ErrListTooLarge) {
					t.Fatalf("got %v", err)
				}
				if cr.n > limit+2*readBufferSize {
					t.Fatalf("read %d inflated bytes for a limit of %d", cr.n, limit)
				}
			})
		}
	})
	t.Run("protobuf huge item length", func(t *testing.T) {
		// An item that claims 1 GiB is refused before anything is read or
		// allocated for it.
		raw := append([]byte{0x12}, 0x80, 0x80, 0x80, 0x80, 0x04) // field 2, length 1<<30
		body := append(append([]byte("k8s\x00"), 0x12, 0x80, 0x80, 0x80, 0x80, 0x08), raw...)
		cr := &countingReader{r: io.MultiReader(bytes.NewReader(body), zeroReader{})}
		var err error
		alloc := allocatedBy(func() {
			_, err = DecodeProtobufList(cr, c, limitForTest, func(*corev1.Pod) error { return nil })
		})
		if !errors.Is(err, ErrListTooLarge) {
			t.Fatalf("got %v", err)
		}
		if alloc > 1<<20 || cr.n > readBufferSize {
			t.Fatalf("allocated %d bytes, read %d", alloc, cr.n)
		}
	})
}

const limitForTest = 1 << 20

// zeroReader is an endless stream of zero bytes.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestListAddError(t *testing.T) {
	list, _ := podList(3, "1", "", nil)
	stop := errors.New("store full")
	for name, decode := range map[string]func(io.Reader, func(*corev1.Pod) error) error{
		"JSON": func(r io.Reader, add func(*corev1.Pod) error) error {
			_, err := DecodeJSONList(r, mustCodec[*corev1.Pod](t, podGVK), 0, add)
			return err
		},
		"protobuf": func(r io.Reader, add func(*corev1.Pod) error) error {
			_, err := DecodeProtobufList(r, mustCodec[*corev1.Pod](t, podGVK), 0, add)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			body := jsonOf(t, list)
			if name == "protobuf" {
				body = protoOf(t, list)
			}
			n := 0
			err := decode(bytes.NewReader(body), func(*corev1.Pod) error {
				if n++; n == 2 {
					return stop
				}
				return nil
			})
			if err != stop || n != 2 {
				t.Fatalf("got %v after %d items, want %v after 2", err, n, stop)
			}
			// A panic in add is the caller's: it goes on up as it was,
			// not as an error blaming the server's bytes.
			defer func() {
				if r := recover(); r != "add's own panic" {
					t.Errorf("recovered %v, want add's own panic", r)
				}
			}()
			err = decode(bytes.NewReader(body), func(*corev1.Pod) error { panic("add's own panic") })
			t.Errorf("decode returned %v", err)
		})
	}
}

func TestListWrongKind(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	for name, body := range map[string]string{
		"list kind": `{"kind":"ConfigMapList","apiVersion":"v1","items":[{"metadata":{"name":"a"}}]}`,
		"item kind": `{"kind":"PodList","apiVersion":"v1","items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}]}`,
	} {
		t.Run("JSON "+name, func(t *testing.T) {
			var got []*corev1.Pod
			_, err := DecodeJSONList(strings.NewReader(body), c, 0, collect(&got))
			if !errors.Is(err, ErrWrongKind) || len(got) != 0 {
				t.Fatalf("got %v and %d items", err, len(got))
			}
		})
	}
	t.Run("protobuf list kind", func(t *testing.T) {
		cms := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, Items: []corev1.ConfigMap{*testConfigMap(1)}}
		_, err := DecodeProtobufList(bytes.NewReader(protoOf(t, cms)), c, 0, func(*corev1.Pod) error { return nil })
		var wk *WrongKindError
		if !errors.As(err, &wk) || wk.Got.Kind != "ConfigMapList" || wk.Want.Kind != "PodList" {
			t.Fatalf("got %v", err)
		}
	})
}

func TestListUnstructured(t *testing.T) {
	list := &appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{Kind: "DeploymentList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
	for i := range 2 {
		d := testDeployment(i)
		d.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, *d)
	}
	var got []*unstructured.Unstructured
	meta, err := DecodeJSONList(bytes.NewReader(jsonOf(t, list)), UnstructuredCodec(deploymentGVK), 0, collect(&got))
	if err != nil || meta.ResourceVersion != "5" || len(got) != 2 {
		t.Fatalf("got %+v, %d items, %v", meta, len(got), err)
	}
	// Items get the kind and apiVersion the server left out, as
	// apimachinery's UnstructuredList does.
	semanticEqual(t, got[1], unstructuredOf(t, testDeployment(1)))
	// A custom resource may name its list kind freely.
	body := `{"kind":"WidgetCollection","apiVersion":"example.com/v1","metadata":{"resourceVersion":"8"},"items":[{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w"},"spec":{"size":3}}]}`
	got = nil
	if _, err := DecodeJSONList(strings.NewReader(body), UnstructuredCodec(schemaGVK("apps", "v1", "Widget")), 0, collect(&got)); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("a Widget of example.com/v1 passed as apps/v1: %v", err)
	}
	got = nil
	wc := UnstructuredCodec(schemaGVK("example.com", "v1", "Widget"))
	meta, err = DecodeJSONList(strings.NewReader(body), wc, 0, collect(&got))
	if err != nil || meta.ResourceVersion != "8" || len(got) != 1 {
		t.Fatalf("got %+v, %d items, %v", meta, len(got), err)
	}
	if size, _, _ := unstructured.NestedInt64(got[0].Object, "spec", "size"); size != 3 {
		t.Fatalf("spec.size: got %v", got[0].Object["spec"])
	}
	if _, err := DecodeProtobufList(bytes.NewReader(nil), wc, 0, collect(&got)); !errors.Is(err, ErrProtobufUnsupported) {
		t.Fatalf("got %v", err)
	}
}

func TestListMetadata(t *testing.T) {
	pod := realisticPod(1)
	partial := metav1.PartialObjectMetadata{ObjectMeta: pod.ObjectMeta}
	list := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "3"},
		Items:    []metav1.PartialObjectMetadata{partial, partial},
	}
	want := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: pod.ObjectMeta}
	for name, decode := range map[string]func(io.Reader, *Codec[*metav1.PartialObjectMetadata], func(*metav1.PartialObjectMetadata) error) (ListMeta, error){
		"JSON": func(r io.Reader, c *Codec[*metav1.PartialObjectMetadata], add func(*metav1.PartialObjectMetadata) error) (ListMeta, error) {
			return DecodeJSONList(r, c, 0, add)
		},
		"protobuf": func(r io.Reader, c *Codec[*metav1.PartialObjectMetadata], add func(*metav1.PartialObjectMetadata) error) (ListMeta, error) {
			return DecodeProtobufList(r, c, 0, add)
		},
	} {
		t.Run(name, func(t *testing.T) {
			body := jsonOf(t, list)
			if name == "protobuf" {
				body = protoOf(t, list)
			}
			var got []*metav1.PartialObjectMetadata
			meta, err := decode(bytes.NewReader(body), MetadataCodec(podGVK), collect(&got))
			if err != nil || meta.ResourceVersion != "3" || len(got) != 2 {
				t.Fatalf("got %+v, %d items, %v", meta, len(got), err)
			}
			semanticEqual(t, got[1], want)
			got = nil
			if _, err := decode(bytes.NewReader(body), MetadataCodec(podGVK, WithoutManagedFields()), collect(&got)); err != nil {
				t.Fatal(err)
			}
			if got[0].ManagedFields != nil || got[0].Name != pod.Name {
				t.Fatalf("got %+v", got[0].ObjectMeta)
			}
		})
	}
	// A server that cannot send metadata only sends the full list; a
	// metadata codec keeps the metadata of each item.
	pods, _ := podList(2, "4", "", nil)
	for name, body := range map[string][]byte{"JSON": jsonOf(t, pods), "protobuf": protoOf(t, pods)} {
		t.Run("full "+name, func(t *testing.T) {
			for _, c := range []*Codec[*metav1.PartialObjectMetadata]{MetadataCodec(podGVK), MetadataCodec(podGVK.GroupVersion().WithKind(""))} {
				var got []*metav1.PartialObjectMetadata
				var err error
				if name == "JSON" {
					_, err = DecodeJSONList(bytes.NewReader(body), c, 0, collect(&got))
				} else {
					_, err = DecodeProtobufList(bytes.NewReader(body), c, 0, collect(&got))
				}
				if err != nil || len(got) != 2 || got[1].Name != pods.Items[1].Name {
					t.Fatalf("got %d items, %v", len(got), err)
				}
			}
		})
	}
}

func TestListBrokenBodies(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	list, _ := podList(2, "1", "", nil)
	js, pb := jsonOf(t, list), protoOf(t, list)
	for _, tc := range []struct {
		name  string
		proto bool
		body  []byte
		want  error
	}{
		{"JSON empty body", false, nil, io.ErrUnexpectedEOF},
		{"JSON truncated", false, js[:len(js)/2], io.ErrUnexpectedEOF},
		{"JSON truncated at the end", false, js[:len(js)-1], io.ErrUnexpectedEOF},
		{"JSON not an object", false, []byte(`[1,2]`), ErrMalformed},
		{"JSON items not an array", false, []byte(`{"items":{}}`), ErrMalformed},
		{"JSON item not an object", false, []byte(`{"items":[1]}`), ErrMalformed},
		{"JSON bad metadata", false, []byte(`{"metadata":{"resourceVersion":1},"items":[]}`), ErrMalformed},
		{"JSON Status that is not one", false, []byte(`{"kind":"Status","code":"x"}`), ErrMalformed},
		{"protobuf empty body", true, nil, io.ErrUnexpectedEOF},
		{"protobuf no magic", true, js, ErrMalformed},
		{"protobuf truncated", true, pb[:len(pb)/2], io.ErrUnexpectedEOF},
		{"protobuf truncated at the end", true, pb[:len(pb)-1], io.ErrUnexpectedEOF},
		{"protobuf envelope only", true, []byte("k8s\x00"), ErrMalformed},
		{"protobuf bad item", true, append([]byte("k8s\x00"), tagged(2, tagged(2, []byte{0x0a, 0x09}))...), ErrMalformed},
		{"protobuf item field wrong type", true, append([]byte("k8s\x00"), tagged(2, []byte{0x10, 0x01})...), ErrMalformed},
		{"protobuf field past list end", true, append([]byte("k8s\x00"), tagged(2, []byte{0x1a, 0x05, 1, 2})...), ErrMalformed},
		{"protobuf bad list meta", true, append([]byte("k8s\x00"), tagged(2, tagged(1, []byte{0x20}))...), ErrMalformed},
		{"protobuf gzip content", true, append(append([]byte("k8s\x00"), tagged(3, []byte("gzip"))...), tagged(2, nil)...), ErrMalformed},
		{"protobuf group", true, append([]byte("k8s\x00"), 0x0b), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			add := func(*corev1.Pod) error { return nil }
			if tc.proto {
				_, err = DecodeProtobufList(bytes.NewReader(tc.body), c, 0, add)
			} else {
				_, err = DecodeJSONList(bytes.NewReader(tc.body), c, 0, add)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestProtobufListItemLengthIsNotTrusted: an item that claims 60 MiB (under
// the limit) and then ends costs memory as its bytes arrive, not as claimed.
func TestProtobufListItemLengthIsNotTrusted(t *testing.T) {
	const claimed = 60 << 20
	item := binary.AppendUvarint(nil, 2<<3|wireBytes) // PodList.items
	item = binary.AppendUvarint(item, claimed)
	item = append(item, "only a few bytes"...)
	body := append([]byte("k8s\x00"), tagged(1, append(tagged(1, []byte("v1")), tagged(2, []byte("PodList"))...))...)
	body = binary.AppendUvarint(body, 2<<3|wireBytes) // Unknown.raw, as long as the item claims
	body = binary.AppendUvarint(body, uint64(claimed+len(item)))
	body = append(body, item...)

	c := mustCodec[*corev1.Pod](t, podGVK)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeProtobufList(bytes.NewReader(body), c, 64<<20, func(*corev1.Pod) error { return nil })
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want one wrapping io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("allocated %d MiB for an item of a few bytes that claimed 60 MiB", got>>20)
	}
}

// A runtime.Unknown whose raw field (2) comes twice: the generated
// Unmarshal keeps the last, so apimachinery decodes the second list only.
// DecodeProtobufList streams items as it meets them and cannot take the
// first list's back: it refuses the body (it used to hand over the items of
// both lists).
func TestProtobufListWithTwoListsIsMalformed(t *testing.T) {
	list := func(rv string, names ...string) []byte {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		for _, n := range names {
			l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		b, err := l.Marshal()
		require.NoError(t, err)
		return b
	}
	tm := append(tagged(1, []byte("v1")), tagged(2, []byte("PodList"))...)
	envelope := append(tagged(1, tm), tagged(2, list("1", "stale"))...)
	envelope = append(envelope, tagged(2, list("2", "a", "b"))...)
	body := append([]byte("k8s\x00"), envelope...)

	// What apimachinery decodes.
	var u apiruntime.Unknown
	require.NoError(t, u.Unmarshal(envelope))
	var want corev1.PodList
	require.NoError(t, want.Unmarshal(u.Raw))
	require.Len(t, want.Items, 2)

	_, err := DecodeProtobufList(bytes.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, func(p *corev1.Pod) error { return nil })
	require.ErrorIs(t, err, ErrMalformed)
}

// A JSON list whose "items" key comes twice: apimachinery's decoder keeps
// the last array only. DecodeJSONList hands items over as it meets them and
// cannot take the first array's back: it refuses the body (it used to hand
// over the items of both, leaving an object the server does not list in the
// cache until the next list).
func TestJSONListWithItemsTwiceIsMalformed(t *testing.T) {
	item := func(name string) string {
		return `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"ns","resourceVersion":"2"}}`
	}
	body := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` + item("stale") + `],"items":[` + item("a") + `]}`

	var want corev1.PodList
	require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(body), &want)) // as apimachinery decodes
	require.Len(t, want.Items, 1)
	require.Equal(t, "a", want.Items[0].Name)

	_, err := DecodeJSONList(strings.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, func(*corev1.Pod) error { return nil })
	require.ErrorIs(t, err, ErrMalformed)
	require.ErrorContains(t, err, `"items" given twice`)
}

// Only white space may follow a JSON list's closing brace, as apimachinery
// (encoding/json's rules over the whole body) decodes it; a body that goes
// on, even with a second list, is refused rather than half believed.
func TestJSONListEnd(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	list, _ := podList(2, "7", "", nil)
	js := jsonOf(t, list)
	for _, tc := range []struct {
		name  string
		after string
		want  error // nil: the list is taken
	}{
		{"nothing", "", nil},
		{"white space", " \n\t\r\n", nil},
		{"a word", "\nx", ErrMalformed},
		{"a second list", string(js), ErrMalformed},
		{"a closing brace", "}", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := append(slices.Clip(js), tc.after...)
			var want corev1.PodList
			wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &want) // as apimachinery decodes
			items := 0
			meta, err := DecodeJSONList(bytes.NewReader(body), c, 0, func(*corev1.Pod) error { items++; return nil })
			if tc.want == nil {
				require.NoError(t, wantErr)
				require.NoError(t, err)
				require.Equal(t, "7", meta.ResourceVersion)
				require.Equal(t, 2, items)
				return
			}
			require.Error(t, wantErr)
			require.ErrorIs(t, err, tc.want)
		})
	}

	t.Run("a read error after the end", func(t *testing.T) {
		broken := errors.New("connection reset")
		r := io.MultiReader(bytes.NewReader(js), iotest.ErrReader(broken))
		_, err := DecodeJSONList(r, c, 0, func(*corev1.Pod) error { return nil })
		require.ErrorIs(t, err, broken)
	})
}

// An unstructured codec told no kind: list items without one get the list's
// kind without "List", as client-go's dynamic client gives them
// (kube-apiserver leaves it out of the items of built-in resources' lists,
// and watched objects carry it); objects of another group or version are
// not its resource's, and are refused rather than stamped with its version.
func TestUnstructuredListOfAnyKind(t *testing.T) {
	c := UnstructuredCodec(schemaGVK("", "v1", ""))
	var got []*unstructured.Unstructured
	body := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}},{"kind":"Binding","metadata":{"name":"b"}}]}`
	if _, err := DecodeJSONList(strings.NewReader(body), c, 0, collect(&got)); err != nil || len(got) != 2 {
		t.Fatalf("%d items, %v", len(got), err)
	}
	for i, want := range []string{"Pod", "Binding"} {
		if got[i].GetKind() != want || got[i].GetAPIVersion() != "v1" {
			t.Errorf("item %d: %q %q, want %q v1", i, got[i].GetKind(), got[i].GetAPIVersion(), want)
		}
	}
	body = `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[{"apiVersion":"other.io/v9","kind":"Gadget","metadata":{"name":"a"}}]}`
	got = nil
	if _, err := DecodeJSONList(strings.NewReader(body), UnstructuredCodec(schemaGVK("example.com", "v1", "")), 0, collect(&got)); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("an other.io/v9 Gadget in example.com/v1's list: %v, %d items", err, len(got))
	}
}

// An unstructured codec told a kind refuses a list of another kind whose
// items carry none, as kube-apiserver sends the lists of built-in
// resources: a Widget codec given a DeploymentList took its items as
// Widgets, where it refuses a watched Deployment. Items that carry the
// kind, and lists whose kind is not "<Kind>List" (a CRD's own listKind),
// are judged by the item's kind.
func TestUnstructuredListOfAnotherKindWithoutItemKinds(t *testing.T) {
	c := UnstructuredCodec(schemaGVK("apps", "v1", "Widget"))
	var got []*unstructured.Unstructured
	body := `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}}]}`
	if _, err := DecodeJSONList(strings.NewReader(body), c, 0, collect(&got)); !errors.Is(err, ErrWrongKind) {
		t.Errorf("a DeploymentList's item without a kind, to a Widget codec: %v, %d items", err, len(got))
	}
	for _, body := range []string{
		`{"kind":"WidgetList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"a"}}]}`,
		`{"kind":"Widgets","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"a"}}]}`,
		`{"kind":"GadgetList","apiVersion":"apps/v1","metadata":{},"items":[{"kind":"Widget","metadata":{"name":"a"}}]}`,
	} {
		got = nil
		if _, err := DecodeJSONList(strings.NewReader(body), c, 0, collect(&got)); err != nil || len(got) != 1 || got[0].GetKind() != "Widget" {
			t.Errorf("%s: %v, %d items", body, err, len(got))
		}
	}
}

// A field tag that runs past the end of the list (Unknown.raw) is refused
// before anything after it is read: the item it begins, outside the list,
// was decoded and handed to add before the list failed.
func TestProtobufListTagPastItsEnd(t *testing.T) {
	item, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "outside"}}).Marshal()
	require.NoError(t, err)
	tm := append(tagged(1, []byte("v1")), tagged(2, []byte("PodList"))...)
	body := append([]byte("k8s\x00"), tagged(1, tm)...)
	body = append(body, 2<<3|wireBytes, 1, 0x80|2<<3|wireBytes) // Unknown.raw of 1 byte: half a tag
	body = append(body, 0)                                      // the tag's second byte, past the list
	body = append(binary.AppendUvarint(body, uint64(len(item))), item...)
	var added []string
	_, err = DecodeProtobufList(bytes.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, func(p *corev1.Pod) error {
		added = append(added, p.Name)
		return nil
	})
	require.ErrorIs(t, err, ErrMalformed)
	require.Empty(t, added)
}
