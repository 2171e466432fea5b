// Package canonhash hashes values through a canonical, unambiguous encoding.
//
// Rules:
//   - Every string and byte slice is written with its length first, so ("ab", "c") and
//     ("a", "bc") hash differently, whatever separators the values contain.
//   - Maps are written as a count followed by their entries in key order, so map
//     iteration order never changes a hash.
//   - The digest is SHA-256; [Hasher.Hex] returns a prefix of its lowercase hex form.
//
// The encoding is stable: hashes written into objects (annotations, revision names)
// stay valid across kplan versions. Changing it is a breaking change.
package canonhash

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
)

// Hasher accumulates a canonical encoding. The zero value is not usable: call [New].
type Hasher struct {
	h   hash.Hash
	buf [8]byte
}

// New returns an empty Hasher.
func New() *Hasher { return &Hasher{h: sha256.New()} }

// Uint64 writes v as 8 big-endian bytes.
func (h *Hasher) Uint64(v uint64) *Hasher {
	binary.BigEndian.PutUint64(h.buf[:], v)
	h.h.Write(h.buf[:])
	return h
}

// Bytes writes len(b) then b.
func (h *Hasher) Bytes(b []byte) *Hasher {
	h.Uint64(uint64(len(b)))
	h.h.Write(b)
	return h
}

// String writes len(s) then s.
func (h *Hasher) String(s string) *Hasher {
	h.Uint64(uint64(len(s)))
	_, _ = h.h.Write([]byte(s))
	return h
}

// Strings writes the number of strings, then each string.
func (h *Hasher) Strings(ss ...string) *Hasher {
	h.Uint64(uint64(len(ss)))
	for _, s := range ss {
		h.String(s)
	}
	return h
}

// StringMap writes the number of entries, then each key and value in key order.
func (h *Hasher) StringMap(m map[string]string) *Hasher {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h.Uint64(uint64(len(keys)))
	for _, k := range keys {
		h.String(k).String(m[k])
	}
	return h
}

// Sum returns the SHA-256 digest of everything written so far.
func (h *Hasher) Sum() [sha256.Size]byte {
	var out [sha256.Size]byte
	h.h.Sum(out[:0])
	return out
}

// Hex returns the first n lowercase hex digits of the digest (n is clamped to 1..64).
func (h *Hasher) Hex(n int) string {
	sum := h.Sum()
	s := hex.EncodeToString(sum[:])
	return s[:min(max(n, 1), len(s))]
}

// Short returns the first 8 hex digits of the hash of the given strings: a compact
// content hash for names and annotations.
func Short(parts ...string) string { return New().Strings(parts...).Hex(8) }
