package wire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Protobuf written by hand, to reach what kube-apiserver never writes but
// the generated code has a rule for: fields split, repeated, merged, of
// the wrong wire type, or numbered past 2^29.

// tagBytes, lenField and cat build such messages.
func tagBytes(num uint64, wt uint64) []byte { return binary.AppendUvarint(nil, num<<3|wt) }

func lenField(num uint64, data []byte) []byte {
	b := tagBytes(num, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// compareWithGenerated decodes data with the generated Unmarshal and with
// the compiled decoder in each mode (plain, interned, shared), and reports
// where they differ.
func compareWithGenerated(t *testing.T, name string, typ reflect.Type, data []byte) {
	t.Helper()
	type res struct {
		obj any
		err error
	}
	g := reflect.New(typ)
	gerr := g.Interface().(protoUnmarshaler).Unmarshal(bytes.Clone(data))
	table := newInternTable()
	modes := map[string]func() res{
		"plain": func() res { _, c, _, e := decodeBoth(typ, data, nil, nil); return res{c, e} },
		"intern": func() res {
			decodeBoth(typ, data, table, nil)
			_, c, _, e := decodeBoth(typ, data, table, nil)
			return res{c, e}
		},
		"shared": func() res {
			pt := newPartTable()
			decodeBoth(typ, data, table, pt)
			_, c, _, e := decodeBoth(typ, data, table, pt)
			return res{c, e}
		},
	}
	results := map[string]res{}
	for m, f := range modes {
		results[m] = f()
	}
	for m, r := range results {
		switch {
		case r.err == nil && gerr != nil:
			t.Errorf("%s/%s: compiled accepts what generated refuses: %v", name, m, gerr)
		case r.err == nil && !reflect.DeepEqual(g.Interface(), r.obj):
			t.Errorf("%s/%s: different objects:\ngen  %#v\ncomp %#v", name, m, g.Interface(), r.obj)
		}
		if (r.err == nil) != (results["plain"].err == nil) {
			t.Errorf("%s/%s: error %v, plain mode error %v (generated: %v)", name, m, r.err, results["plain"].err, gerr)
		}
	}
	if gerr == nil && results["plain"].err != nil {
		t.Logf("%s: compiled refuses what generated accepts: %v", name, results["plain"].err)
	}
}

// Map entries with a key or value missing, repeated or out of order,
// duplicate keys, messages given twice, packed and unpacked runs mixed,
// out-of-range varints and unknown fields of every wire type decode as the
// generated Unmarshal decodes them (or are refused where it refuses them).
func TestProtoEdgeCasesMatchGenerated(t *testing.T) {
	pom := reflect.TypeFor[metav1.PartialObjectMetadata]()
	meta := func(fields ...[]byte) []byte { return lenField(1, cat(fields...)) }
	entry := func(fields ...[]byte) []byte { return lenField(11, cat(fields...)) }
	k := func(s string) []byte { return lenField(1, []byte(s)) }
	v := func(s string) []byte { return lenField(2, []byte(s)) }
	cases := map[string][]byte{
		"no key":                        meta(entry(v("x"))),
		"no value":                      meta(entry(k("a"))),
		"empty":                         meta(entry()),
		"key twice":                     meta(entry(k("a"), k("b"), v("x"))),
		"value twice":                   meta(entry(k("a"), v("x"), v("y"))),
		"value first":                   meta(entry(v("x"), k("a"))),
		"dup keys":                      meta(entry(k("a"), v("x")), entry(k("a"), v("y"))),
		"unknown in entry":              meta(entry(k("a"), varintField(3, 5), lenField(9, []byte("zz")), v("x"))),
		"split labels":                  meta(entry(k("a"), v("x")), lenField(1, []byte("n")), entry(k("b"), v("y"))),
		"meta twice":                    cat(meta(lenField(1, []byte("n")), entry(k("a"), v("x"))), meta(lenField(2, []byte("g")), entry(k("b"), v("y")))),
		"big field num labels":          meta(cat(binary.AppendUvarint(nil, (1<<32|11)<<3|wireBytes), []byte{6}, k("a"), v("x"))),
		"big field num finalizers":      meta(cat(binary.AppendUvarint(nil, (1<<32|14)<<3|wireBytes), []byte{1, 'f'})),
		"big field num in entry":        meta(entry(cat(binary.AppendUvarint(nil, (1<<32|1)<<3|wireBytes), []byte{1, 'a'}), v("x"))),
		"field 0 in entry":              meta(entry([]byte{0, 0}, k("a"), v("x"))),
		"owner refs split":              meta(lenField(13, lenField(3, []byte("a"))), lenField(1, []byte("n")), lenField(13, lenField(3, []byte("b")))),
		"deletionTimestamp twice":       meta(lenField(9, varintField(1, 5)), lenField(9, varintField(2, 7))),
		"zero-length deletionTimestamp": meta(lenField(9, nil)),
		"deletionGracePeriod neg":       meta(varintField(10, ^uint64(0))),
		"generation 10 byte":            meta(varintField(7, 1<<63)),
	}
	for name, data := range cases {
		compareWithGenerated(t, name, pom, data)
	}

	pod := reflect.TypeFor[corev1.Pod]()
	spec := func(fields ...[]byte) []byte { return lenField(2, cat(fields...)) }
	container := func(fields ...[]byte) []byte { return lenField(2, cat(fields...)) }
	res := func(fields ...[]byte) []byte { return lenField(8, cat(fields...)) }
	req := func(fields ...[]byte) []byte { return lenField(2, cat(fields...)) }
	q := func(s string) []byte { return lenField(2, lenField(1, []byte(s))) }
	podCases := map[string][]byte{
		"quantity value twice":     spec(container(res(req(k("cpu"), q("1"), q("2"))))),
		"quantity no value":        spec(container(res(req(k("cpu"))))),
		"quantity dup keys":        spec(container(res(req(k("cpu"), q("1")), req(k("cpu"), q("3"))))),
		"quantity empty msg":       spec(container(res(req(k("cpu"), lenField(2, nil))))),
		"spec twice":               cat(spec(container(lenField(1, []byte("a")))), spec(container(lenField(1, []byte("b"))), varintField(3, 1))),
		"securityContext twice":    spec(lenField(14, varintField(2, 5)), lenField(14, cat(varintField(4, 1), varintField(4, 2)))),
		"packed+unpacked mix":      spec(lenField(14, cat(lenField(4, []byte{1, 2}), varintField(4, 3), lenField(4, []byte{4})))),
		"bool >1":                  spec(varintField(12, 7)),
		"bool ptr 10-byte":         spec(varintField(21, 1<<63)),
		"int32 ptr neg":            spec(varintField(25, ^uint64(0))),
		"int64 ptr":                spec(varintField(4, ^uint64(0))),
		"priority big":             spec(varintField(25, 1<<40|5)),
		"host aliases":             spec(lenField(23, cat(lenField(1, []byte("ip")), lenField(2, []byte("h1")))), lenField(23, lenField(2, []byte("h2")))),
		"unknown fixed":            spec(tagBytes(9000, wireFixed64), make([]byte, 8), tagBytes(9001, wireFixed32), make([]byte, 4)),
		"unknown wt6":              spec(tagBytes(9000, 6)),
		"unknown wt7":              spec(tagBytes(9000, 7)),
		"overlong varint 11 bytes": spec(tagBytes(12, wireVarint), bytes.Repeat([]byte{0x80}, 10), []byte{0}),
	}
	for name, data := range podCases {
		compareWithGenerated(t, name, pod, data)
	}
	csr := reflect.TypeFor[certificatesv1.CertificateSigningRequest]()
	extra := func(fields ...[]byte) []byte { return lenField(2, lenField(6, cat(fields...))) }
	csrCases := map[string][]byte{
		"extra value twice": extra(k("a"), lenField(2, lenField(1, []byte("x"))), lenField(2, lenField(1, []byte("y")))),
		"extra empty value": extra(k("a"), lenField(2, nil)),
		"extra dup":         cat(extra(k("a"), lenField(2, lenField(1, []byte("x")))), extra(k("a"), lenField(2, lenField(1, []byte("y"))))),
	}
	for name, data := range csrCases {
		compareWithGenerated(t, name, csr, data)
	}
	sec := reflect.TypeFor[corev1.Secret]()
	secCases := map[string][]byte{
		"data no value":    lenField(2, k("a")),
		"data empty value": lenField(2, cat(k("a"), lenField(2, nil))),
		"data dup":         cat(lenField(2, cat(k("a"), v("x"))), lenField(2, cat(k("a"), v("y")))),
		"immutable >1":     varintField(5, 300),
	}
	for name, data := range secCases {
		compareWithGenerated(t, name, sec, data)
	}
}

// The envelope's typeMeta written in two pieces is one TypeMeta, merged as
// runtime.Unknown's generated Unmarshal (and so apimachinery's protobuf
// serializer) merges it: kind Secret, apiVersion v1. It is not a Pod.
func TestProtobufEnvelopeTypeMetaGivenTwiceIsMerged(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "5"}}
	raw, err := secret.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope := cat([]byte("k8s\x00"),
		lenField(1, lenField(2, []byte("Secret"))), // typeMeta {kind}
		lenField(1, lenField(1, []byte("v1"))),     // typeMeta {apiVersion}
		lenField(2, raw))

	// What apimachinery makes of the envelope.
	var u runtime.Unknown
	if err := u.Unmarshal(envelope[4:]); err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime.Unknown says apiVersion %q kind %q", u.APIVersion, u.Kind)

	c := mustCodec[*corev1.Pod](t, podGVK)
	ev, err := NewProtobufWatchDecoder(bytes.NewReader(protoFrame(t, "ADDED", envelope)), c, 0).Next()
	if err == nil {
		t.Fatalf("a Secret (kind %s in the envelope) was decoded as Pod %s/%s (kind %s)", u.Kind, ev.Object.Namespace, ev.Object.Name, ev.Object.Kind)
	}
	t.Log(err)
}

