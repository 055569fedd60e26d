package share

import (
	"bytes"
	"reflect"
	"sync"
	"unsafe"
)

// A value's content is compared word for word, except strings, which are
// compared by their bytes: two values are equal when every scalar, every
// string and every map, slice, pointer, interface, func and channel word in
// them is. Maps, slices and pointers are compared by identity, which is
// why they are shared first: once shared, equal ones are the same one.
// Floats compare by their bits, so a shared value is the same value, not
// one that == would call equal.
//
// The layout of a type is compiled once: the byte ranges of its words
// (padding left out, neighbouring words merged), the offsets of its
// strings, and the nodes (maps, slices, pointers) reached through exported
// fields, which are the ones shared. Nodes behind unexported fields
// (the *inf.Dec of a resource.Quantity, the *time.Location of a time.Time)
// belong to their package and are only compared by identity.

// content is the compiled layout of a type.
type content struct {
	size    uintptr
	ranges  []span      // words compared as bytes
	strings []uintptr   // offsets of strings
	nodes   []nodeField // exported maps, slices and pointers
	dense   bool        // one range covers the whole value: no padding, no strings
}

type span struct{ offset, size uintptr }

type nodeField struct {
	offset uintptr
	plan   *nodePlan
}

// nodePlan is how to hash and compare what a map, slice or pointer holds.
type nodePlan struct {
	kind     reflect.Kind
	elem     *content // pointer and slice element
	elemSize uintptr
	typ      reflect.Type  // map type
	key, val *content      // map key and value
	entry    uintptr       // what a map takes per entry: its slot, twice (a map's table is up to half empty), and a word
	strMap   bool          // underlying type map[string]string
	id       int           // index of its counts in a Table's stats
	quantity *QuantityPlan // where it may hold a Quantity in place (nil: nowhere)
}

var (
	compileMu sync.Mutex
	contents  sync.Map // reflect.Type → *content, read without the lock
	// With compileMu held: the node plans, and the layouts compiled but not
	// yet in contents. A type that leads back to itself has a node plan
	// whose element is set only after the layouts below it are compiled,
	// so nothing is published before the whole compilation is done.
	nodePlans = map[reflect.Type]*nodePlan{}
	compiled  = map[reflect.Type]*content{}
)

