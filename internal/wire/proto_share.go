package wire

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/listwatch/listwatch/internal/share"
)

// The pods of one ReplicaSet carry the same labels, owner reference,
// tolerations, security context, ports, env and resource lists, and a
// pod's new version repeats most of the old one. Their bytes repeat too,
// so a decoder can share them without comparing Go values: a partTable
// remembers the maps, slices and pointed-to messages it decoded, keyed by
// their Go type and the protobuf bytes they came from, and an object whose
// field has the same bytes gets the same value instead of decoding them
// again. Less memory held and less work, but the objects of a codec built
// WithSharedParts share those parts: nobody may modify them.
//
// Only a field met empty is shared, and its whole run of entries (the
// elements of a repeated field, the entries of a map, a message written in
// pieces) is its key, so the value depends on the bytes alone. A field
// that is met again later in the same message (no marshaler writes one so,
// the generated Unmarshal merges) must not change the shared value: the
// decoder copies a map or pointed-to message before merging into it
// (unshare), and a shared slice has no spare capacity, so appending copies
// it.

// partSlots is the number of parts a partTable remembers, in buckets of
// partWays; maxPartLen the longest run of bytes remembered (at most 4 MiB
// of keys in all). The table keeps its parts until they are pushed out or
// forgotten, however long ago their objects were deleted, so what a part
// decodes to is bounded too: elements that are empty on the wire (2 bytes
// of protobuf, 3 of JSON) decode to hundreds of bytes each. A part is
// remembered only if its size (below) is at most maxPartGrowth times its
// bytes, or maxPartLen: at most 32 MiB of values in all.
const (
	partSlots     = 2048
	partWays      = 4
	maxPartLen    = 2 << 10
	maxPartGrowth = 8
)

// The size of a part counts the arrays of its slices, the entries of its
// maps and the structs its pointers point to, those of the parts it holds
// included (a part found in the table by its remembered size). Its
// strings and numbers are not counted: they take no more than 8 times
// their bytes (an int64 from a one-byte varint).

// ownSize is the size of the value of type typ at p, a map, slice or
// pointer to a struct, without that of the parts it holds.
func ownSize(typ reflect.Type, p unsafe.Pointer) int {
	switch typ.Kind() {
	case reflect.Slice:
		return (*sliceHeader)(p).cap * int(typ.Elem().Size())
	case reflect.Map:
		return reflect.NewAt(typ, p).Elem().Len() * int(typ.Key().Size()+typ.Elem().Size())
	case reflect.Pointer:
		if *(*unsafe.Pointer)(p) != nil {
			return int(typ.Elem().Size())
		}
	}
	return 0
}

// smallEnough reports whether a part of this size, decoded from rawLen
// bytes, may be remembered.
func smallEnough(size, rawLen int) bool {
	return size <= max(maxPartLen, maxPartGrowth*rawLen)
}

// partTable is a bounded cache of decoded parts, like internTable, and
// like it safe for concurrent use without locks: a slot is swapped
// atomically and a part never changes. Its buckets have four slots, not
// two: a pod brings a few dozen parts, and the next pod of its ReplicaSet
// is to find them still there (with two, reflector's
// TestSharingSharesParts found a part of two identical pods not shared in
// about one run in a thousand).
type partTable struct {
	seed  maphash.Seed
	slots [partSlots]atomic.Pointer[sharedPart]
	stats [statSlots]fieldStats // by protoStructField.id
}

// A field whose parts differ in most objects (containers that mount a
// volume named after their pod, say) costs a hash and a copy of its bytes
// each time and pushes useful parts out of the table. So each field's hits
// are counted over windows of shareWindow runs: after a window in which
// fewer than one run in minHitRatio was found in the table, the field is
// looked up only once every shareProbe runs, until a window's probes hit
// often enough again.
const (
	statSlots   = 1024 // fields sharing a slot share their counts
	shareWindow = 1024
	shareProbe  = 16
	minHitRatio = 8
)

type fieldStats struct {
	runs, hits atomic.Uint32
	skipping   atomic.Bool
}

// sharedFieldIDs numbers the shared fields as they are compiled (and the
// JSON value types shared, json_share.go).
var sharedFieldIDs atomic.Uint32

