package share

import (
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"unsafe"
)

// DefaultSlots is the number of values a Table made by New remembers at
// most: enough for the distinct parts of a few hundred pods, so that the
// pods of one ReplicaSet, listed one after the other, share theirs. A slot
// takes 48 bytes, so a full Table takes 768 KiB. It starts with firstSlots
// and grows as it fills, or when a bucket is full before the Table is: an
// informer of a few objects keeps a small one, and a Table forgets values
// only once it has all its slots, or once what it remembers reaches
// maxBytes.
const DefaultSlots = 1 << 14

const firstSlots = 1 << 10

// What a Table keeps alive is bounded in bytes as well as in values: a
// value's size is its own memory (a pointed-to value's, a slice's array to
// its capacity, a map's entries counted twice, as its table may be half
// empty, and a word for each) and the bytes of the
// strings it holds; the maps, slices and pointed-to values inside it are
// values of their own. A value larger than maxValueBytes (a ConfigMap's data of a
// megabyte) is never remembered, so never shared; once the values
// remembered would pass maxBytes, the Table forgets them all and starts
// afresh. Pods' parts are far smaller: a managedFields entry, the largest,
// is a few kilobytes.
const (
	maxValueBytes = 64 << 10
	maxBytes      = 32 << 20
)

// Table remembers values recently shared. It is not safe for concurrent
// use: a Reflector owns one and shares objects from its own goroutine.
type Table struct {
	n      int    // the most slots
	slots  []slot // in buckets of ways; allocated on first use
	misses int    // values remembered since slots last grew
	bytes  int    // the sizes of the values remembered, summed
	h      hasher
	entry  hasher // for one map entry; entries are summed in any order

	scratch map[*nodePlan]*mapScratch
	stats   []planStats // by nodePlan.id

	// hashMask is ANDed with every hash; tests set it to 0 so that every
	// value collides and only the comparison tells values apart.
	hashMask uint64
}

// ways is the number of slots in a bucket: a value is remembered in one of
// the four slots its hash picks, so that the few dozen parts of a pod
// rarely fill a bucket (which makes a Table grow early or, at its full
// size, push a value out) before the next pod of its ReplicaSet looks for
// them.
const ways = 4

// slot is one remembered value: a node's words as its parent holds them.
type slot struct {
	hash uint64
	plan *nodePlan
	node node
	size int // see maxBytes
}

// node is the words by which a parent holds a map, a pointer (ptr) or a
// slice (ptr, len, cap).
type node struct {
	ptr      unsafe.Pointer
	len, cap int
}

// New returns a Table that remembers up to slots values (rounded up to a
// power of two; DefaultSlots if slots ≤ 0).
func New(slots int) *Table {
	n := ways
	for n < slots {
		n *= 2
	}
	if slots <= 0 {
		n = DefaultSlots
	}
	seed := maphash.MakeSeed()
	t := &Table{n: n, hashMask: ^uint64(0), h: hasher{seed: seed}, entry: hasher{seed: seed}}
	return t
}

// Share replaces the maps, slices and pointed-to values inside obj (a
// pointer to a struct, such as *corev1.Pod) that equal ones the Table
// remembers by the remembered ones, and remembers the others. obj itself
// is not replaced: Share modifies what it points to, everything reachable
// from it, so nothing reachable may be shared with other code (a global a
// transform points to, say), and it must hold no pointer cycle. Values of
// any other kind are left alone.
func Share[T any](t *Table, obj T) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer {
		return
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&obj))
	if p == nil {
		return
	}
	if c := contentOf(typ.Elem()); len(c.nodes) > 0 {
		t.canon(c, p)
	}
}