// contentOf returns the compiled layout of typ.
func contentOf(typ reflect.Type) *content {
	if c, ok := contents.Load(typ); ok {
		return c.(*content)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	c := compileContent(typ)
	for t, tc := range compiled {
		contents.Store(t, tc)
	}
	clear(compiled)
	return c
}

// compileContent compiles typ's layout, with compileMu held. A type that
// leads back to itself (through a pointer, slice or map) gets its node plan
// before its element is compiled, so the recursion ends.
func compileContent(typ reflect.Type) *content {
	if c, ok := contents.Load(typ); ok {
		return c.(*content)
	}
	if c, ok := compiled[typ]; ok {
		return c
	}
	c := &content{size: typ.Size()}
	c.layout(typ, 0, true)
	c.dense = len(c.strings) == 0 && len(c.ranges) == 1 && c.ranges[0] == span{0, c.size}
	compiled[typ] = c
	return c
}

func (c *content) layout(typ reflect.Type, offset uintptr, exported bool) {
	switch typ.Kind() {
	case reflect.String:
		c.strings = append(c.strings, offset)
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			c.layout(f.Type, offset+f.Offset, exported && (f.IsExported() || f.Anonymous))
		}
	case reflect.Array:
		for i := range typ.Len() {
			c.layout(typ.Elem(), offset+uintptr(i)*typ.Elem().Size(), exported)
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		c.word(offset, typ.Size())
		if exported {
			if np := nodePlanOf(typ); np != nil {
				c.nodes = append(c.nodes, nodeField{offset, np})
			}
		}
	default: // scalars, interfaces, funcs, channels, unsafe pointers
		c.word(offset, typ.Size())
	}
}

// word adds the bytes [offset, offset+size), merged with the previous
// range when they touch.
func (c *content) word(offset, size uintptr) {
	if size == 0 {
		return
	}
	if n := len(c.ranges); n > 0 && c.ranges[n-1].offset+c.ranges[n-1].size == offset {
		c.ranges[n-1].size += size
		return
	}
	c.ranges = append(c.ranges, span{offset, size})
}

// nodePlanOf returns the plan of a map, slice or pointer type, nil for one
// that is not shared: pointers and slices of zero-size values, and maps
// whose keys are not plainKey.
func nodePlanOf(typ reflect.Type) *nodePlan {
	if np, ok := nodePlans[typ]; ok {
		return np
	}
	np := &nodePlan{kind: typ.Kind(), typ: typ, id: len(nodePlans), quantity: QuantityPlanOf(typ)}
	nodePlans[typ] = np
	switch typ.Kind() {
	case reflect.Map:
		if !plainKey(typ.Key().Kind()) || holdsReferences(typ.Elem()) {
			nodePlans[typ] = nil
			return nil
		}
		np.strMap = typ.ConvertibleTo(reflect.TypeFor[map[string]string]())
		np.key, np.val = compileContent(typ.Key()), compileContent(typ.Elem())
		np.entry = 2*(typ.Key().Size()+typ.Elem().Size()) + unsafe.Sizeof(uintptr(0))
	default:
		if typ.Elem().Size() == 0 {
			nodePlans[typ] = nil
			return nil
		}
		np.elem, np.elemSize = compileContent(typ.Elem()), typ.Elem().Size()
	}
	return np
}

// holdsReferences reports whether values of typ hold exported maps,
// slices or pointers, or interfaces: a map's entries are not shared, so
// such a map (a Secret's map[string][]byte) is equal to another only if
// they hold the very same references, which two decodes never do, and
// remembered, it would keep what they point to alive uncounted.
func holdsReferences(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	case reflect.Struct:
		for i := range typ.NumField() {
			if f := typ.Field(i); (f.IsExported() || f.Anonymous) && holdsReferences(f.Type) {
				return true
			}
		}
	case reflect.Array:
		return typ.Len() > 0 && holdsReferences(typ.Elem())
	}
	return false
}

// plainKey reports whether map keys of kind k are equal under == exactly
// when their contents are: true for strings, integers and booleans; false
// for floats (0 == -0) and for interfaces, structs and arrays that may hold
// them. Maps with other keys are compared by identity only.
func plainKey(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// hash writes the content of the value at p.
func (c *content) hash(h *hasher, p unsafe.Pointer) {
	for _, r := range c.ranges {
		h.bytes(unsafe.Add(p, r.offset), r.size)
	}
	for _, off := range c.strings {
		h.string(*(*string)(unsafe.Add(p, off)))
	}
}

// equal reports whether the values at a and b have the same content.
func (c *content) equal(a, b unsafe.Pointer) bool {
	if a == b {
		return true
	}
	for _, r := range c.ranges {
		if !bytes.Equal(unsafe.Slice((*byte)(unsafe.Add(a, r.offset)), r.size),
			unsafe.Slice((*byte)(unsafe.Add(b, r.offset)), r.size)) {
			return false
		}
	}
	for _, off := range c.strings {
		if *(*string)(unsafe.Add(a, off)) != *(*string)(unsafe.Add(b, off)) {
			return false
		}
	}
	return true
}

// equal reports whether nodes a and b, of this plan, hold equal contents.
func (np *nodePlan) equal(t *Table, a, b node) bool {
	switch np.kind {
	case reflect.Pointer:
		return np.elem.equal(a.ptr, b.ptr)
	case reflect.Slice:
		if a.len != b.len {
			return false
		}
		if np.elem.dense {
			n := uintptr(a.len) * np.elemSize
			return bytes.Equal(unsafe.Slice((*byte)(a.ptr), n), unsafe.Slice((*byte)(b.ptr), n))
		}
		for i := range a.len {
			off := uintptr(i) * np.elemSize
			if !np.elem.equal(unsafe.Add(a.ptr, off), unsafe.Add(b.ptr, off)) {
				return false
			}
		}
		return true
	case reflect.Map:
		return np.mapEqual(t, a.ptr, b.ptr)
	}
	return false
}