// apimachinery's protobuf serializer refuses "k8s\x00" with nothing after
// it ("empty body"); so does the watch decoder, rather than hand on an
// empty object.
func TestProtobufEnvelopeWithNothingAfterItsPrefix(t *testing.T) {
	c := mustCodec[*corev1.Pod](t, podGVK)
	obj := []byte("k8s\x00")
	_, _, serr := protobufSerializer(t).Decode(obj, nil, nil)
	ev, err := NewProtobufWatchDecoder(bytes.NewReader(protoFrame(t, "ADDED", obj)), c, 0).Next()
	if err == nil {
		t.Errorf("apimachinery: %v; here an ADDED event of %#v", serr, ev.Object.ObjectMeta)
	}
}

// Objects never alias the buffer they were decoded from: overwriting it
// after decoding leaves every object as the generated Unmarshal made it.
func TestProtoDecodedObjectsDoNotAliasTheirBuffer(t *testing.T) {
	table, parts := newInternTable(), newPartTable()
	for _, typ := range protoTypes(t) {
		m := protoMessageFor(typ)
		for i, data := range randomObjects(t, typ, kindSeed(typ, 7), 4) {
			for _, pt := range []*partTable{nil, parts, parts} {
				for _, tbl := range []*internTable{nil, table} {
					want := reflect.New(typ)
					if err := want.Interface().(protoUnmarshaler).Unmarshal(bytes.Clone(data)); err != nil {
						t.Fatal(err)
					}
					buf := bytes.Clone(data)
					got := reflect.New(typ)
					d := protoDecoder{strings: tbl, parts: pt}
					if err := m.decode(got.UnsafePointer(), buf, &d); err != nil {
						t.Fatal(err)
					}
					for j := range buf {
						buf[j] = 0xa5
					}
					if !reflect.DeepEqual(want.Interface(), got.Interface()) {
						t.Fatalf("%v #%d: changed with its buffer", typ, i)
					}
				}
			}
		}
	}
}

