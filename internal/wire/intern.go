package wire

import (
	"bytes"
	"encoding"
	"encoding/json"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
)

// Decoded objects repeat the same short strings again and again: the
// namespace, label keys and values, image and node names, condition types
// and statuses, port and env names. A cache of a thousand pods holds a
// thousand copies of each. Interning makes the JSON decoder hand every
// object one shared copy: it looks the string's bytes up in the codec's
// internTable where they lie in the stream, and copies them only when the
// table has no copy to give (readInterned).
//
// Go's unique package does the same, but costs about a quarter more decode
// CPU per pod (its concurrent map and weak pointers) where the table costs
// a few percent, for the same memory saved (BenchmarkJSONRetainedHeap).

// maxInternLen is the longest string interned: long enough for an image
// reference with its digest (about 110 bytes, the same in every pod of a
// ReplicaSet). Longer strings (annotations holding JSON, certificates, ...)
// are rarely repeated and costly to hash.
const maxInternLen = 128

// internSlots is the size of an internTable. A cluster's repeated short
// strings number in the hundreds to low thousands; a string that collides
// with another is still correct, only not shared.
const internSlots = 4096

// internTable remembers short strings in buckets of two slots, the bucket
// chosen by hash. It is a bounded cache, not a set: a string that finds its
// bucket full replaces one of the two, at random. It holds at most
// internSlots strings of at most maxInternLen bytes (under 700 KiB). It is
// safe for concurrent use without locks: a slot is swapped atomically and a
// string never changes. A nil table interns nothing.
type internTable struct {
	seed       maphash.Seed
	slots      [internSlots]atomic.Pointer[string]
	blobs      [blobSlots]atomic.Pointer[[]byte]
	quantities [quantitySlots]atomic.Pointer[parsedQuantity]
}

// Managed fields repeat too: every pod of one ReplicaSet carries the same
// metadata.managedFields[].fieldsV1 written by the same managers, several
// hundred bytes each. The table keeps a few of those byte strings as well,
// up to maxBlobLen bytes each, in blobSlots slots (at most 1 MiB).
const (
	maxBlobLen = 4 << 10
	blobSlots  = 256
)

// internBytes is intern for a byte string that nobody modifies afterwards
// (the raw JSON of a FieldsV1).
func (t *internTable) internBytes(b []byte) []byte {
	kept, remember := t.lookupBytes(b)
	if kept != nil {
		return kept
	}
	// Clipped: objects that share it must not share spare capacity too,
	// into which an append to one object's copy would write the others'.
	b = b[:len(b):len(b)]
	if remember != nil {
		c := b // boxed here: taking &b would move b to the heap on every call
		remember.Store(&c)
	}
	return b
}

// lookupBytes returns the table's copy of the byte string b, or nil and the
// slot that a copy should take (nil too if b is empty, too long to keep or
// the table nil).
func (t *internTable) lookupBytes(b []byte) (kept []byte, remember *atomic.Pointer[[]byte]) {
	if t == nil || len(b) == 0 || len(b) > maxBlobLen {
		return nil, nil
	}
	h := maphash.Bytes(t.seed, b)
	bucket := t.blobs[h%(blobSlots/2)*2:][:2]
	for i := range bucket {
		if p := bucket[i].Load(); p != nil && bytes.Equal(*p, b) {
			return *p, nil
		}
	}
	return nil, victim(bucket)
}

// victim returns the slot of a bucket that a new value takes: an empty
// one, else one at random. Not one that the value's hash picks: two values
// that keep coming back to one full bucket would then push each other out
// every time, where at random they soon both stay.
func victim[T any](bucket []atomic.Pointer[T]) *atomic.Pointer[T] {
	for i := range bucket {
		if bucket[i].Load() == nil {
			return &bucket[i]
		}
	}
	return &bucket[rand.IntN(len(bucket))]
}

func newInternTable() *internTable { return &internTable{seed: maphash.MakeSeed()} }

// intern returns the remembered copy of s when there is one, and otherwise
// remembers s.
func (t *internTable) intern(s string) string {
	if t == nil || len(s) == 0 || len(s) > maxInternLen {
		return s
	}
	p, remember := t.lookup(unsafe.Slice(unsafe.StringData(s), len(s)))
	if p == nil {
		// Boxed here, not by taking &s: a parameter whose address is
		// taken is moved to the heap on every call, hit or miss.
		c := s
		p = &c
		remember.Store(p)
	}
	return *p
}