// canon shares the nodes held in the value of content c at p, deepest
// first, so that by the time a node is hashed its own nodes are shared and
// can be compared by identity. It reports whether one of them is held by
// the Table neither remembered nor shared (not looked up, or too large):
// a node that holds such a node is not looked up either, as it could equal
// no other (it holds a reference none other does) and, remembered, it
// would keep that node alive uncounted.
func (t *Table) canon(c *content, p unsafe.Pointer) (unshared bool) {
	for _, f := range c.nodes {
		at := unsafe.Add(p, f.offset)
		np := f.plan
		var n node
		switch np.kind {
		case reflect.Pointer, reflect.Map:
			n.ptr = *(*unsafe.Pointer)(at)
			if n.ptr == nil {
				continue
			}
		case reflect.Slice:
			n = *(*node)(at)
			if n.len == 0 {
				continue
			}
		}
		var inner bool // a node inside n is unshared
		if np.elem != nil && len(np.elem.nodes) > 0 {
			switch np.kind {
			case reflect.Pointer:
				inner = t.canon(np.elem, n.ptr)
			case reflect.Slice:
				for i := range n.len {
					inner = t.canon(np.elem, unsafe.Add(n.ptr, uintptr(i)*np.elemSize)) || inner
				}
			}
		}
		if inner || np.quantity.In(at) || !t.worthLookingUp(np) {
			unshared = true
			if np.kind == reflect.Slice && n.cap > n.len {
				*(*node)(at) = trim(np, at, n)
			}
			continue
		}
		shared, ok, remembered := t.lookup(np, n)
		switch {
		case ok && shared.ptr == n.ptr:
		case ok && np.kind == reflect.Slice:
			*(*node)(at) = shared
		case ok:
			*(*unsafe.Pointer)(at) = shared.ptr
		default:
			if remembered == nil {
				unshared = true // too large, or no room left
			}
			if np.kind == reflect.Slice && n.cap > n.len {
				// Decoders grow slices by doubling: five conditions
				// sit in an array of eight. Kept, the slice is trimmed.
				*(*node)(at) = trim(np, at, n)
				if remembered != nil {
					// Its size was counted to its capacity.
					spare := int(uintptr(n.cap-n.len) * np.elemSize)
					remembered.node, remembered.size = *(*node)(at), remembered.size-spare
					t.bytes -= spare
				}
			}
		}
	}
	return unshared
}

// Forget empties the Table: what it remembered is no longer shared with
// what comes next, nor kept alive by the Table. A Reflector calls it
// before each list, so that every list starts sharing afresh.
func (t *Table) Forget() {
	t.slots, t.misses, t.bytes = nil, 0, 0
}

// A kind of node that differs in most objects (a pod's containers when
// they mount a volume named after the pod, its conditions, its status)
// costs a hash each time and pushes useful values out of the table. So the
// hits of each node plan are counted over windows of window lookups: after
// a window in which fewer than one in minHitRatio hit, the plan's nodes are
// looked up only once in probe, until a window's probes hit often enough
// again. Their children are shared all the same.
const (
	window      = 1024
	probe       = 16
	minHitRatio = 8
)

type planStats struct {
	seen, hits int
	skipping   bool
}

// worthLookingUp reports whether a node of plan np is to be looked up (and
// remembered), counting it.
func (t *Table) worthLookingUp(np *nodePlan) bool {
	if np.id >= len(t.stats) {
		t.stats = append(t.stats, make([]planStats, np.id+1-len(t.stats))...)
	}
	s := &t.stats[np.id]
	s.seen++
	skipping := s.skipping
	if s.seen%window == 0 {
		looked := window
		if skipping {
			looked /= probe
		}
		s.skipping, s.hits = s.hits*minHitRatio < looked, 0
	}
	return !skipping || s.seen%probe == 0
}

// trim copies the slice n, held at p, into an array of exactly its length.
func trim(np *nodePlan, p unsafe.Pointer, n node) node {
	dst := reflect.MakeSlice(np.typ, n.len, n.len)
	reflect.Copy(dst, reflect.NewAt(np.typ, p).Elem())
	return node{ptr: dst.UnsafePointer(), len: n.len, cap: n.len}
}