// Every prefix of a watch frame and of a list body fails cleanly (no
// panic), or, for a list, decodes every item.
func TestProtobufTruncatedAtEveryByte(t *testing.T) {
	pod := protoOf(t, realisticPod(1))
	good := protoFrame(t, "ADDED", pod)
	codecs := map[string]*Codec[*corev1.Pod]{
		"plain":  mustCodec[*corev1.Pod](t, podGVK),
		"shared": mustCodec[*corev1.Pod](t, podGVK, WithSharedParts()),
		"nomf":   mustCodec[*corev1.Pod](t, podGVK, WithoutManagedFields()),
	}
	payload := good[4:]
	for name, c := range codecs {
		for n := 0; n < len(payload); n++ {
			_, err := NewProtobufWatchDecoder(bytes.NewReader(frame(payload[:n])), c, 0).Next()
			if err == nil {
				// acceptable only if the prefix is itself a whole event
				continue
			}
			if bytes.Contains([]byte(err.Error()), []byte("panicked")) {
				t.Fatalf("%s: prefix %d: %v", name, n, err)
			}
		}
	}
	list, _ := podList(3, "1234", "token", nil)
	body := protoOf(t, list)
	for name, c := range codecs {
		for n := 0; n < len(body); n++ {
			var got []*corev1.Pod
			_, err := DecodeProtobufList(bytes.NewReader(body[:n]), c, 0, collect(&got))
			if err == nil && len(got) != 3 {
				t.Fatalf("%s: prefix %d of %d: no error and %d items", name, n, len(body), len(got))
			}
			if err != nil && bytes.Contains([]byte(err.Error()), []byte("panicked")) {
				t.Fatalf("%s: prefix %d: %v", name, n, err)
			}
		}
	}
}