// lookup returns the table's copy of the string b holds, or nil and the
// slot that a copy should take.
func (t *internTable) lookup(b []byte) (p *string, remember *atomic.Pointer[string]) {
	h := maphash.Bytes(t.seed, b)
	bucket := t.slots[h%(internSlots/2)*2:][:2]
	for i := range bucket {
		if p := bucket[i].Load(); p != nil && *p == string(b) {
			return p, nil
		}
	}
	return nil, victim(bucket)
}

// internFrom is intern for the string b holds: b is copied only when the
// table has no copy to give (b is the read buffer, reused afterwards).
func (t *internTable) internFrom(b []byte) string {
	if t == nil || len(b) == 0 || len(b) > maxInternLen {
		return string(b)
	}
	return *t.internPointer(b)
}

// internPointer is internFrom for 0 < len(b) <= maxInternLen, returning
// the table's pointer to the string.
func (t *internTable) internPointer(b []byte) *string {
	p, remember := t.lookup(b)
	if p == nil {
		s := string(b)
		p = &s
		remember.Store(p)
	}
	return p
}

// internBytesFrom is internBytes for bytes of the read buffer: they are
// copied unless the table has them. The result is never nil.
func (t *internTable) internBytesFrom(b []byte) []byte {
	kept, remember := t.lookupBytes(b)
	if kept != nil {
		return kept
	}
	c := append(make([]byte, 0, len(b)), b...)
	if remember != nil {
		remember.Store(&c)
	}
	return c
}

// stringInterner decodes every string-kind value (string and named string
// types such as corev1.PodPhase or types.UID) through its table, except
// the fields that are different in every object (uniqueField): interning
// those would only push useful strings out of the table. With a nil table
// it copies every string, and is there for what its decoder does with
// null (internDecoder.Decode).
type stringInterner struct {
	jsoniter.DummyExtension
	table *internTable
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// CreateDecoder implements jsoniter.Extension.
func (si *stringInterner) CreateDecoder(typ reflect2.Type) jsoniter.ValDecoder {
	t := typ.Type1()
	if t.Kind() != reflect.String {
		return nil
	}
	// A string type that decodes itself keeps doing so, and json.Number,
	// which is read from a number, has a decoder of its own (valueTypes).
	if p := reflect.PointerTo(t); p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType) || t == jsonNumberType {
		return nil
	}
	return internDecoder{si.table}
}

// UpdateStructDescriptor implements jsoniter.Extension.
func (*stringInterner) UpdateStructDescriptor(sd *jsoniter.StructDescriptor) {
	for _, b := range sd.Fields {
		if b.Field.Type().Kind() == reflect.String && uniqueField(sd.Type.Type1().Name(), b.Field.Name()) {
			b.Decoder = internDecoder{} // a nil table: copy
		}
	}
}

// uniqueField reports whether the field holds a value that is different in
// every object: its name, uid and resourceVersion, a pod's IPs, a
// container's ID.
func uniqueField(structName, fieldName string) bool {
	switch structName + "." + fieldName {
	case "ObjectMeta.Name", "ObjectMeta.UID", "ObjectMeta.ResourceVersion",
		"PodStatus.PodIP", "PodIP.IP", "ContainerStatus.ContainerID":
		return true
	}
	return false
}

type internDecoder struct{ table *internTable }

// Decode leaves the string as it was on null, as encoding/json does: a
// field given twice, the second time null, keeps its first value.
func (d internDecoder) Decode(ptr unsafe.Pointer, it *jsoniter.Iterator) {
	switch it.WhatIsNext() {
	case jsoniter.StringValue:
		*(*string)(ptr) = readStringValue(it, d.table)
	case jsoniter.NilValue:
		it.ReadNil()
	default:
		*(*string)(ptr) = it.ReadString() // reports the error
	}
}

// readInterned reads a JSON string (null reads as "") through table t.
// A nil table copies every string.
func readInterned(it *jsoniter.Iterator, t *internTable) string {
	if it.WhatIsNext() == jsoniter.StringValue {
		return readStringValue(it, t)
	}
	return t.intern(it.ReadString())
}

// readStringValue reads the JSON string at the iterator's position, where
// WhatIsNext has just reported a StringValue, through table t. A string
// the table has is not copied out of the stream at all when it lies whole
// in the read buffer (stringInBuffer): it is looked up by its bytes there.
// Any other string is read (readString), then interned.
func readStringValue(it *jsoniter.Iterator, t *internTable) string {
	if b, ok := stringInBuffer(it); ok {
		return t.internFrom(b)
	}
	if s, ok := readString(it); ok {
		return t.intern(s)
	}
	return t.intern(it.ReadString())
}
