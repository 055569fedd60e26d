package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"reflect"
	goruntime "runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// protoTypes are the kinds of apiTypes that have a protobuf form.
func protoTypes(t testing.TB) []reflect.Type {
	var types []reflect.Type
	for _, typ := range apiTypes(t) {
		if reflect.PointerTo(typ).Implements(protoUnmarshalerType) {
			types = append(types, typ)
		}
	}
	return types
}

// randomObjects fills n objects of type typ with random values and returns
// their protobuf encodings.
func randomObjects(t testing.TB, typ reflect.Type, seed int64, n int) [][]byte {
	filler := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			if c.Intn(8) == 0 { // beyond int64: held as an *inf.Dec
				*q = resource.MustParse(fmt.Sprintf("%d%018d", 1+c.Intn(1000), c.Int63n(1e18)))
				return
			}
			// few values, so that they repeat
			*q = *resource.NewMilliQuantity(c.Int63n(64)<<c.Intn(40), []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}[c.Intn(3)])
		},
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(c.Int63n(1<<33), 0) },
		func(tm *metav1.MicroTime, c randfill.Continue) {
			*tm = metav1.NewMicroTime(metav1.Unix(c.Int63n(1<<33), c.Int63n(1e9)).Time)
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				r.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap"}`)
			}
		},
	)
	var out [][]byte
	for range n {
		obj := reflect.New(typ)
		filler.Fill(obj.Interface())
		data, err := obj.Interface().(interface{ Marshal() ([]byte, error) }).Marshal()
		require.NoError(t, err, typ)
		out = append(out, data)
	}
	return out
}

// decodeBoth decodes data as a typ with the generated Unmarshal and with
// the compiled decoder (interning strings through table, sharing parts
// through parts).
func decodeBoth(typ reflect.Type, data []byte, table *internTable, parts *partTable) (generated, compiled any, genErr, compErr error) {
	g := reflect.New(typ)
	genErr = g.Interface().(protoUnmarshaler).Unmarshal(bytes.Clone(data))
	c := reflect.New(typ)
	d := protoDecoder{strings: table, parts: parts}
	compErr = protoMessageFor(typ).decode(c.UnsafePointer(), bytes.Clone(data), &d)
	return g.Interface(), c.Interface(), genErr, compErr
}

// decoded is an object the compiled decoder accepted, kept to check that
// decoding later objects, which may share its parts, left it as it was.
type decoded struct {
	typ  reflect.Type
	data []byte
	obj  any
}

// checkUnchanged fails if an object kept differs from what its bytes
// decode to now.
func checkUnchanged(t testing.TB, kept []decoded) {
	t.Helper()
	for i, k := range kept {
		want, _, err, _ := decodeBoth(k.typ, k.data, nil, nil)
		require.NoError(t, err)
		if !reflect.DeepEqual(want, k.obj) { // not require.Equal: its diff of two pods takes minutes
			t.Fatalf("%v #%d was changed after it was decoded:\n%#v\n%#v", k.typ, i, want, k.obj)
		}
	}
}

// Every kind of every API group is compiled (none falls back to its
// generated Unmarshal), and random objects of each decode to what the
// generated Unmarshal gives: with and without interning, and sharing parts
// (each object twice, so that the second shares everything with the
// first). No object decoded is changed by the objects decoded after it.
func TestProtoDecodeMatchesGenerated(t *testing.T) {
	table, parts := newInternTable(), newPartTable()
	var kept []decoded
	for _, typ := range protoTypes(t) {
		if protoMessageFor(typ) == nil {
			t.Errorf("%v is not compiled", typ)
			continue
		}
		for i, data := range randomObjects(t, typ, kindSeed(typ, 0), 8) {
			for j, tbl := range []*internTable{nil, table, table, table, table} { // the table remembers, then gives
				var pt *partTable
				if j >= 3 {
					pt = parts
				}
				want, got, wantErr, gotErr := decodeBoth(typ, data, tbl, pt)
				require.NoError(t, wantErr, "%v #%d: generated", typ, i)
				require.NoError(t, gotErr, "%v #%d: compiled", typ, i)
				require.Equal(t, want, got, "%v #%d", typ, i)
				if pt != nil {
					kept = append(kept, decoded{typ, data, got})
				}
			}
		}
	}
	checkUnchanged(t, kept)
}

