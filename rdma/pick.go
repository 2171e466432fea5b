package rdma

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// taker hands out units from candidates while honouring OneVFPerPF, rails and the
// designated VFs already taken.
type taker struct {
	p      *planner
	units  []unit
	taken  map[int32]int // units taken per candidate beyond designated
	cursor map[int32]int // next index into cand.free
	rails  map[string]bool
}

func (p *planner) newTaker() *taker {
	t := &taker{p: p, taken: map[int32]int{}, cursor: map[int32]int{}, rails: map[string]bool{}}
	t.units = append(t.units, p.desig...)
	if p.req.RailLabel != "" {
		for _, d := range p.desig {
			t.rails[p.cands[d.c].rail] = true
		}
	}
	return t
}

// left is how many more units candidate ci can give now.
func (t *taker) left(ci int32) int {
	c := &t.p.cands[ci]
	n := t.p.avail(c) - t.taken[ci]
	if n > 0 && t.p.req.RailLabel != "" && t.rails[c.rail] {
		return 0
	}
	return n
}

// take takes the next unit of candidate ci (lowest free VF by BDF that is not
// designated); the caller checked left(ci) > 0.
func (t *taker) take(ci int32) {
	c := &t.p.cands[ci]
	t.taken[ci]++
	if t.p.req.RailLabel != "" {
		t.rails[c.rail] = true
	}
	if t.p.kind == WholePF {
		t.units = append(t.units, unit{ci, -1})
		return
	}
	for k := t.cursor[ci]; k < len(c.free); k++ {
		vf := c.free[k]
		if t.p.isDesignated(ci, vf) {
			continue
		}
		t.cursor[ci] = k + 1
		t.units = append(t.units, unit{ci, vf})
		return
	}
}

func (p *planner) isDesignated(ci, vf int32) bool {
	if p.cands[ci].nDesig == 0 {
		return false
	}
	return slices.Contains(p.desig, unit{ci, vf})
}

// done reports whether need units are taken (need < 0: All, never done).
func (t *taker) done(need int) bool { return need >= 0 && len(t.units) >= need }

// fill takes units from cands in the given order, each candidate as far as it goes.
func (t *taker) fill(order []int32, need int) {
	for _, ci := range order {
		for !t.done(need) && t.left(ci) > 0 {
			t.take(ci)
		}
	}
}

// roundRobin takes one unit per root per turn, rotating over each root's candidates.
// A designated VF counts as its root's unit for one turn, so a root that already has
// one does not take a unit another root needs.
func (t *taker) roundRobin(byRoot [][]int32, need int) {
	next := make([]int, len(byRoot))
	credit := make([]int, len(byRoot))
	for _, d := range t.p.desig {
		for r, cs := range byRoot {
			if slices.Contains(cs, d.c) {
				credit[r]++
			}
		}
	}
	for progress := true; progress && !t.done(need); {
		progress = false
		for r, cs := range byRoot {
			if t.done(need) {
				break
			}
			if credit[r] > 0 {
				credit[r]--
				progress = true
				continue
			}
			for k := range cs {
				ci := cs[(next[r]+k)%len(cs)]
				if t.left(ci) > 0 {
					t.take(ci)
					next[r] = (next[r] + k + 1) % len(cs)
					progress = true
					break
				}
			}
		}
	}
}

// pickGroup allocates within one scope group.
func (p *planner) pickGroup(g group) ([]unit, []int32, *Error) {
	need := p.want()
	t := p.newTaker()
	if !p.req.joint() {
		order := slices.Clone(g.cands)
		slices.SortStableFunc(order, func(a, b int32) int {
			ca, cb := &p.cands[a], &p.cands[b]
			if p.kind == VFs && ca.shared != cb.shared {
				if ca.shared {
					return -1
				}
				return 1
			}
			return cmp.Compare(p.inv.pfs[ca.pf].root, p.inv.pfs[cb.pf].root)
		})
		t.fill(order, need)
		if err := p.checkCount(g, t, need); err != nil {
			return nil, nil, err
		}
		return t.units, nil, nil
	}
	gpus, err := p.pickGPUs(g, need)
	if err != nil {
		return nil, nil, err
	}
	roots, numas := p.gpuPlaces(gpus)
	target := need // units to take
	if p.req.NICPerGPURoot && need >= 0 {
		target = max(need, len(roots))
		if p.req.Joint == JointSamePCIe {
			need = target // every GPU root must get one
		}
	}
	var byRoot [][]int32
	var tier1, tier2 []int32
	for _, r := range roots {
		var cs []int32
		for _, ci := range g.cands {
			if p.inv.pfs[p.cands[ci].pf].root == r {
				cs = append(cs, ci)
			}
		}
		byRoot = append(byRoot, cs)
	}
	for _, ci := range g.cands {
		pf := &p.inv.pfs[p.cands[ci].pf]
		switch {
		case pf.root != "" && slices.Contains(roots, pf.root):
		case pf.numa != UnknownNUMANode && slices.Contains(numas, pf.numa):
			tier1 = append(tier1, ci)
		default:
			tier2 = append(tier2, ci)
		}
	}
	byRootCmp := func(a, b int32) int {
		return cmp.Compare(p.inv.pfs[p.cands[a].pf].root, p.inv.pfs[p.cands[b].pf].root)
	}
	slices.SortStableFunc(tier1, byRootCmp)
	slices.SortStableFunc(tier2, byRootCmp)
	t.roundRobin(byRoot, target)
	if p.req.Joint == JointSamePCIe {
		if need >= 0 && len(t.units) < need {
			there := fmt.Sprintf("%d free there", len(t.units))
			if p.idle {
				there = fmt.Sprintf("they have %d", len(t.units))
			}
			return nil, nil, p.fail(ReasonTopologyUnsatisfiable, "need %s on the GPUs' PCIe roots %s (SamePCIe), %s", p.needText(need), strings.Join(roots, ", "), there)
		}
		for i, cs := range byRoot {
			got := false
			for _, u := range t.units {
				got = got || slices.Contains(cs, u.c)
			}
			if !got && (need != 0 || len(p.desig) > 0 || p.req.NICPerGPURoot) {
				if p.idle {
					return nil, nil, p.fail(ReasonTopologyUnsatisfiable, "SamePCIe: no usable NIC%s on GPU PCIe root %s", p.matching(), roots[i])
				}
				return nil, nil, p.fail(ReasonTopologyUnsatisfiable, "SamePCIe: no free NIC%s on GPU PCIe root %s", p.matching(), roots[i])
			}
		}
		for _, u := range t.units {
			if r := p.inv.pfs[p.cands[u.c].pf].root; !slices.Contains(roots, r) {
				return nil, nil, p.fail(ReasonTopologyUnsatisfiable, "SamePCIe: designated VF %s is on PCIe root %q, not a GPU's", p.inv.pfs[p.cands[u.c].pf].vfs[u.vf].bdf, r)
			}
		}
	} else {
		t.fill(tier1, target)
		t.fill(tier2, target)
	}
	if err := p.checkCount(g, t, need); err != nil {
		return nil, nil, err
	}
	return t.units, gpus, nil
}