// worthLookingUp reports whether a run of the field (or JSON value type)
// numbered id is to be looked up in the table (and remembered), counting
// it.
func (t *partTable) worthLookingUp(id uint32) bool {
	s := &t.stats[id%statSlots]
	n := s.runs.Add(1)
	skipping := s.skipping.Load()
	if n%shareWindow == 0 {
		looked := uint32(shareWindow)
		if skipping {
			looked /= shareProbe
		}
		s.skipping.Store(s.hits.Swap(0)*minHitRatio < looked)
	}
	return !skipping || n%shareProbe == 0
}

// sharedPart is one remembered value: a slice header, or a map or message
// pointer in data, and its size (ownSize).
type sharedPart struct {
	typ  reflect.Type
	raw  string
	val  sliceHeader
	size int
}

func newPartTable() *partTable { return &partTable{seed: maphash.MakeSeed()} }

// forget empties the table (the fields' counts stay). Decoders using it
// meanwhile may still find a part or remember one.
func (t *partTable) forget() {
	for i := range t.slots {
		t.slots[i].Store(nil)
	}
}

// sharedField reports whether f is shared when decoding WithSharedParts:
// a map, a repeated field or a pointed-to message that is not one of the
// parts that differ in every object (which would only push useful parts
// out of the table).
func sharedField(f *protoStructField) bool {
	switch f.name {
	case "ObjectMeta.ManagedFields", "ManagedFieldsEntry.Time",
		"PodStatus.Conditions", "PodStatus.ContainerStatuses", "PodStatus.InitContainerStatuses",
		"PodStatus.PodIPs", "PodStatus.HostIPs", "PodStatus.StartTime":
		return false
	}
	return true
}

// decodeRun decodes the run of fields at the start of b (each with this
// tag, the first one's wire type 2) into the field at p, which is a map, a
// repeated field or a message pointer, and returns the bytes after the run.
// An empty shared field gets the value remembered for the same bytes, or
// remembers what they decode to.
func (t *partTable) decodeRun(f *protoStructField, p unsafe.Pointer, b []byte, tag uint64, d *protoDecoder) ([]byte, error) {
	run, n := spanRun(b, tag)
	metAgain := !emptyPart(p, f.isSlice)
	var before unsafe.Pointer
	if metAgain {
		before = d.unshare(f, p) // met again: merge into a copy
	} else if f.share && len(run) <= maxPartLen && n > 0 && t.worthLookingUp(f.id) {
		return t.share(f, p, b, run, n, d)
	}
	if n == 0 { // malformed: let the field report it
		run = b
		n = 1
	}
	err := f.decodeRun(p, run, n, d)
	if metAgain && err == nil {
		d.owned.made(p, before) // a slice's copy is made as it grows
	}
	d.decoded += ownSize(f.typ, p)
	return b[len(run):], err
}

// share is decodeRun for an empty shared field.
func (t *partTable) share(f *protoStructField, p unsafe.Pointer, b, run []byte, n int, d *protoDecoder) ([]byte, error) {
	v, ok, slot := t.lookup(f.id, f.typ, run)
	if ok {
		setPart(p, v.val, f.isSlice)
		d.decoded += v.size
		return b[len(run):], nil
	}
	owned, spare, decoded := len(d.owned), d.spare, d.decoded
	if err := f.decodeRun(p, run, n, d); err != nil {
		return nil, err
	}
	d.decoded += ownSize(f.typ, p)
	// A part that holds a value this object made (a field met again
	// inside it) is not remembered: that value is merged into without a
	// copy when met again, which must only change this object.
	if size := d.decoded - decoded; len(d.owned) == owned && d.spare == spare && smallEnough(size, len(run)) {
		remember(slot, f, p, run, size)
	}
	return b[len(run):], nil
}

// remember has slot remember the part of this size just decoded at p from
// run, unless it holds a Quantity in place, whose reads write
// (share.QuantityPlan). The plan is looked up here, on a miss, rather than
// kept in the field's descriptor, which every decode reads.
func remember(slot *atomic.Pointer[sharedPart], f *protoStructField, p unsafe.Pointer, run []byte, size int) {
	if !share.QuantityPlanOf(f.typ).In(p) {
		slot.Store(&sharedPart{typ: f.typ, raw: string(run), val: partAt(p, f.isSlice), size: size})
	}
}

// lookup returns the part remembered for type typ and the bytes raw (and
// counts the hit for id), or else the slot that is to remember it.
func (t *partTable) lookup(id uint32, typ reflect.Type, raw []byte) (part *sharedPart, ok bool, slot *atomic.Pointer[sharedPart]) {
	h := maphash.Bytes(t.seed, raw)
	bucket := t.slots[h%(partSlots/partWays)*partWays:][:partWays]
	for i := range bucket {
		if e := bucket[i].Load(); e != nil && e.typ == typ && e.raw == string(raw) {
			t.stats[id%statSlots].hits.Add(1)
			return e, true, nil
		}
	}
	return nil, false, victim(bucket)
}

