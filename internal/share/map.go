package share

import (
	"reflect"
	"unsafe"
)

// Maps are hashed by the sum of their entries' hashes, so that iteration
// order does not matter, and compared entry by entry. Labels, annotations
// and selectors (map[string]string) take a direct path; other maps, such
// as a container's resource lists, go through reflect.

// asStrMap returns the map[string]string that the map pointer p is.
func asStrMap(p unsafe.Pointer) map[string]string {
	return *(*map[string]string)(unsafe.Pointer(&p))
}

// asValue returns the map pointer p as a reflect.Value of the plan's type,
// held in the scratch variable v of that type (so that p does not escape).
func asValue(v reflect.Value, p unsafe.Pointer) reflect.Value {
	*(*unsafe.Pointer)(v.Addr().UnsafePointer()) = p
	return v
}

func (np *nodePlan) mapLen(t *Table, p unsafe.Pointer) int {
	if np.strMap {
		return len(asStrMap(p))
	}
	return asValue(t.scratchFor(np).ma, p).Len()
}

// mapSum is the sum of the hashes of the entries of map p.
func (np *nodePlan) mapSum(t *Table, p unsafe.Pointer) uint64 {
	h := &t.entry
	var sum uint64
	if np.strMap {
		for k, v := range asStrMap(p) {
			h.reset(0)
			h.string(k)
			h.string(v)
			sum += h.sum()
		}
		return sum
	}
	s := t.scratchFor(np)
	var it reflect.MapIter
	for it.Reset(asValue(s.ma, p)); it.Next(); {
		s.k.SetIterKey(&it)
		s.v.SetIterValue(&it)
		h.reset(0)
		np.key.hash(h, s.k.Addr().UnsafePointer())
		np.val.hash(h, s.v.Addr().UnsafePointer())
		sum += h.sum()
	}
	return sum
}

// mapEqual reports whether maps a and b hold the same entries.
func (np *nodePlan) mapEqual(t *Table, a, b unsafe.Pointer) bool {
	if a == b {
		return true
	}
	if np.strMap {
		ma, mb := asStrMap(a), asStrMap(b)
		if len(ma) != len(mb) {
			return false
		}
		for k, va := range ma {
			if vb, ok := mb[k]; !ok || va != vb {
				return false
			}
		}
		return true
	}
	s := t.scratchFor(np)
	ma, mb := asValue(s.ma, a), asValue(s.mb, b)
	n := ma.Len()
	if n != mb.Len() {
		return false
	}
	if n > linearMapEntries {
		// A large map: each entry of a is looked up in b, so that the
		// comparison stays linear (the search below is quadratic).
		var it reflect.MapIter
		for it.Reset(ma); it.Next(); {
			s.k.SetIterKey(&it)
			s.v.SetIterValue(&it)
			vb := mb.MapIndex(s.k)
			if !vb.IsValid() {
				return false
			}
			c := reflect.New(vb.Type()).Elem()
			c.Set(vb)
			if !np.val.equal(s.v.Addr().UnsafePointer(), c.Addr().UnsafePointer()) {
				return false
			}
		}
		return true
	}
	// Both maps are copied out, one pass each, and each entry of a is
	// looked for among b's: these maps (resource lists) hold a few entries,
	// and reflect's MapIndex would allocate a copy of each value.
	ka, va := s.entries(&s.a, ma, n)
	kb, vb := s.entries(&s.b, mb, n)
	kSize, vSize := np.typ.Key().Size(), np.typ.Elem().Size()
next:
	for i := range n {
		ki, vi := unsafe.Add(ka, uintptr(i)*kSize), unsafe.Add(va, uintptr(i)*vSize)
		for j := range n {
			if np.key.equal(ki, unsafe.Add(kb, uintptr(j)*kSize)) {
				if !np.val.equal(vi, unsafe.Add(vb, uintptr(j)*vSize)) {
					return false
				}
				continue next
			}
		}
		return false
	}
	return true
}

// linearMapEntries is the most entries mapEqual compares by searching.
const linearMapEntries = 16

// mapScratch holds variables of a map type (ma, mb), of its key and value
// type (k, v), and two arrays of keys and values (a, b), to look at maps
// and copy entries into without allocating.
type mapScratch struct {
	ma, mb, k, v reflect.Value
	a, b         entries
}

// entries holds the keys and values of a map, copied out.
type entries struct{ keys, vals reflect.Value }

// entries copies the n entries of map m into e and returns where its keys
// and values start.
func (s *mapScratch) entries(e *entries, m reflect.Value, n int) (keys, vals unsafe.Pointer) {
	if !e.keys.IsValid() || e.keys.Len() < n {
		e.keys = reflect.MakeSlice(reflect.SliceOf(m.Type().Key()), n, n)
		e.vals = reflect.MakeSlice(reflect.SliceOf(m.Type().Elem()), n, n)
	}
	var it reflect.MapIter
	i := 0
	for it.Reset(m); it.Next() && i < n; i++ {
		e.keys.Index(i).SetIterKey(&it)
		e.vals.Index(i).SetIterValue(&it)
	}
	return e.keys.UnsafePointer(), e.vals.UnsafePointer()
}

// scratchFor returns the Table's scratch values for maps of plan np.
func (t *Table) scratchFor(np *nodePlan) *mapScratch {
	if s, ok := t.scratch[np]; ok {
		return s
	}
	s := &mapScratch{
		ma: reflect.New(np.typ).Elem(), mb: reflect.New(np.typ).Elem(),
		k: reflect.New(np.typ.Key()).Elem(), v: reflect.New(np.typ.Elem()).Elem(),
	}
	if t.scratch == nil {
		t.scratch = map[*nodePlan]*mapScratch{}
	}
	t.scratch[np] = s
	return s
}
