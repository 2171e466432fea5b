package rdma

import (
	"cmp"
	"slices"
)

// NICs beside free GPUs. A pod that asks for NICs without GPUs can take its units
// anywhere, but a joint pod needs a NIC on each of its GPUs' PCIe roots: when NIC-only
// pods use up the NICs of a root whose GPUs are still free, those GPUs are stranded for
// joint pods. A NIC-only request therefore takes its units first from roots with no free
// GPU, then from roots with free GPUs while each keeps a free unit, and only then the
// last units of such roots.

// freeUnits is how many NIC units of pf another pod could still take: its free VFs (a PF
// with VFs), or the PF itself when it is free whole (a PF without VFs); none when it is
// unhealthy, held whole or exclusively, or on a root held exclusively. Labels do not
// matter: a joint pod may select any of them.
func freeUnits(pf *pfInfo, u *Used) int {
	if !pf.healthy || has(u.pfs, pf.bdf) || has(u.exPF, pf.bdf) || (pf.root != "" && has(u.exRt, pf.root)) {
		return 0
	}
	if len(pf.vfs) == 0 {
		return 1
	}
	n := 0
	for i := range pf.vfs {
		if !has(u.vfs, pf.vfs[i].bdf) {
			n++
		}
	}
	return n
}

// freeGPURoots counts the free healthy GPUs per known PCIe root; roots without one are
// absent. Nil when there are none.
func freeGPURoots(inv *Inventory, u *Used) map[string]int {
	var out map[string]int
	for i := range inv.gpus {
		g := &inv.gpus[i]
		if g.root == "" || !g.healthy || has(u.gpus, g.minor) {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[g.root]++
	}
	return out
}

// keeper follows, while a NIC-only request takes units, the free units left on every
// PCIe root with a free GPU.
type keeper struct {
	p      *planner
	gpus   map[string]int // root -> free GPUs
	pfFree []int          // per inventory PF: freeUnits, less what was taken
	free   map[string]int // root with a free GPU -> sum of pfFree over its PFs
}

// newKeeper returns nil when the request asks for GPUs or no root has a free GPU: then
// there is nothing to keep.
func (p *planner) newKeeper() *keeper {
	if p.req.joint() {
		return nil
	}
	gpus := freeGPURoots(p.inv, p.used)
	if gpus == nil {
		return nil
	}
	k := &keeper{p: p, gpus: gpus, pfFree: make([]int, len(p.inv.pfs)), free: map[string]int{}}
	for i := range p.inv.pfs {
		pf := &p.inv.pfs[i]
		if gpus[pf.root] == 0 {
			continue
		}
		k.pfFree[i] = freeUnits(pf, p.used)
		k.free[pf.root] += k.pfFree[i]
	}
	return k
}

// guards reports whether candidate ci sits on a root with free GPUs and free units.
func (k *keeper) guards(ci int32) bool {
	return k.free[k.p.inv.pfs[k.p.cands[ci].pf].root] > 0
}

// spend records one unit taken from candidate ci: one VF, or, for a whole PF or an
// exclusive request, everything the PF (or, PCIe-level, its root) had left.
func (k *keeper) spend(ci int32) {
	pi := k.p.cands[ci].pf
	root := k.p.inv.pfs[pi].root
	if k.gpus[root] == 0 {
		return
	}
	switch {
	case k.p.req.Exclusive == ExclusivePCIe:
		for i := range k.p.inv.pfs {
			if k.p.inv.pfs[i].root == root {
				k.pfFree[i] = 0
			}
		}
		k.free[root] = 0
		return
	case k.p.kind == WholePF || k.p.req.Exclusive == ExclusiveDevice:
		k.free[root] -= k.pfFree[pi]
		k.pfFree[pi] = 0
	case k.pfFree[pi] > 0:
		k.pfFree[pi]--
		k.free[root]--
	}
}

// keeps reports whether one more unit of candidate ci leaves its root a free unit.
func (k *keeper) keeps(ci int32) bool {
	pi := k.p.cands[ci].pf
	root := k.p.inv.pfs[pi].root
	switch {
	case k.free[root] == 0:
		return true // no free GPU there, or nothing left to keep
	case k.p.req.Exclusive == ExclusivePCIe:
		return false
	case k.p.kind == WholePF || k.p.req.Exclusive == ExclusiveDevice:
		return k.free[root]-k.pfFree[pi] > 0
	}
	return k.free[root] > 1
}

// fillKeeping takes units from the candidates in order, each as far as it goes while
// its root keeps a free unit for its free GPUs.
func (t *taker) fillKeeping(order []int32, need int) {
	for _, ci := range order {
		for !t.done(need) && t.left(ci) > 0 && t.keep.keeps(ci) {
			t.take(ci)
		}
	}
}

// fillNICOnly takes the units of a NIC-only request from the candidates of order:
// first those on roots without free GPUs, then those on roots with free GPUs while
// each root keeps a free unit (roots with fewer free GPUs first), then the rest.
func (t *taker) fillNICOnly(order []int32, need int) {
	k := t.p.newKeeper()
	if k == nil {
		t.fill(order, need)
		return
	}
	t.keep = k
	for _, u := range t.units { // designated VFs
		k.spend(u.c)
	}
	var free, guarded []int32
	for _, ci := range order {
		if k.guards(ci) {
			guarded = append(guarded, ci)
		} else {
			free = append(free, ci)
		}
	}
	slices.SortStableFunc(guarded, func(a, b int32) int {
		return cmp.Compare(k.gpus[t.p.inv.pfs[t.p.cands[a].pf].root], k.gpus[t.p.inv.pfs[t.p.cands[b].pf].root])
	})
	t.fill(free, need)
	t.fillKeeping(guarded, need)
	t.fill(guarded, need)
}

// gpuRootCost says how much a costs the free GPUs: stranded is the number of free GPUs
// it leaves without a free NIC unit on their PCIe root where one is free now, near the
// number of free GPUs on the roots it takes units from.
func gpuRootCost(inv *Inventory, used *Used, a Allocation) (stranded, near int) {
	gpus := freeGPURoots(inv, used)
	if gpus == nil || len(a.NICs) == 0 {
		return 0, 0
	}
	before, after := map[string]int{}, map[string]int{}
	for i := range inv.pfs {
		pf := &inv.pfs[i]
		if gpus[pf.root] == 0 {
			continue
		}
		f := freeUnits(pf, used)
		before[pf.root] += f
		if slices.Contains(a.ExclusiveRoots, pf.root) {
			continue
		}
		k := slices.IndexFunc(a.NICs, func(n NICAllocation) bool { return n.BDF == pf.bdf })
		switch {
		case k < 0:
			after[pf.root] += f
		case a.NICs[k].Whole || slices.Contains(a.ExclusivePFs, pf.bdf):
		default:
			after[pf.root] += max(0, f-len(a.NICs[k].VFs))
		}
	}
	for root, g := range gpus {
		if after[root] < before[root] {
			near += g
			if after[root] == 0 {
				stranded += g
			}
		}
	}
	return stranded, near
}
