package wire

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A part is remembered for other objects to share only if nothing in it is
// the decoder's to merge into (ownedSet) or has room to append into: the
// first would make a later meeting of this object change the others, the
// second make an append to one object's slice show in another's.

// securityContext is a SecurityContext's bytes holding capabilities.add
// of each of adds, with privileged=false between them: capabilities is
// met again, a value the decode makes (owned).
func securityContext(adds ...string) []byte {
	var out []byte
	for i, a := range adds {
		if i > 0 {
			out = append(out, 0x10, 0x00) // privileged: false
		}
		out = append(out, pbField(1, pbField(1, []byte(a)))...)
	}
	return out
}

// A container's securityContext made of a capability met again was
// remembered, holding the copy the decode made: an identical one in the
// next container, given that part and met again, merged into the copy
// through a shallow copy of the part, changing the first container and the
// part every later object gets.
func TestAPartHoldingWhatTheDecodeMadeIsNotShared(t *testing.T) {
	sc := securityContext("a", "b")
	c0 := append(pbField(1, []byte("x")), pbField(15, sc)...)
	c1 := append(append(pbField(15, sc), pbField(1, []byte("x"))...), pbField(15, securityContext("c"))...)
	typ, parts := reflect.TypeFor[corev1.PodSpec](), newPartTable()
	want, got, wantErr, gotErr := decodeBoth(typ, append(pbField(2, c0), pbField(2, c1)...), nil, parts)
	require.NoError(t, wantErr)
	require.NoError(t, gotErr)
	assert.Equal(t, want, got, "as generated code merges")
	want, got, _, gotErr = decodeBoth(typ, pbField(2, c0), nil, parts)
	require.NoError(t, gotErr)
	assert.Equal(t, want, got, "a later object")
}

// Slices with room to grow are not shared: an unpacked []int64 met again,
// a repeated field met again, and a run of more elements than its hint
// (1000 empty containers in 2000 bytes) grow by doubling.
func TestASharedPartHoldsNoSliceWithRoom(t *testing.T) {
	var empty []byte
	for range 1000 {
		empty = append(empty, pbField(2, nil)...)
	}
	for name, c := range map[string]struct {
		typ   reflect.Type
		data  []byte
		slice func(obj any) reflect.Value
	}{
		"varints met again": {reflect.TypeFor[corev1.PodSpec](),
			pbField(14, []byte{0x20, 0x01, 0x10, 0x00, 0x20, 0x02, 0x10, 0x00, 0x20, 0x03}), // supplementalGroups 1, runAsUser, 2, runAsUser, 3
			func(obj any) reflect.Value {
				return reflect.ValueOf(obj.(*corev1.PodSpec).SecurityContext.SupplementalGroups)
			}},
		"repeated field met again": {reflect.TypeFor[corev1.Container](),
			append(pbField(1, []byte("x")), pbField(15, securityContext("a", "b", "c"))...),
			func(obj any) reflect.Value {
				return reflect.ValueOf(obj.(*corev1.Container).SecurityContext.Capabilities.Add)
			}},
		"more elements than the hint": {reflect.TypeFor[corev1.ReplicationController](),
			pbField(2, pbField(3, pbField(2, empty))), // spec.template.spec.containers
			func(obj any) reflect.Value {
				return reflect.ValueOf(obj.(*corev1.ReplicationController).Spec.Template.Spec.Containers)
			}},
	} {
		t.Run(name, func(t *testing.T) {
			parts := newPartTable()
			_, a, _, err := decodeBoth(c.typ, c.data, nil, parts)
			require.NoError(t, err)
			_, b, _, err := decodeBoth(c.typ, c.data, nil, parts)
			require.NoError(t, err)
			sa, sb := c.slice(a), c.slice(b)
			if sa.Cap() > sa.Len() {
				assert.NotEqual(t, sa.Pointer(), sb.Pointer(), "a slice with room (len %d, cap %d) shared by two objects", sa.Len(), sa.Cap())
			}
		})
	}
}

// A self-decoding named slice (metav1.Verbs) met again was trimmed to its
// length after each meeting, so its own Unmarshal copied it whole at the
// next: O(k²), with or without shared parts.
func TestSelfDecodingSliceMetAgainIsLinear(t *testing.T) {
	one, err := (&metav1.APIResource{Verbs: metav1.Verbs{"get"}}).Marshal()
	require.NoError(t, err)
	typ := reflect.TypeFor[metav1.APIResource]()
	for _, parts := range []*partTable{nil, newPartTable()} {
		decode := func(n int) uint64 {
			var data []byte
			for range n {
				data = append(append(data, one...), 0x10, 0x00) // namespaced: false
			}
			got := reflect.New(typ)
			alloc := allocatedBy(func() {
				require.NoError(t, protoMessageFor(typ).decode(got.UnsafePointer(), data, &protoDecoder{parts: parts}))
			})
			want := reflect.New(typ)
			require.NoError(t, want.Interface().(protoUnmarshaler).Unmarshal(data))
			require.Equal(t, want.Interface(), got.Interface())
			return alloc
		}
		const n = 1000
		small, large := decode(n), decode(8*n)
		assert.Less(t, large, 20*small, "shared parts %t: bytes allocated: %d for %d meetings, %d for %d", parts != nil, small, n, large, 8*n)
	}
}

// FuzzProtoSequenceSharesNothingWritable decodes objects made of a and b
// concatenated (a protobuf message after another merges into it: every
// field is met again) with one partTable: each must be what the generated
// Unmarshal gives and stay so while the others are decoded. Run it with
//
//	go test -run X -fuzz FuzzProtoSequenceSharesNothingWritable -fuzzminimizetime 100x ./internal/wire
func FuzzProtoSequenceSharesNothingWritable(f *testing.F) {
	typ := reflect.TypeFor[corev1.Pod]()
	realistic, err := realisticPod(1).Marshal()
	require.NoError(f, err)
	objs := randomObjects(f, typ, 7, 3)
	f.Add(realistic, objs[0])
	f.Add(objs[1], objs[2])
	c0 := append(pbField(1, []byte("x")), pbField(15, securityContext("a", "b"))...)
	f.Add(pbField(2, pbField(2, c0)), pbField(2, pbField(2, pbField(15, securityContext("c")))))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		cat := func(xs ...[]byte) []byte { return bytes.Join(xs, nil) }
		parts := newPartTable()
		var kept []decoded
		for _, data := range [][]byte{a, cat(a, b), cat(b, a), cat(a, b, a), b, cat(a, a)} {
			want, got, wantErr, gotErr := decodeBoth(typ, data, nil, parts)
			if gotErr != nil {
				continue
			}
			if wantErr != nil {
				t.Fatalf("the compiled decoder accepted what the generated one refuses: %v", wantErr)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("different objects:\n%#v\n%#v", want, got)
			}
			kept = append(kept, decoded{typ, bytes.Clone(data), got})
			checkUnchanged(t, kept)
		}
	})
}
