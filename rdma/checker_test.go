package rdma

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// The checker is an independent statement of what a valid allocation is, written
// against the raw Node (not the Inventory's index), used by the property tests and the
// brute-force search.

type spec struct {
	node   Node
	used   *Used
	req    Request
	pfs    map[BDF]*DeviceInfo
	vfPF   map[BDF]BDF               // VF -> PF
	vfLbl  map[BDF]map[string]string // VF -> group labels
	gpus   map[int32]*DeviceInfo
	kind   Kind
	sel    labels.Selector
	vfSel  labels.Selector
	gpuSel labels.Selector
}

func newSpec(n Node, used *Used, req Request) (*spec, error) {
	if used == nil {
		used = new(Used)
	}
	s := &spec{node: n, used: used, req: req, pfs: map[BDF]*DeviceInfo{}, vfPF: map[BDF]BDF{}, vfLbl: map[BDF]map[string]string{}, gpus: map[int32]*DeviceInfo{}}
	withVF, withoutVF := 0, 0
	for i := range n.Devices {
		d := &n.Devices[i]
		switch d.Type {
		case RDMA:
			b := mustBDF(d.Topology.BusID)
			s.pfs[b] = d
			nv := 0
			for _, g := range d.VFGroups {
				for _, v := range g.VFs {
					s.vfPF[mustBDF(v.BusID)] = b
					s.vfLbl[mustBDF(v.BusID)] = g.Labels
					nv++
				}
			}
			if nv > 0 {
				withVF++
			} else {
				withoutVF++
			}
		case GPU:
			s.gpus[*d.Minor] = d
		}
	}
	s.kind = req.Kind
	if s.kind == Auto {
		switch {
		case len(req.DesignatedVFs) > 0 || req.VFSelector != nil:
			s.kind = VFs
		case withVF > 0 && withoutVF > 0:
			return nil, fmt.Errorf("mixed")
		case withVF > 0:
			s.kind = VFs
		default:
			s.kind = WholePF
		}
	}
	s.sel, _ = selector(req.Selector)
	s.vfSel, _ = selector(req.VFSelector)
	s.gpuSel, _ = selector(req.GPUSelector)
	return s, nil
}

func (s *spec) pfBusy(b BDF) bool {
	if has(s.used.pfs, b) || has(s.used.exPF, b) {
		return true
	}
	for v, p := range s.vfPF {
		if p == b && has(s.used.vfs, v) {
			return true
		}
	}
	return false
}

// nicUnit is a PF (vf zero value and whole) or a VF.
type nicUnit struct {
	pf    BDF
	vf    BDF
	whole bool
}

// units lists every unit of the node of the request's kind (valid or not).
func (s *spec) units() []nicUnit {
	var out []nicUnit
	for b := range s.pfs {
		if s.kind == WholePF {
			out = append(out, nicUnit{pf: b, whole: true})
		}
	}
	if s.kind == VFs {
		for v, p := range s.vfPF {
			out = append(out, nicUnit{pf: p, vf: v})
		}
	}
	slices.SortFunc(out, func(a, b nicUnit) int {
		if c := a.pf.Compare(b.pf); c != 0 {
			return c
		}
		return a.vf.Compare(b.vf)
	})
	return out
}

func (s *spec) unitsOf(a Allocation) []nicUnit {
	var out []nicUnit
	for _, n := range a.NICs {
		if n.Whole {
			out = append(out, nicUnit{pf: n.BDF, whole: true})
		}
		for _, v := range n.VFs {
			out = append(out, nicUnit{pf: n.BDF, vf: v.BDF})
		}
	}
	return out
}

func numaOf(d *DeviceInfo) int32  { return d.Topology.NodeID }
func rootOf(d *DeviceInfo) string { return d.Topology.PCIEID }

