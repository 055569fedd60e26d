package apisim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func v(key string, rv uint64, deleted bool) *version {
	return &version{key: key, rv: rv, deleted: deleted}
}

func rvs(c chain) []uint64 {
	var out []uint64
	for _, x := range c {
		out = append(out, x.rv)
	}
	return out
}

func TestChainAt(t *testing.T) {
	c := chain{v("a", 2, false), v("a", 5, false), v("a", 7, true), v("a", 9, false)}
	for rv, want := range map[uint64]uint64{1: 0, 2: 2, 4: 2, 5: 5, 6: 5, 7: 0, 8: 0, 9: 9, 100: 9} {
		got := c.at(rv)
		if want == 0 {
			assert.Nil(t, got, "at %d", rv)
			continue
		}
		assert.Equal(t, want, got.rv, "at %d", rv)
	}
	assert.Equal(t, uint64(9), c.latest().rv)
	assert.Nil(t, chain{v("a", 3, true)}.latest())
}

func TestChainPruned(t *testing.T) {
	c := chain{v("a", 2, false), v("a", 5, false), v("a", 7, true), v("a", 9, false)}
	assert.Equal(t, []uint64{2, 5, 7, 9}, rvs(c.pruned(1)))
	assert.Equal(t, []uint64{5, 7, 9}, rvs(c.pruned(6)), "keeps what a read at 6 sees")
	assert.Equal(t, []uint64{9}, rvs(c.pruned(8)), "a tombstone visible at the cut goes")
	assert.Equal(t, []uint64{9}, rvs(c.pruned(20)))
}

func TestObjectStoreKeysAndScan(t *testing.T) {
	s := newObjectStore()
	for i, k := range []string{"b/2", "a/1", "b/1", "c/9", "a/0"} {
		s.put(v(k, uint64(i+1), false), 0)
	}
	assert.Equal(t, []string{"a/0", "a/1", "b/1", "b/2", "c/9"}, s.keys())
	s.put(v("b/1", 6, true), 0)
	s.put(v("a/5", 7, false), 0)

	scan := func(prefix, from string, rv uint64) []string {
		var out []string
		s.scan(prefix, from, rv, func(x *version) bool {
			out = append(out, x.key)
			return true
		})
		return out
	}
	assert.Equal(t, []string{"a/0", "a/1", "a/5", "b/2", "c/9"}, scan("", "", 7))
	assert.Equal(t, []string{"a/0", "a/1", "b/1", "b/2", "c/9"}, scan("", "", 5), "the state at 5")
	assert.Equal(t, []string{"b/2"}, scan("b/", "", 7))
	assert.Equal(t, []string{"b/2", "c/9"}, scan("", "b/1\x00", 7))

	s.prune("b/1", 6)
	assert.Equal(t, []string{"a/0", "a/1", "a/5", "b/2", "c/9"}, s.keys(), "a key deleted before the cut is gone")
	assert.Equal(t, 5, s.len())
	s.pruneAll(7)
	assert.Equal(t, 5, len(s.chains))
}

func TestHistory(t *testing.T) {
	h := newHistory(3)
	assert.Nil(t, h.oldest())
	for rv := uint64(1); rv <= 3; rv++ {
		assert.Nil(t, h.push(&event{rv: rv}))
	}
	gone := h.push(&event{rv: 4})
	assert.Equal(t, uint64(1), gone.rv)
	assert.Equal(t, uint64(2), h.oldest().rv)
	var got []uint64
	for _, e := range h.since(2) {
		got = append(got, e.rv)
	}
	assert.Equal(t, []uint64{3, 4}, got)
	assert.Empty(t, h.since(4))
	h.clear()
	assert.Nil(t, h.oldest())
	assert.Empty(t, h.since(0))
}

func TestObjectStoreKeyRecreatedAfterPruning(t *testing.T) {
	s := newObjectStore()
	s.put(v("a/1", 1, false), 0)
	s.put(v("a/2", 2, false), 0)
	assert.Equal(t, []string{"a/1", "a/2"}, s.keys())
	s.put(v("a/1", 3, true), 0)
	s.prune("a/1", 3) // the tombstone is older than the window: the key goes
	s.put(v("a/1", 4, false), 0)
	assert.Equal(t, []string{"a/1", "a/2"}, s.keys(), "once, though it left and came back")
	var n int
	s.scan("", "", 4, func(*version) bool { n++; return true })
	assert.Equal(t, 2, n)

	s.put(v("b/1", 5, false), 0)
	s.put(v("b/1", 6, true), 0)
	s.prune("b/1", 6)
	s.put(v("b/1", 7, false), 0) // gone and back before any keys() call
	assert.Equal(t, []string{"a/1", "a/2", "b/1"}, s.keys())
}
