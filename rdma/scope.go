package rdma

import (
	"cmp"
	"fmt"
	"slices"
)

// Scope groups: which candidates and GPUs a requiredTopologyScope allows together.

// nodeGroup is the key of the one group of ScopeNode: the whole node.
const nodeGroup = "node"

// group is a set of candidates and GPUs that a scope allows together.
type group struct {
	key   string
	cands []int32
	gpus  []int32
}

func (p *planner) groups() []group {
	scope := p.req.Scope
	if scope == "" {
		scope = ScopeNode
	}
	if scope == ScopeNode || (scope == ScopeDevice && p.want() == 0) {
		g := group{key: nodeGroup, gpus: p.gpus}
		for i := range p.cands {
			g.cands = append(g.cands, int32(i))
		}
		return []group{g}
	}
	idx := map[string]int{}
	var out []group
	add := func(key string) *group {
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, group{key: key})
		}
		return &out[i]
	}
	for i, c := range p.cands {
		pf := &p.inv.pfs[c.pf]
		switch scope {
		case ScopeDevice:
			g := add(fmt.Sprintf("%020d", pf.bdf.key()))
			g.cands = append(g.cands, int32(i))
			g.gpus = p.gpus
		case ScopePCIe:
			if pf.root != "" {
				g := add(pf.root)
				g.cands = append(g.cands, int32(i))
			}
		case ScopeNUMANode:
			if pf.numa != UnknownNUMANode {
				g := add(fmt.Sprintf("%011d", pf.numa))
				g.cands = append(g.cands, int32(i))
			}
		}
	}
	if scope != ScopeDevice {
		for _, gi := range p.gpus {
			gp := &p.inv.gpus[gi]
			key := gp.root
			if scope == ScopeNUMANode {
				if gp.numa == UnknownNUMANode {
					continue
				}
				key = fmt.Sprintf("%011d", gp.numa)
			}
			if key != "" {
				g := add(key)
				g.gpus = append(g.gpus, gi)
			}
		}
	}
	// Designated VFs must all be inside the group.
	if len(p.desig) > 0 {
		out = slices.DeleteFunc(out, func(g group) bool {
			for _, d := range p.desig {
				if !slices.Contains(g.cands, d.c) {
					return true
				}
			}
			return false
		})
	}
	slices.SortFunc(out, func(a, b group) int { return cmp.Compare(a.key, b.key) })
	return out
}