// check returns why (units, gpus) is not a valid answer to the request, or nil.
func (s *spec) check(units []nicUnit, gpus []int32) error {
	req := s.req
	seen := map[nicUnit]bool{}
	perPF := map[BDF]int{}
	rails := map[string]bool{}
	for _, u := range units {
		if seen[u] {
			return fmt.Errorf("unit %v twice", u)
		}
		seen[u] = true
		d, ok := s.pfs[u.pf]
		if !ok {
			return fmt.Errorf("PF %s does not exist", u.pf)
		}
		if !d.Health {
			return fmt.Errorf("PF %s unhealthy", u.pf)
		}
		if !s.sel.Matches(labels.Set(d.Labels)) {
			return fmt.Errorf("PF %s does not match the selector", u.pf)
		}
		if has(s.used.pfs, u.pf) || has(s.used.exPF, u.pf) || has(s.used.exRt, rootOf(d)) {
			return fmt.Errorf("PF %s is held", u.pf)
		}
		if u.whole {
			if s.kind != WholePF || s.pfBusy(u.pf) {
				return fmt.Errorf("PF %s given whole wrongly", u.pf)
			}
		} else {
			if s.kind != VFs || s.vfPF[u.vf] != u.pf || has(s.used.vfs, u.vf) || !s.vfSel.Matches(labels.Set(s.vfLbl[u.vf])) {
				return fmt.Errorf("VF %s not free or not matching", u.vf)
			}
		}
		perPF[u.pf]++
		if (req.OneVFPerPF || req.RailLabel != "") && perPF[u.pf] > 1 {
			return fmt.Errorf("two units on PF %s", u.pf)
		}
		if req.RailLabel != "" {
			r, ok := d.Labels[req.RailLabel]
			if !ok || rails[r] {
				return fmt.Errorf("rail %q missing or repeated", r)
			}
			rails[r] = true
		}
		switch req.Exclusive {
		case ExclusiveDevice:
			if s.pfBusy(u.pf) {
				return fmt.Errorf("PF %s shared but device-exclusive asked", u.pf)
			}
		case ExclusivePCIe:
			if rootOf(d) == "" {
				return fmt.Errorf("PCIe-exclusive on unknown root")
			}
			for b, o := range s.pfs {
				if rootOf(o) == rootOf(d) && s.pfBusy(b) {
					return fmt.Errorf("root %s shared but PCIe-exclusive asked", rootOf(d))
				}
			}
		}
	}
	for _, v := range req.DesignatedVFs {
		if !seen[nicUnit{pf: s.vfPF[v], vf: v}] {
			return fmt.Errorf("designated VF %s missing", v)
		}
	}
	if req.All {
		if len(units) == 0 {
			return fmt.Errorf("all: nothing")
		}
	} else if lo, hi := s.unitRange(gpus); len(units) < lo || len(units) > hi {
		return fmt.Errorf("%d units, want %d..%d", len(units), lo, hi)
	}
	// GPUs.
	if req.GPUs != len(gpus) {
		return fmt.Errorf("%d GPUs, want %d", len(gpus), req.GPUs)
	}
	for i, m := range gpus {
		g, ok := s.gpus[m]
		if !ok || !g.Health || has(s.used.gpus, m) || slices.Contains(gpus[:i], m) || !s.gpuSel.Matches(labels.Set(g.Labels)) {
			return fmt.Errorf("GPU %d not free", m)
		}
	}
	// Scope: one group holds every NIC (and, except Device, every GPU).
	key := func(root string, numa int32, pf BDF) (string, bool) {
		switch req.Scope {
		case ScopePCIe:
			return root, root != ""
		case ScopeNUMANode:
			return fmt.Sprint(numa), numa != UnknownNUMANode
		case ScopeDevice:
			return pf.String(), true
		}
		return "", true
	}
	var k0 *string
	same := func(k string, ok bool) error {
		if !ok {
			return fmt.Errorf("unknown place in scope %s", req.Scope)
		}
		if k0 == nil {
			k0 = &k
		} else if *k0 != k {
			return fmt.Errorf("scope %s broken: %s vs %s", req.Scope, *k0, k)
		}
		return nil
	}
	for _, u := range units {
		d := s.pfs[u.pf]
		if err := same(key(rootOf(d), numaOf(d), u.pf)); err != nil {
			return err
		}
	}
	if req.Scope != ScopeDevice {
		for _, m := range gpus {
			g := s.gpus[m]
			if err := same(key(rootOf(g), numaOf(g), BDF{})); err != nil {
				return err
			}
		}
	}
	if req.joint() && req.Joint == JointSamePCIe && (len(units) > 0 || req.NICPerGPURoot && !req.All) {
		gr, nr := map[string]bool{}, map[string]bool{}
		for _, m := range gpus {
			if rootOf(s.gpus[m]) == "" {
				return fmt.Errorf("SamePCIe with a GPU of unknown root")
			}
			gr[rootOf(s.gpus[m])] = true
		}
		for _, u := range units {
			nr[rootOf(s.pfs[u.pf])] = true
		}
		if fmt.Sprint(gr) != fmt.Sprint(nr) {
			return fmt.Errorf("SamePCIe: GPU roots %v, NIC roots %v", gr, nr)
		}
	}
	return nil
}

// unitRange is how many NIC units an allocation with these GPUs may have (not All):
// Count (or the designated VFs), or with NICPerGPURoot up to one per GPU root, all of
// them required with SamePCIe.
func (s *spec) unitRange(gpus []int32) (int, int) {
	n := max(s.req.Count, len(s.req.DesignatedVFs))
	if !s.req.NICPerGPURoot || !s.req.joint() {
		return n, n
	}
	roots := map[string]bool{}
	for _, m := range gpus {
		if r := rootOf(s.gpus[m]); r != "" {
			roots[r] = true
		}
	}
	n = max(n, 1)
	hi := max(n, len(roots))
	if s.req.Joint == JointSamePCIe {
		return hi, hi
	}
	return n, hi
}

// feasible searches every combination of GPUs and units (small inventories only).
func (s *spec) feasible() bool {
	all := s.units()
	var gpuMinors []int32
	for m := range s.gpus {
		gpuMinors = append(gpuMinors, m)
	}
	slices.Sort(gpuMinors)
	found := false
	forSubsets(len(gpuMinors), s.req.GPUs, func(gi []int) bool {
		gs := make([]int32, len(gi))
		for i, x := range gi {
			gs[i] = gpuMinors[x]
		}
		try := func(k int) {
			forSubsets(len(all), k, func(ui []int) bool {
				us := make([]nicUnit, len(ui))
				for i, x := range ui {
					us[i] = all[x]
				}
				found = s.check(us, gs) == nil
				return !found
			})
		}
		if s.req.All {
			for k := 1; k <= len(all) && !found; k++ {
				try(k)
			}
		} else {
			// Fewer units satisfy whatever more do, so the smallest count decides.
			lo, _ := s.unitRange(gs)
			try(lo)
		}
		return !found
	})
	return found
}

// forSubsets calls f with every k-subset of 0..n-1 in lexicographic order until f
// returns false.
func forSubsets(n, k int, f func([]int) bool) {
	if k > n || k < 0 {
		return
	}
	idx := make([]int, k)
	var rec func(start, depth int) bool
	rec = func(start, depth int) bool {
		if depth == k {
			return f(slices.Clone(idx))
		}
		for i := start; i <= n-(k-depth); i++ {
			idx[depth] = i
			if !rec(i+1, depth+1) {
				return false
			}
		}
		return true
	}
	rec(0, 0)
}