// Random mutations of encoded pods (bytes overwritten, inserted, deleted)
// decode both ways: what the compiled decoder accepts, the generated
// Unmarshal accepts too, with the same result, also when it shares parts;
// and no object is changed by decoding the ones after it. (The compiled
// decoder refuses some malformed inputs that the generated code reads
// past, such as a map key longer than its entry.)
// FuzzProtoDecodeMatchesGenerated does the same with the fuzzing engine's
// mutations.
func TestProtoDecodeMutations(t *testing.T) {
	typ := reflect.TypeFor[corev1.Pod]()
	realistic, err := realisticPod(1).Marshal()
	require.NoError(t, err)
	seeds := append(randomObjects(t, typ, 1, 4), realistic)
	table, parts := newInternTable(), newPartTable()
	r := rand.New(rand.NewSource(1))
	var kept []decoded
	for i := range 10000 {
		data := bytes.Clone(seeds[i%len(seeds)])
		for range 1 + r.Intn(4) {
			at := r.Intn(len(data))
			switch r.Intn(3) {
			case 0:
				data[at] = byte(r.Intn(256))
			case 1:
				data = append(data[:at], append([]byte{byte(r.Intn(256))}, data[at:]...)...)
			case 2:
				data = append(data[:at], data[at+1:]...)
			}
		}
		for _, pt := range []*partTable{nil, parts} {
			want, got, wantErr, gotErr := decodeBoth(typ, data, table, pt)
			if gotErr != nil {
				continue
			}
			if wantErr != nil {
				t.Fatalf("mutation %d: the compiled decoder accepted what the generated one refuses: %v", i, wantErr)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("mutation %d: different objects:\n%#v\n%#v", i, want, got)
			}
			if pt != nil {
				kept = append(kept, decoded{typ, data, got})
			}
		}
	}
	require.Greater(t, len(kept), 500, "too few mutations decode to test anything")
	checkUnchanged(t, kept)
}

// Quantities are parsed once per distinct value and copied after that,
// except those held as an *inf.Dec, which would share it.
func TestProtoDecodeQuantities(t *testing.T) {
	pod := func(cpu string) []byte {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}}}
		data, err := p.Marshal()
		require.NoError(t, err)
		return data
	}
	typ, table := reflect.TypeFor[corev1.Pod](), newInternTable()
	for _, cpu := range []string{"250m", "1234567890123456789012345"} {
		var decs []any
		for range 2 {
			want, got, wantErr, gotErr := decodeBoth(typ, pod(cpu), table, nil)
			require.NoError(t, wantErr)
			require.NoError(t, gotErr)
			require.Equal(t, want, got)
			q := got.(*corev1.Pod).Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			require.Equal(t, cpu, q.String())
			decs = append(decs, q.AsDec())
		}
		require.NotSame(t, decs[0], decs[1], cpu)
	}
}

// FuzzProtoDecodeMatchesGenerated is TestProtoDecodeMutations for the
// fuzzing engine. Its inputs are kilobytes long, and the engine stops
// fuzzing for up to a minute to minimize each new interesting one (the
// executions counter then stands still), so run it with
//
//	go test -run X -fuzz FuzzProtoDecodeMatchesGenerated -fuzzminimizetime 100x ./internal/wire
func FuzzProtoDecodeMatchesGenerated(f *testing.F) {
	typ := reflect.TypeFor[corev1.Pod]()
	realistic, err := realisticPod(1).Marshal()
	require.NoError(f, err)
	for _, data := range append(randomObjects(f, typ, 1, 2), realistic) {
		f.Add(data)
	}
	table, parts := newInternTable(), newPartTable()
	var last []decoded // the object decoded before, sharing parts
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, pt := range []*partTable{nil, parts} {
			want, got, wantErr, gotErr := decodeBoth(typ, data, table, pt)
			if gotErr != nil {
				return
			}
			if wantErr != nil {
				t.Fatalf("the compiled decoder accepted what the generated one refuses: %v", wantErr)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("different objects:\n%#v\n%#v", want, got)
			}
			if pt != nil {
				checkUnchanged(t, last)
				last = []decoded{{typ, bytes.Clone(data), got}}
			}
		}
	})
}