// The envelope of a list is a runtime.Unknown like any other: its fields
// may come in any order and its typeMeta may be split, and apimachinery's
// serializer sees the same kind whatever the order.
func TestProtobufListEnvelopeFieldsAsUnknownReadsThem(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	item, err := secret.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	list := lenField(2, item)
	for name, body := range map[string][]byte{
		"typeMeta split":     cat([]byte("k8s\x00"), lenField(1, lenField(2, []byte("SecretList"))), lenField(1, lenField(1, []byte("v1"))), lenField(2, list)),
		"typeMeta as varint": cat([]byte("k8s\x00"), varintField(1, 5), lenField(2, list)),
	} {
		var u runtime.Unknown
		uerr := u.Unmarshal(body[4:])
		var got []*corev1.Pod
		_, err := DecodeProtobufList(bytes.NewReader(body), mustCodec[*corev1.Pod](t, podGVK), 0, collect(&got))
		if len(got) > 0 {
			t.Errorf("%s: runtime.Unknown: kind %q (err %v); here %d Pod(s) handed to add (%s/%s), then %v", name, u.Kind, uerr, len(got), got[0].Namespace, got[0].Name, err)
		}
	}
}

// WatchEvent.object given twice is merged (RawExtension.raw kept from the
// first when the second has none), as WatchEvent's generated Unmarshal does.
func TestProtobufWatchObjectGivenTwiceIsMerged(t *testing.T) {
	pod := protoOf(t, realisticPod(1))
	payload := cat(lenField(1, []byte("ADDED")), lenField(2, lenField(1, pod)), lenField(2, nil))
	var we metav1.WatchEvent
	if err := we.Unmarshal(bytes.Clone(payload)); err != nil || len(we.Object.Raw) == 0 {
		t.Fatalf("setup: the generated WatchEvent.Unmarshal keeps no object (%v)", err)
	}
	ev, err := NewProtobufWatchDecoder(bytes.NewReader(frame(payload)), mustCodec[*corev1.Pod](t, podGVK), 0).Next()
	if err != nil {
		t.Fatalf("client-go decodes the pod; here: %v", err)
	}
	if ev.Object.Name != realisticPod(1).Name {
		t.Fatalf("decoded pod %q, want %q", ev.Object.Name, realisticPod(1).Name)
	}
}

// A tag whose field number exceeds 2^29 is read as the int32 it truncates
// to, by the generated code and by decodeFields: here ObjectMeta.labels
// (11). The sharing mode must decode it as the plain mode does.
func TestSharedPartsReadFieldNumbersAsPlainDoes(t *testing.T) {
	labels := cat(binary.AppendUvarint(nil, (1<<32|11)<<3|wireBytes), []byte{6},
		lenField(1, []byte("a")), lenField(2, []byte("x")))
	data := lenField(1, labels) // PartialObjectMetadata.metadata
	typ := reflect.TypeFor[metav1.PartialObjectMetadata]()
	want, plain, genErr, plainErr := decodeBoth(typ, data, nil, nil)
	_, shared, _, sharedErr := decodeBoth(typ, data, nil, newPartTable())
	if genErr != nil || plainErr != nil {
		t.Fatalf("generated %v, plain %v", genErr, plainErr)
	}
	if !reflect.DeepEqual(want, plain) {
		t.Fatal("plain differs")
	}
	if sharedErr != nil || !reflect.DeepEqual(want, shared) {
		t.Fatalf("shared mode: %v (generated and plain: labels %v)", sharedErr, want.(*metav1.PartialObjectMetadata).Labels)
	}
}
