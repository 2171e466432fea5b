package rdma

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

func (p *planner) buildGPUs() *Error {
	if len(p.req.WithGPUs) > 0 {
		for _, m := range p.req.WithGPUs {
			i, ok := p.inv.gpuAt[m]
			if !ok {
				return p.fail(ReasonTooFewDevices, "withGPUs: GPU %d is not on the node", m)
			}
			if slices.Contains(p.with, int32(i)) {
				return p.fail(ReasonInvalidRequest, "withGPUs: GPU %d named twice", m)
			}
			p.with = append(p.with, int32(i))
		}
		slices.Sort(p.with)
		return nil
	}
	if p.req.GPUs == 0 {
		return nil
	}
	for i := range p.inv.gpus {
		g := &p.inv.gpus[i]
		if g.healthy && !has(p.used.gpus, g.minor) && p.gpuSel.Matches(labels.Set(g.labels)) {
			p.gpus = append(p.gpus, int32(i))
		}
	}
	return nil
}

// rootStat is what one PCIe root offers a joint request.
type rootStat struct {
	root      string
	gpus      []int32 // free GPUs on it, by minor
	nics      int     // NIC units it can give (rails counted once), designated included
	mandatory bool    // holds a designated VF
}

// pickGPUs chooses the GPUs of a joint request inside group g. need is the number of
// NIC units (-1: all).
func (p *planner) pickGPUs(g group, need int) ([]int32, *Error) {
	required := p.req.Joint == JointSamePCIe
	if len(p.with) > 0 {
		for _, gi := range p.with {
			gp := &p.inv.gpus[gi]
			switch p.req.Scope {
			case ScopePCIe:
				if gp.root != g.key {
					return nil, p.fail(ReasonTopologyUnsatisfiable, "withGPUs: GPU %d is on PCIe root %q, outside %s", gp.minor, gp.root, g.key)
				}
			case ScopeNUMANode:
				if gp.numa == UnknownNUMANode || fmt.Sprintf("%011d", gp.numa) != g.key {
					return nil, p.fail(ReasonTopologyUnsatisfiable, "withGPUs: GPU %d is on NUMA node %d, outside %s", gp.minor, gp.numa, p.groupLabel(g))
				}
			}
			if required && gp.root == "" {
				return nil, p.fail(ReasonTopologyUnsatisfiable, "SamePCIe: GPU %d has no known PCIe root", gp.minor)
			}
		}
		return p.with, nil
	}
	G := p.req.GPUs
	if len(g.gpus) < G {
		return nil, p.fail(ReasonTooFewDevices, "need %s%s, %s", plural(G, "GPU"), p.gpuMatching(), p.hasGPUs(g))
	}
	stats := p.rootStats(g)
	perRoot := p.req.NICPerGPURoot && need >= 0
	wantNICs := need != 0 || len(p.desig) > 0 || perRoot
	if wantNICs {
		N := max(need, len(p.desig), 0)
		// With NICPerGPURoot the NIC count follows the roots, so it does not limit them.
		if S, ok := chooseRoots(stats, G, N, need < 0 || perRoot); ok {
			return assignGPUs(stats, S, G), nil
		}
		if required {
			return nil, p.samePCIeError(stats, G, need)
		}
	}
	// Preferred (or no NICs): roots that have NICs first, then roots with more free
	// GPUs, then unknown roots last; by root, then minor.
	nicAt := map[string]int{}
	gpuAt := map[string]int{}
	for _, s := range stats {
		nicAt[s.root] = s.nics
		gpuAt[s.root] = len(s.gpus)
	}
	order := slices.Clone(g.gpus)
	slices.SortStableFunc(order, func(a, b int32) int {
		ga, gb := &p.inv.gpus[a], &p.inv.gpus[b]
		if (ga.root == "") != (gb.root == "") {
			if ga.root == "" {
				return 1
			}
			return -1
		}
		if x, y := nicAt[ga.root] > 0, nicAt[gb.root] > 0; x != y {
			if x {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(gpuAt[gb.root], gpuAt[ga.root]); c != 0 {
			return c
		}
		if c := cmp.Compare(ga.root, gb.root); c != 0 {
			return c
		}
		return cmp.Compare(ga.minor, gb.minor)
	})
	out := slices.Clone(order[:G])
	slices.Sort(out)
	return out, nil
}

// rootStats lists, per known PCIe root with a free GPU in g, the GPUs and NIC units.
func (p *planner) rootStats(g group) []rootStat {
	var stats []rootStat
	at := map[string]int{}
	for _, gi := range g.gpus {
		r := p.inv.gpus[gi].root
		if r == "" {
			continue
		}
		i, ok := at[r]
		if !ok {
			i = len(stats)
			at[r] = i
			stats = append(stats, rootStat{root: r})
		}
		stats[i].gpus = append(stats[i].gpus, gi)
	}
	usedRails := map[string]bool{}
	for _, d := range p.desig {
		usedRails[p.cands[d.c].rail] = true
		if i, ok := at[p.inv.pfs[p.cands[d.c].pf].root]; ok {
			stats[i].nics++
			stats[i].mandatory = true
		}
	}
	for i := range stats {
		rails := map[string]bool{}
		for _, ci := range g.cands {
			c := &p.cands[ci]
			if p.inv.pfs[c.pf].root != stats[i].root {
				continue
			}
			n := p.avail(c)
			if p.req.RailLabel != "" {
				if n == 0 || usedRails[c.rail] || rails[c.rail] {
					continue
				}
				rails[c.rail] = true
			}
			stats[i].nics += n
		}
	}
	slices.SortFunc(stats, func(a, b rootStat) int { return cmp.Compare(a.root, b.root) })
	return stats
}

// chooseRoots finds the smallest set S of roots (among sets of that size, the first in
// the order of fewest free GPUs, then root) such that every root in S has a free GPU and a NIC unit, |S| <= G (each
// root gets a GPU), |S| <= N unless all (each root gets a NIC), S holds at least G
// GPUs and N NIC units, and S contains every mandatory root. It is exact: a dynamic
// programme over roots, number chosen and GPUs still needed,
//
//	f(i, j, g) = max NIC units from roots i.. choosing exactly j with >= g GPUs
//	f(i, j, g) = max(f(i+1, j, g)               unless root i is mandatory,
//	                 nics_i + f(i+1, j-1, g-gpus_i))
//
// in O(R * k * G) time and space for R roots, k = min(G, N) and G GPUs.
func chooseRoots(stats []rootStat, G, N int, all bool) ([]int, bool) {
	var rs []int
	mandatory := 0
	for i, s := range stats {
		if len(s.gpus) > 0 && s.nics > 0 {
			rs = append(rs, i)
			if s.mandatory {
				mandatory++
			}
		}
	}
	// Best fit: roots with fewer free GPUs come first, so among sets of the same size
	// the one taking partly used roots wins and whole roots stay whole.
	slices.SortStableFunc(rs, func(a, b int) int { return cmp.Compare(len(stats[a].gpus), len(stats[b].gpus)) })
	for _, s := range stats {
		if s.mandatory && (len(s.gpus) == 0 || s.nics == 0) {
			return nil, false
		}
	}
	kmax := min(G, len(rs))
	if !all {
		kmax = min(kmax, N)
	}
	if kmax < 1 || mandatory > kmax {
		return nil, false
	}
	R := len(rs)
	dim := (kmax + 1) * (G + 1)
	f := make([]int32, (R+1)*dim) // int32: NIC counts are far below 2^31
	at := func(i, j, g int) *int32 { return &f[i*dim+j*(G+1)+g] }
	for j := 0; j <= kmax; j++ {
		for g := 0; g <= G; g++ {
			*at(R, j, g) = -1
		}
	}
	*at(R, 0, 0) = 0
	for i := R - 1; i >= 0; i-- {
		s := &stats[rs[i]]
		for j := 0; j <= kmax; j++ {
			for g := 0; g <= G; g++ {
				best := int32(-1)
				if !s.mandatory {
					best = *at(i+1, j, g)
				}
				if j > 0 {
					if sub := *at(i+1, j-1, max(0, g-len(s.gpus))); sub >= 0 {
						best = max(best, int32(s.nics)+sub)
					}
				}
				*at(i, j, g) = best
			}
		}
	}
	for k := max(1, mandatory); k <= kmax; k++ {
		if int(*at(0, k, G)) < N {
			continue
		}
		var S []int
		j, g, n := k, G, N
		for i := 0; i < R && j > 0; i++ {
			s := &stats[rs[i]]
			sub := *at(i+1, j-1, max(0, g-len(s.gpus)))
			if sub >= 0 && s.nics+int(sub) >= n {
				S = append(S, rs[i])
				j, g, n = j-1, max(0, g-len(s.gpus)), max(0, n-s.nics)
			}
		}
		return S, true
	}
	return nil, false
}

// assignGPUs takes one GPU per chosen root, then fills up the roots in the order of S
// (fewest free GPUs first), lowest minors first.
func assignGPUs(stats []rootStat, S []int, G int) []int32 {
	var out []int32
	for _, i := range S {
		out = append(out, stats[i].gpus[0])
	}
	for _, i := range S {
		for _, gi := range stats[i].gpus[1:] {
			if len(out) == G {
				break
			}
			out = append(out, gi)
		}
	}
	slices.Sort(out)
	return out
}

func (p *planner) gpuMatching() string {
	if p.req.GPUSelector == nil {
		return ""
	}
	return " matching {" + p.gpuSel.String() + "}"
}

func (p *planner) samePCIeError(stats []rootStat, G, need int) *Error {
	var parts []string
	for _, s := range stats {
		parts = append(parts, fmt.Sprintf("%s: %s, %s", s.root, plural(len(s.gpus), "GPU"), plural(s.nics, p.unitName(1))))
	}
	what := "all " + p.unitName(2)
	if need >= 0 {
		what = fmt.Sprintf("%d %s", need, p.unitName(need))
	}
	detail := "no GPU has a known PCIe root"
	if len(parts) > 0 {
		detail = strings.Join(parts, "; ")
		if !p.idle {
			detail = "free: " + detail
		}
	}
	return p.fail(ReasonTopologyUnsatisfiable, "need %s%s and %s%s on the same PCIe roots (SamePCIe), no set of roots holds both (%s)", plural(G, "GPU"), p.gpuMatching(), what, p.matching(), detail)
}

// hasGPUs says how many GPUs group g offers the request: free ones, or, on an idle
// node, the ones the node (or the group's PCIe root or NUMA node) has.
func (p *planner) hasGPUs(g group) string {
	if p.idle && p.req.Scope == ScopeDevice {
		return fmt.Sprintf("node has %d", len(g.gpus)) // a PF's group offers the node's GPUs
	}
	return p.has(g, len(g.gpus))
}
