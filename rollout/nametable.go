package rollout

import "hash/maphash"

// nameTable indexes replicas by name: an open-addressing table of 8-byte slots,
// so that an insert or lookup touches one cache line in the common case (a Go map
// of 100,000 strings costs two or three). The seed is random per process, like a
// Go map's; it changes only speed, never results.
type nameTable struct {
	replicas []Replica
	slots    []nameSlot // length a power of two, at most half full
	mask     uint64
}

type nameSlot struct {
	tag uint32 // high bits of the name's hash
	idx int32  // index into replicas, plus one; 0 marks an empty slot
}

var nameSeed = maphash.MakeSeed()

func newNameTable(replicas []Replica) nameTable {
	size := 8
	for size < 2*len(replicas) {
		size *= 2
	}
	return nameTable{replicas: replicas, slots: make([]nameSlot, size), mask: uint64(size - 1)}
}

// nameHash is the hash insertHashed expects.
func nameHash(name string) uint64 { return maphash.String(nameSeed, name) }

// insertHashed adds replica i, whose name hashes to h (nameHash), and returns
// the index of an earlier replica with the same name, or -1. The hash is an
// argument so that collect can hash a batch of names first, in a tight loop
// whose cache misses overlap.
func (t *nameTable) insertHashed(i int, h uint64) int {
	name := t.replicas[i].Name
	tag := uint32(h >> 32)
	for k := h & t.mask; ; k = (k + 1) & t.mask {
		s := &t.slots[k]
		if s.idx == 0 {
			*s = nameSlot{tag: tag, idx: int32(i) + 1}
			return -1
		}
		if s.tag == tag && t.replicas[s.idx-1].Name == name {
			return int(s.idx - 1)
		}
	}
}

// lookup returns the index of the replica named name, or -1.
func (t *nameTable) lookup(name string) int {
	h := maphash.String(nameSeed, name)
	tag := uint32(h >> 32)
	for k := h & t.mask; ; k = (k + 1) & t.mask {
		s := &t.slots[k]
		if s.idx == 0 {
			return -1
		}
		if s.tag == tag && t.replicas[s.idx-1].Name == name {
			return int(s.idx - 1)
		}
	}
}