// A group (wire types 3 and 4) is refused, where the generated Unmarshal
// skips it: no Kubernetes encoder writes groups, and proto3 has none.
func TestProtoDecodeRefusesGroups(t *testing.T) {
	group := binary.AppendUvarint(nil, 9000<<3|3) // start group
	group = append(group, varintField(1, 5)...)
	group = binary.AppendUvarint(group, 9000<<3|4) // end group
	// PartialObjectMetadata.metadata: the group, then name
	data := tagged(1, append(group, tagged(1, []byte("name"))...))

	typ := reflect.TypeFor[metav1.PartialObjectMetadata]()
	generated, _, genErr, compErr := decodeBoth(typ, data, nil, nil)
	require.NoError(t, genErr)
	require.Equal(t, "name", generated.(*metav1.PartialObjectMetadata).Name)
	require.ErrorContains(t, compErr, "unsupported wire type 3")
}

// TestProtoDecodeInterleavedRepeatedFieldGrowsByDoubling: a repeated field
// whose elements come between other fields (no marshaler writes that, a
// hostile frame may) must not cost a new array per element: growing to the
// exact size each time made such a frame quadratic to decode.
func TestProtoDecodeInterleavedRepeatedFieldGrowsByDoubling(t *testing.T) {
	const n = 4000
	var meta []byte // ObjectMeta: finalizers (14) and name (1), alternating
	for range n {
		meta = append(meta, tagged(14, []byte("x"))...)
		meta = append(meta, tagged(1, nil)...)
	}
	data := tagged(1, meta) // PartialObjectMetadata: metadata (1)

	typ := reflect.TypeFor[metav1.PartialObjectMetadata]()
	generated, compiled, genErr, compErr := decodeBoth(typ, data, nil, nil)
	require.NoError(t, genErr)
	require.NoError(t, compErr)
	require.Equal(t, generated, compiled)
	require.Len(t, compiled.(*metav1.PartialObjectMetadata).Finalizers, n)

	m := protoMessageFor(typ)
	allocs := testing.AllocsPerRun(3, func() {
		var obj metav1.PartialObjectMetadata
		d := protoDecoder{}
		if err := m.decode(unsafe.Pointer(&obj), data, &d); err != nil {
			t.Fatal(err)
		}
	})
	// One-byte strings cost no allocation; the arrays, about log2(n) of
	// them. The exact growth made one array per element.
	if allocs > 100 {
		t.Errorf("%v allocations for %d interleaved elements, want about 20", allocs, n)
	}
}

// retainedBy returns the heap bytes still reachable after decode, with
// the decoded object kept alive.
func retainedBy(decode func() any) uint64 {
	var a, b goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&a)
	obj := decode()
	goruntime.GC()
	goruntime.ReadMemStats(&b)
	goruntime.KeepAlive(obj)
	return b.HeapAlloc - min(a.HeapAlloc, b.HeapAlloc)
}

// 1 MiB of empty labels entries, all the same key "": the map ends with one
// entry, as from the generated Unmarshal, and must not keep room for the
// 512Ki entries of its run (it held 41 MB).
func TestMapRoomFollowsItsEntries(t *testing.T) {
	meta := bytes.Repeat([]byte{0x5a, 0x00}, 1<<19) // ObjectMeta.labels (11): an empty entry
	data := tagged(1, meta)
	typ := reflect.TypeFor[metav1.PartialObjectMetadata]()
	gen := retainedBy(func() any {
		o := new(metav1.PartialObjectMetadata)
		if err := o.Unmarshal(data); err != nil {
			t.Fatal(err)
		}
		return o
	})
	comp := retainedBy(func() any {
		o := new(metav1.PartialObjectMetadata)
		d := protoDecoder{}
		if err := protoMessageFor(typ).decode(reflect.ValueOf(o).UnsafePointer(), data, &d); err != nil {
			t.Fatal(err)
		}
		if len(o.Labels) != 1 {
			t.Fatal(len(o.Labels))
		}
		return o
	})
	t.Logf("frame of %d bytes: the object retains %d bytes (generated: %d)", len(data), comp, gen)
	if comp > uint64(len(data)) {
		t.Errorf("a one-label object retains %d bytes from a %d-byte frame (generated Unmarshal: %d)", comp, len(data), gen)
	}
}

// A repeated varint field written packed (one length-delimited field
// holding every value, as proto3 marshalers write it; the generated
// Unmarshal of every k8s.io/api type accepts it) decodes to all its
// values, negative ones included, also when unpacked elements follow.
func TestProtoDecodePackedRepeatedVarints(t *testing.T) {
	typ := reflect.TypeFor[corev1.PodSecurityContext]() // supplementalGroups = 4, repeated int64
	values := []int64{1, 300, -5, 1 << 40}
	var packed []byte
	for _, v := range values {
		packed = binary.AppendUvarint(packed, uint64(v))
	}
	data := tagged(4, packed)
	data = binary.AppendUvarint(data, 4<<3|wireVarint) // then one unpacked
	data = binary.AppendUvarint(data, 7)
	want, got, wantErr, gotErr := decodeBoth(typ, data, newInternTable(), nil)
	require.NoError(t, wantErr)
	require.NoError(t, gotErr)
	require.Equal(t, append(values, 7), want.(*corev1.PodSecurityContext).SupplementalGroups, "the generated Unmarshal")
	require.Equal(t, want, got)
}

