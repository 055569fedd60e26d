package share

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// hasher hashes a value's content word by word. A node is a few words and
// strings, hashed on every object shared, so hashing must cost little more
// than reading them: words are mixed with a multiply, strings by
// maphash.String. A collision costs only a comparison or a missed share,
// never a wrong one, so the hash need not resist crafted input.
type hasher struct {
	seed maphash.Seed
	h    uint64
	strs uintptr // string bytes hashed since the Table last zeroed it (not reset)
}

const (
	mul1 = 0x9e3779b97f4a7c15
	mul2 = 0xbf58476d1ce4e5b9
)

func (x *hasher) reset(start uint64) { x.h = start }

// word mixes v into the hash.
func (x *hasher) word(v uint64) {
	hi, lo := bits.Mul64(x.h^v, mul1)
	x.h = hi ^ lo
}

// bytes mixes the n bytes at p into the hash: a few words one by one,
// longer runs (byte slices such as managedFields) through maphash.
func (x *hasher) bytes(p unsafe.Pointer, n uintptr) {
	b := unsafe.Slice((*byte)(p), n)
	if n > 64 {
		x.word(maphash.Bytes(x.seed, b) ^ uint64(n)*mul2)
		return
	}
	for len(b) >= 8 {
		x.word(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	if len(b) > 0 {
		var tail [8]byte
		copy(tail[:], b)
		x.word(binary.LittleEndian.Uint64(tail[:]) ^ uint64(len(b))<<56)
	}
}

// string mixes s, its length included, into the hash.
func (x *hasher) string(s string) {
	x.strs += uintptr(len(s))
	x.word(maphash.String(x.seed, s) ^ uint64(len(s))*mul2)
}

func (x *hasher) sum() uint64 {
	h := x.h
	h ^= h >> 33
	h *= mul2
	h ^= h >> 29
	return h
}