// lookup returns the remembered node equal to n, or remembers n and
// returns the slot that does (nil if it is too large to remember, or if
// the table grew and had no room left for it).
func (t *Table) lookup(np *nodePlan, n node) (shared node, ok bool, remembered *slot) {
	if t.slots == nil {
		t.slots = make([]slot, min(firstSlots, t.n))
	}
	h, size := t.hashNode(np, n)
	h &= t.hashMask
	bucket := t.bucket(h)
	for i := range bucket {
		s := &bucket[i]
		if s.hash == h && s.plan == np && np.equal(t, s.node, n) {
			t.stats[np.id].hits++
			return s.node, true, nil
		}
	}
	if size > maxValueBytes {
		return node{}, false, nil
	}
	if t.bytes+size > maxBytes {
		t.Forget()
		t.slots = make([]slot, min(firstSlots, t.n))
		bucket = t.bucket(h)
	}
	victim := free(bucket)
	for victim == nil && len(t.slots) < t.n {
		// A table that may still grow forgets nothing: a bucket that
		// fills before then makes it grow.
		t.grow()
		bucket = t.bucket(h)
		victim = free(bucket)
	}
	if victim == nil {
		// At random, not by the hash: two values that keep coming
		// back to a full bucket would push each other out every time.
		victim = &bucket[rand.IntN(ways)]
	}
	t.bytes += size - victim.size
	*victim = slot{hash: h, plan: np, node: n, size: size}
	if t.misses++; t.misses > len(t.slots) && len(t.slots) < t.n {
		t.grow()
		return node{}, false, t.find(h, np, n)
	}
	return node{}, false, victim
}

// bucket returns the slots where a value of hash h is remembered.
func (t *Table) bucket(h uint64) []slot {
	return t.slots[h&uint64(len(t.slots)-1)&^(ways-1):][:ways]
}

// free returns an empty slot of bucket, nil if it has none.
func free(bucket []slot) *slot {
	for i := range bucket {
		if bucket[i].plan == nil {
			return &bucket[i]
		}
	}
	return nil
}

// grow makes the table four times larger (at most n slots), keeping all it
// remembers: the values in a bucket of the larger table all come from one
// bucket of the smaller.
func (t *Table) grow() {
	old := t.slots
	t.slots, t.misses = make([]slot, min(4*len(old), t.n)), 0
	for _, s := range old {
		if s.plan != nil {
			*free(t.bucket(s.hash)) = s
		}
	}
}

// find returns the slot that remembers node n, nil if none does.
func (t *Table) find(h uint64, np *nodePlan, n node) *slot {
	b := t.bucket(h)
	for i := range b {
		if b[i].plan == np && b[i].node == n {
			return &b[i]
		}
	}
	return nil
}

// hashNode hashes what n holds: the contents of its elements, or of its
// entries in any order. It also returns n's size (see maxBytes).
func (t *Table) hashNode(np *nodePlan, n node) (hash uint64, size int) {
	h := &t.h
	h.reset(uint64(uintptr(unsafe.Pointer(np))))
	h.strs, t.entry.strs = 0, 0
	var own uintptr
	switch np.kind {
	case reflect.Pointer:
		own = np.elemSize
		np.elem.hash(h, n.ptr)
	case reflect.Slice:
		own = uintptr(n.cap) * np.elemSize
		h.word(uint64(n.len))
		if np.elem.dense {
			h.bytes(n.ptr, uintptr(n.len)*np.elemSize)
			break
		}
		for i := range n.len {
			np.elem.hash(h, unsafe.Add(n.ptr, uintptr(i)*np.elemSize))
		}
	case reflect.Map:
		entries := np.mapLen(t, n.ptr)
		own = uintptr(entries) * np.entry
		h.word(uint64(entries))
		h.word(np.mapSum(t, n.ptr))
	}
	return h.sum(), int(own + h.strs + t.entry.strs)
}
