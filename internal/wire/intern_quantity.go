package wire

import (
	"hash/maphash"
	"reflect"
	"unsafe"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Every container's requests and limits hold a few quantities ("100m",
// "128Mi"), the same in every pod of a workload; resource.Quantity's
// Unmarshal and UnmarshalJSON parse each again. The intern table remembers
// the quantities it parsed, keyed by their encoded bytes, and hands out
// copies: a protobuf message (which starts with 0x0a, its field 1) or the
// bytes of a JSON string without escapes or control characters (so never
// 0x0a): the two kinds of keys never meet.
//
// Only quantities held as a scaled int64 are remembered: one that needed
// an *inf.Dec would share that pointer with every copy. And only encodings
// for which the result does not depend on what the field held before: a
// protobuf message that starts with field 1 (the string), any JSON string.

// quantitySlots is the number of parsed quantities an internTable keeps.
const quantitySlots = 512

type parsedQuantity struct {
	raw string
	q   resource.Quantity
}

// quantityDecOffset is where a Quantity keeps its *inf.Dec (its unexported
// field d, whose first word is that pointer); noQuantityCache if the
// layout is not the one this code knows.
var quantityDecOffset = func() uintptr {
	f, ok := quantityType.FieldByName("d")
	if !ok || f.Type.Kind() != reflect.Struct || f.Type.NumField() == 0 ||
		f.Type.Field(0).Type != reflect.TypeFor[*inf.Dec]() || f.Type.Field(0).Offset != 0 {
		return noQuantityCache
	}
	return f.Offset
}()

const noQuantityCache = ^uintptr(0)

// quantity copies the remembered quantity of these bytes to p, if any.
// The bytes are a key as described above.
func (t *internTable) quantity(p unsafe.Pointer, data []byte) bool {
	if t == nil || len(data) == 0 || len(data) > maxInternLen {
		return false
	}
	h := maphash.Bytes(t.seed, data)
	bucket := t.quantities[h%(quantitySlots/2)*2:][:2]
	for i := range bucket {
		if e := bucket[i].Load(); e != nil && e.raw == string(data) {
			*(*resource.Quantity)(p) = e.q
			return true
		}
	}
	return false
}

// rememberQuantity remembers the quantity at p, just parsed from data.
func (t *internTable) rememberQuantity(p unsafe.Pointer, data []byte) {
	q := (*resource.Quantity)(p)
	if t == nil || len(data) == 0 || len(data) > maxInternLen || quantityDecOffset == noQuantityCache ||
		*(*unsafe.Pointer)(unsafe.Add(p, quantityDecOffset)) != nil {
		return
	}
	h := maphash.Bytes(t.seed, data)
	bucket := t.quantities[h%(quantitySlots/2)*2:][:2]
	victim(bucket).Store(&parsedQuantity{raw: string(data), q: *q})
}
