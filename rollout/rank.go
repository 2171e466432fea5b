package rollout

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/kplan-dev/kplan/internal/natural"
)

// The order Plan chooses replicas in: version positions, natural sort keys and the
// packed records each pool is sorted by (DESIGN.md explains why they are packed).

// rank computes each unit's sort key and sorts every pool once.
func (p *planner) rank() {
	nrev := len(p.revs.names)
	// Per version: its fewest available replicas in a pool and, in group mode,
	// its fewest replicas in a column (its whole rows), 0 when a pool has none;
	// in how many pools it runs. Counts are kept only for the versions each pool
	// runs (pool.revs), so memory grows with the input, not with versions times
	// columns.
	minAvail := make([]int, nrev)
	rowMin := make([]int, nrev)
	in := make([]int, nrev)
	count, avail := make([]int, nrev), make([]int, nrev) // one pool's, zero between pools
	for k := range p.pools {
		pl := &p.pools[k]
		for i := range pl.units {
			u := &pl.units[i]
			if count[u.rev] == 0 {
				pl.revs = append(pl.revs, revCount{rev: u.rev})
			}
			count[u.rev]++
			if u.avail {
				avail[u.rev]++
			}
		}
		for j := range pl.revs {
			c := &pl.revs[j]
			v := c.rev
			c.n, c.avail = count[v], avail[v]
			count[v], avail[v] = 0, 0
			if in[v] == 0 || c.avail < minAvail[v] {
				minAvail[v] = c.avail
			}
			if in[v] == 0 || c.n < rowMin[v] {
				rowMin[v] = c.n
			}
			in[v]++
		}
	}
	for v := range nrev {
		if in[v] < len(p.pools) {
			minAvail[v], rowMin[v] = 0, 0
		}
	}
	if p.s.Mode == Group {
		p.rowMin = rowMin
		for v := range nrev {
			if in[v] > 0 {
				p.step.Rows = append(p.step.Rows, RevisionRows{Revision: p.revs.names[v], Rows: rowMin[v], AvailableRows: minAvail[v]})
			}
			if int32(v) != p.target && int32(v) != p.stable {
				p.otherRows += rowMin[v]
			}
		}
	}
	// position of each old version in the cut order.
	order := make([]int, nrev)
	for v := range order {
		order[v] = v
	}
	slices.SortFunc(order, func(a, b int) int {
		switch p.s.VersionOrder {
		case LatestFirst:
			return cmp.Compare(b, a)
		case LessFirst, "":
			if c := cmp.Compare(minAvail[a], minAvail[b]); c != 0 {
				return c
			}
			// Equally available: the newest old version (the second-newest
			// overall in a forward rollout) first, as kube-sharding does.
			return cmp.Compare(b, a)
		}
		return cmp.Compare(a, b)
	})
	pos := make([]uint32, nrev)
	for i, v := range order {
		pos[v] = uint32(i)
	}
	largest := 0
	for k := range p.pools {
		largest = max(largest, len(p.pools[k].units))
	}
	recs := make([]sortRec, 0, largest)
	names := p.names
	for k := range p.pools {
		us := p.pools[k].units
		lcp := max(p.pools[k].lcp, 0)
		for _, c := range p.pools[k].revs {
			avail[c.rev] = c.avail
		}
		recs = recs[:0]
		for i := range us {
			u := &us[i]
			h := uint64(u.health)
			if u.partial && h > 1 {
				h = 1 // a half-updated gang goes with the unready ones
			}
			surplus := uint64(1)
			if avail[u.rev] > minAvail[u.rev] {
				surplus = 0 // cutting it does not lower its version's serving capacity
			}
			fresh := uint64(1)
			if u.stale {
				fresh = 0 // its data must change too: one update does both
			}
			recs = append(recs, sortRec{
				// health (2 bits), surplus (1), version position (28), fresh data
				// (1), priority with its sign bit flipped so that unsigned order is
				// signed order.
				key:  h<<62 | surplus<<61 | uint64(pos[u.rev])<<33 | fresh<<32 | uint64(uint32(u.priority)^1<<31),
				cost: u.cost,
				name: namePrefix(names[u.name0:u.name1], lcp),
				idx:  uint32(i),
			})
		}
		for _, c := range p.pools[k].revs {
			avail[c.rev] = 0
		}
		slices.SortFunc(recs, func(a, b sortRec) int {
			if a.key != b.key {
				return cmp.Compare(a.key, b.key)
			}
			if a.cost != b.cost {
				return cmp.Compare(a.cost, b.cost)
			}
			if a.name != b.name {
				return cmp.Compare(a.name, b.name)
			}
			ua, ub := &us[a.idx], &us[b.idx]
			if c := bytes.Compare(names[ua.name0:ua.name1], names[ub.name0:ub.name1]); c != 0 {
				return c
			}
			return natural.Compare(p.replica(ua).Name, p.replica(ub).Name)
		})
		sorted := make([]unit, len(us))
		for i, rc := range recs {
			sorted[i] = us[rc.idx]
		}
		p.pools[k].units = sorted
	}
}

// sortRec is what sorting a pool moves around: the order's leading fields packed
// in 32 bytes, and the unit's index.
type sortRec struct {
	key  uint64 // health, surplus, version position, priority
	cost int64
	name uint64 // 8 bytes of the natural key after the pool's common prefix
	idx  uint32
}

// commonPrefix is the length of the common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	j := 0
	for j+8 <= n && binary.LittleEndian.Uint64(a[j:]) == binary.LittleEndian.Uint64(b[j:]) {
		j += 8
	}
	for j < n && a[j] == b[j] {
		j++
	}
	return j
}

// namePrefix packs key[from:from+8] big-endian, zero-padded: when two packs
// differ they order the keys as bytes.Compare does.
func namePrefix(key []byte, from int) uint64 {
	if from+8 <= len(key) {
		return binary.BigEndian.Uint64(key[from:])
	}
	var v uint64
	for i := range 8 {
		v <<= 8
		if j := from + i; j < len(key) {
			v |= uint64(key[j])
		}
	}
	return v
}