// A Quantity message that does not start with its field 1 is not a key
// of the table's parsed quantities: such a message (here an unknown
// field only) leaves the quantity as it was, which differs from object
// to object.
func TestProtoQuantityWithoutItsStringIsNotRemembered(t *testing.T) {
	typ := reflect.TypeFor[autoscalingv1.ObjectMetricSource]() // targetValue = 3, a Quantity
	quantity := func(s string) []byte { return tagged(1, []byte(s)) }
	unknownOnly := []byte{2 << 3, 0} // field 2, varint 0: skipped by Quantity.Unmarshal
	table := newInternTable()
	for _, v := range []string{"5", "7", "9"} {
		data := append(tagged(3, quantity(v)), tagged(3, unknownOnly)...)
		want, got, wantErr, gotErr := decodeBoth(typ, data, table, nil)
		require.NoError(t, wantErr)
		require.NoError(t, gotErr)
		require.Equal(t, v, want.(*autoscalingv1.ObjectMetricSource).TargetValue.String(), "the generated Unmarshal")
		require.Equal(t, v, got.(*autoscalingv1.ObjectMetricSource).TargetValue.String())
	}
}

// A run of entries that fail when decoded costs about what the frame
// holds: a slice was made for the whole run before its first entry was
// looked at, 408 bytes of Container for each 2- or 3-byte entry (411 MB
// for a 2 MB frame, 13 GB for one of 64 MiB), where the generated
// Unmarshal fails at the first entry without allocating.
func TestRunOfBadEntriesAllocatesLittle(t *testing.T) {
	const entries = 1 << 20
	podOf := func(spec []byte) []byte {
		obj := append([]byte("k8s\x00"), tagged(1, append(tagged(1, []byte("v1")), tagged(2, []byte("Pod"))...))...)
		return append(obj, tagged(2, tagged(2, spec))...) // Unknown.raw: a Pod with only its spec
	}
	for name, entry := range map[string][]byte{
		"wrong wire type": {2<<3 | wireVarint, 0},            // containers (2) as a varint
		"bad message":     {2<<3 | wireBytes, 1, 0x80},       // a container of one truncated varint
		"bad list item":   {2<<3 | wireBytes, 2, 0x0a, 0x05}, // a container whose name runs past it
	} {
		t.Run(name, func(t *testing.T) {
			stream := protoFrame(t, "ADDED", podOf(bytes.Repeat(entry, entries)))
			c := mustCodec[*corev1.Pod](t, podGVK)
			var err error
			n := allocatedBy(func() { _, err = NewProtobufWatchDecoder(bytes.NewReader(stream), c, 0).Next() })
			if err == nil {
				t.Fatal("no error")
			}
			if limit := uint64(16 * len(stream)); n > limit {
				t.Errorf("%d MB allocated for a frame of %d MB (%v)", n>>20, len(stream)>>20, err)
			}
		})
	}
}

// Where the generated code leaves a field nil or makes it empty, so does
// the compiled decoder: a packed repeated varint field with no values is
// nil (it was made empty), and a map entry without a value whose type is
// a named slice with its own Unmarshal (authentication's ExtraValue) is
// empty, not nil.
func TestEmptyValuesAsGenerated(t *testing.T) {
	for name, tc := range map[string]struct {
		typ  reflect.Type
		data []byte
	}{
		"packed, no values": {reflect.TypeFor[corev1.PodSecurityContext](), tagged(4, nil)},
		"map entry, no value": {reflect.TypeFor[certificatesv1.CertificateSigningRequest](),
			tagged(2, tagged(6, tagged(1, []byte("k"))))},
	} {
		for _, parts := range []*partTable{nil, newPartTable()} {
			want, got, wantErr, gotErr := decodeBoth(tc.typ, tc.data, nil, parts)
			require.NoError(t, wantErr)
			require.NoError(t, gotErr)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("%s (sharing %v):\ngenerated %#v\ncompiled  %#v", name, parts != nil, want, got)
			}
		}
	}
}