// checkCount turns a short allocation into the error that says what ran out.
func (p *planner) checkCount(g group, t *taker, need int) *Error {
	if need < 0 {
		if len(t.units) == 0 {
			return p.shortage(g, need)
		}
		return nil
	}
	if len(t.units) < need {
		return p.shortage(g, need)
	}
	return nil
}

// gpuPlaces returns the distinct known PCIe roots (sorted) and NUMA nodes of gpus.
func (p *planner) gpuPlaces(gpus []int32) ([]string, []int32) {
	var roots []string
	var numas []int32
	for _, gi := range gpus {
		g := &p.inv.gpus[gi]
		if g.root != "" && !slices.Contains(roots, g.root) {
			roots = append(roots, g.root)
		}
		if g.numa != UnknownNUMANode && !slices.Contains(numas, g.numa) {
			numas = append(numas, g.numa)
		}
	}
	slices.Sort(roots)
	slices.Sort(numas)
	return roots, numas
}

// result assembles the Allocation from the chosen units and GPUs.
func (p *planner) result(units []unit, gpus []int32) Allocation {
	a := Allocation{Node: p.inv.name, NICs: make([]NICAllocation, 0, len(units))}
	// Candidates are in PF BDF order and VF indices in VF BDF order, so sorting the
	// units by (candidate, VF) puts every PF's VFs together and in order.
	units = slices.Clone(units)
	slices.SortFunc(units, func(x, y unit) int {
		if c := cmp.Compare(x.c, y.c); c != 0 {
			return c
		}
		return cmp.Compare(x.vf, y.vf)
	})
	vfs := make([]VFAllocation, 0, len(units)) // one array for every NIC's VFs
	for k, u := range units {
		pf := &p.inv.pfs[p.cands[u.c].pf]
		if k == 0 || units[k-1].c != u.c {
			a.NICs = append(a.NICs, NICAllocation{Minor: pf.minor, ID: pf.id, BDF: pf.bdf, PCIeRoot: pf.root, NUMANode: pf.numa})
		}
		n := &a.NICs[len(a.NICs)-1]
		if u.vf < 0 {
			n.Whole = true
			continue
		}
		v := &pf.vfs[u.vf]
		vfs = append(vfs, VFAllocation{Minor: v.minor, BDF: v.bdf})
		if n.VFs == nil {
			n.VFs = vfs[len(vfs)-1 : len(vfs) : len(vfs)]
		} else {
			n.VFs = vfs[len(vfs)-len(n.VFs)-1 : len(vfs) : len(vfs)]
		}
	}
	for i := range a.NICs {
		switch p.req.Exclusive {
		case ExclusiveDevice:
			a.ExclusivePFs = append(a.ExclusivePFs, a.NICs[i].BDF)
		case ExclusivePCIe:
			if r := a.NICs[i].PCIeRoot; !slices.Contains(a.ExclusiveRoots, r) {
				a.ExclusiveRoots = append(a.ExclusiveRoots, r)
			}
		}
	}
	slices.Sort(a.ExclusiveRoots)
	for _, gi := range gpus {
		g := &p.inv.gpus[gi]
		a.GPUs = append(a.GPUs, GPUAllocation{Minor: g.minor, ID: g.id, PCIeRoot: g.root, NUMANode: g.numa})
	}
	slices.SortFunc(a.GPUs, func(x, y GPUAllocation) int { return cmp.Compare(x.Minor, y.Minor) })
	return a
}