// spanRun returns the run of fields with this tag at the start of b (the
// elements of a repeated field or the entries of a map, which the
// generated marshalers write one after the other), and how many there are.
func spanRun(b []byte, tag uint64) (run []byte, n int) {
	rest := b
	for len(rest) > 0 {
		t, k := consumeVarint(rest)
		if k == 0 || t != tag {
			break
		}
		after, err := skipProtoField(rest[k:], t>>3, t&7)
		if err != nil {
			break
		}
		rest, n = after, n+1
	}
	return b[:len(b)-len(rest)], n
}

// decodeRun decodes the n length-delimited fields of run (all of f's tag)
// into the field at p.
func (f *protoStructField) decodeRun(p unsafe.Pointer, run []byte, n int, d *protoDecoder) error {
	if f.repeated {
		f.reserve(p, max(n, 1), len(run), d)
	}
	for len(run) > 0 {
		// Every tag of the run is the field's (its number, truncated to
		// an int32 as decodeFields reads it, may exceed maxFieldNumber).
		tag, k := consumeVarint(run)
		if k == 0 {
			return fmt.Errorf("%w: %s: truncated field tag", errProtobuf, f.name)
		}
		if tag&7 != wireBytes {
			return fmt.Errorf("%w: %s has wire type %d, want %d", errProtobuf, f.name, tag&7, wireBytes)
		}
		data, rest, err := f.lengthDelimited(run[k:])
		if err != nil {
			return err
		}
		if err := f.decodeBytes(p, data, d); err != nil {
			return err
		}
		run = rest
	}
	return nil
}

// A remembered part is held as its parent holds it: a slice's header, or
// a map's or a pointer's one word in data. slice says which.

// partAt returns the part at p to remember: a slice without its spare
// capacity, or a map or pointer.
func partAt(p unsafe.Pointer, slice bool) sliceHeader {
	if slice {
		h := *(*sliceHeader)(p)
		h.cap = h.len
		return h
	}
	return sliceHeader{data: *(*unsafe.Pointer)(p)}
}

// setPart gives the value at p a remembered part.
func setPart(p unsafe.Pointer, v sliceHeader, slice bool) {
	if slice {
		*(*sliceHeader)(p) = v
		return
	}
	*(*unsafe.Pointer)(p) = v.data
}

// emptyPart reports whether the value at p holds nothing yet.
func emptyPart(p unsafe.Pointer, slice bool) bool {
	if slice {
		h := (*sliceHeader)(p)
		return h.len == 0 && h.cap == 0
	}
	return *(*unsafe.Pointer)(p) == nil
}

// trimVarints sets the capacity of every []int32, []int64... field of the
// struct at p (and of the structs it holds by value) to its length, so
// that the merge appending to one copies it: its array may be another
// object's. (Its pointers, maps, strings and messages are decoded as runs
// and unshared when the merge reaches them.)
func (m *protoMessage) trimVarints(p unsafe.Pointer) {
	for _, f := range m.fields {
		switch {
		case f == nil:
		case f.kind == kVarints:
			h := (*sliceHeader)(unsafe.Add(p, f.offset))
			h.cap = h.len
		case f.kind == kMessage && f.msg != nil:
			f.msg.trimVarints(unsafe.Add(p, f.offset))
		}
	}
}

// unshare gives the field at p (a map or message pointer that a field met
// again is about to merge into) a copy of its value, which may be shared.
func (f *protoStructField) unshare(p unsafe.Pointer) {
	switch {
	case f.kind == kMessagePtr:
		q := (*unsafe.Pointer)(p)
		c := f.elemR2.UnsafeNew()
		f.elemR2.UnsafeSet(c, *q)
		if f.msg != nil {
			f.msg.trimVarints(c)
		}
		*q = c
	case f.mapType != nil: // kStringMap, kMap, or a named map decoding itself
		v := reflect.NewAt(f.typ, p).Elem()
		c := reflect.MakeMapWithSize(f.typ, v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), it.Value())
		}
		v.Set(c)
	case f.slice != nil: // a named slice decoding itself: appending copies
		h := (*sliceHeader)(p)
		h.cap = h.len
	}
}
