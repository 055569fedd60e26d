package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A field met again within one object merges into the value decoded so
// far. With shared parts, that value may be shared, so the decoder copies
// it first; it copied it at every meeting, so an object whose map entries
// (or repeated elements) come interleaved with another field, or whose
// JSON repeats a key, cost O(k²) to decode for k meetings: a hostile
// 1 MiB item held the watch for minutes. Now a field is copied at most
// once per object: after that the value is the object's own.

// pbField encodes a length-delimited protobuf field.
func pbField(num int, data []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(num)<<3|2)
	out = binary.AppendUvarint(out, uint64(len(data)))
	return append(out, data...)
}

// interleavedConfigMap is a ConfigMap of n data entries, each followed by
// immutable=false (field 4), so that data is met again n times.
func interleavedConfigMap(n int) []byte {
	var out []byte
	for i := range n {
		entry := append(pbField(1, fmt.Appendf(nil, "k%d", i)), pbField(2, []byte("v"))...)
		out = append(out, pbField(2, entry)...)
		out = append(out, 0x20, 0x00)
	}
	return out
}

// interleavedPod is a Pod of n containers, each followed by the spec's
// restartPolicy (field 3).
func interleavedPod(n int) []byte {
	var spec []byte
	for i := range n {
		spec = append(spec, pbField(2, pbField(1, fmt.Appendf(nil, "c%d", i)))...)
		spec = append(spec, pbField(3, []byte("Always"))...)
	}
	return pbField(2, spec)
}

// repeatedDataKey is a ConfigMap in JSON whose "data" key comes n+1 times:
// once with n entries, then empty.
func repeatedDataKey(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"data":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	b.WriteString(`}`)
	for range n {
		b.WriteString(`,"data":{}`)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

func TestFieldMetAgainIsCopiedOncePerObject(t *testing.T) {
	protoCase := func(typ reflect.Type, encode func(int) []byte) func(n int) (uint64, any) {
		return func(n int) (uint64, any) {
			data := encode(n)
			got := reflect.New(typ)
			alloc := allocatedBy(func() {
				d := protoDecoder{parts: newPartTable()}
				require.NoError(t, protoMessageFor(typ).decode(got.UnsafePointer(), data, &d))
			})
			want := reflect.New(typ)
			require.NoError(t, want.Interface().(protoUnmarshaler).Unmarshal(data))
			assert.Equal(t, want.Interface(), got.Interface(), "as generated code merges")
			return alloc, got.Interface()
		}
	}
	for name, decode := range map[string]func(n int) (uint64, any){
		"protobuf map":      protoCase(reflect.TypeFor[corev1.ConfigMap](), interleavedConfigMap),
		"protobuf repeated": protoCase(reflect.TypeFor[corev1.Pod](), interleavedPod),
		"JSON repeated key": func(n int) (uint64, any) {
			data := repeatedDataKey(n)
			got := new(corev1.ConfigMap)
			alloc := allocatedBy(func() { require.NoError(t, jsonAPIFor(newPartTable()).Unmarshal(data, got)) })
			assert.Len(t, got.Data, n)
			return alloc, got
		},
	} {
		t.Run(name, func(t *testing.T) {
			const n = 1000
			small, _ := decode(n)
			large, _ := decode(8 * n)
			// Linear: about 8 times as much (map growth rounds it up).
			// Copying at every meeting: about 64 times.
			assert.Less(t, large, 20*small, "bytes allocated: %d for %d meetings, %d for %d", small, n, large, 8*n)
		})
	}
}

// What a decode made is known by its identity, not by the field holding
// it. A map's values are decoded into one scratch value, so a field inside
// it has the same address in every entry: entry "a" copied its
// RequestPolicy, and entry "b", given a shared one at that address, merged
// into it without a copy, changing another object's.
func TestMapValueMetAgainDoesNotWriteASharedPart(t *testing.T) {
	one := resource.MustParse("1")
	r1, err := (&resourcev1.CapacityRequestPolicy{}).Marshal()
	require.NoError(t, err)
	r2, err := (&resourcev1.CapacityRequestPolicy{ValidValues: []resource.Quantity{resource.MustParse("5")}}).Marshal()
	require.NoError(t, err)
	q, err := one.Marshal()
	require.NoError(t, err)
	capacity := func(key string, val []byte) []byte {
		return pbField(3, append(pbField(1, []byte(key)), pbField(2, val)...))
	}
	m, parts := protoMessageFor(reflect.TypeFor[resourcev1.Device]()), newPartTable()

	x := new(resourcev1.Device) // capacity "a", its RequestPolicy r1: remembered
	require.NoError(t, m.decode(reflect.ValueOf(x).UnsafePointer(),
		append(pbField(1, []byte("x")), capacity("a", append(pbField(1, q), pbField(2, r1)...))...), &protoDecoder{parts: parts}))
	require.NotNil(t, x.Capacity["a"].RequestPolicy)

	// Two entries, each with RequestPolicy r1, then r2 (met again).
	val := append(append(pbField(2, r1), pbField(1, q)...), pbField(2, r2)...)
	data := append(append(pbField(1, []byte("y")), capacity("a", val)...), capacity("b", val)...)
	y := new(resourcev1.Device)
	require.NoError(t, m.decode(reflect.ValueOf(y).UnsafePointer(), data, &protoDecoder{parts: parts}))
	want := new(resourcev1.Device)
	require.NoError(t, want.Unmarshal(data))
	assert.Equal(t, want, y, "as generated code merges")
	assert.Nil(t, x.Capacity["a"].RequestPolicy.ValidValues, "decoding y wrote into x's RequestPolicy")
}

// A key met again after null gets a shared part again: merging into it the
// next time needs a copy, whatever the field held before.
func TestKeyResetByNullIsCopiedAgain(t *testing.T) {
	api := jsonAPIFor(newPartTable())
	x := new(corev1.ConfigMap)
	require.NoError(t, api.Unmarshal([]byte(`{"data":{"k":"v"}}`), x))
	y := new(corev1.ConfigMap)
	require.NoError(t, api.Unmarshal([]byte(`{"data":{"a":"1"},"data":{"b":"2"},"data":null,"data":{"k":"v"},"data":{"evil":"1"}}`), y))
	assert.Equal(t, map[string]string{"k": "v", "evil": "1"}, y.Data)
	assert.Equal(t, map[string]string{"k": "v"}, x.Data, "decoding y wrote into x's data")
}
