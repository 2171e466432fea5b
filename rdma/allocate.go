package rdma

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Allocate chooses PFs or VFs (and, for joint requests, GPUs) for req on the node inv
// describes, given what used already holds (nil: nothing). It never hands out
// anything used holds, never mutates inv, used or req, and returns the same
// Allocation for the same inputs whatever the order of the Device object's entries.
// The order of preference is in the package documentation (Algorithm).
//
// Every error is an *Error that names the node and what ran out, and wraps exactly
// one of ErrInsufficient and ErrUnsatisfiable. When the request would fit were the
// devices in used free, the reason is ReasonInsufficientDevices and the message says
// what is free now:
//
//	node n1: rdma: need 2 VFs matching {rdma-type=storage}, 1 free (PF 0000:3b:00.0: 0 of 8 free)
//
// When it would not fit even on an idle node (or the arguments are invalid), the
// error wraps ErrUnsatisfiable with another reason, and the message says what the
// node has:
//
//	node n1: rdma: need 12 VFs, node has 8 (PF 0000:3b:00.0: 4 VFs; PF 0000:5e:00.0: 4 VFs)
//
// Telling the two apart costs a second allocation attempt against an idle node, made
// only when the first one fails and used holds something.
func Allocate(inv *Inventory, used *Used, req Request) (Allocation, error) {
	if inv == nil {
		return Allocation{}, newError(ReasonInvalidInventory, "rdma: allocate: nil inventory")
	}
	if used == nil {
		used = &nothingUsed
	}
	a, err := allocate(inv, used, &req)
	if err == nil {
		return a, nil
	}
	if used.IsEmpty() {
		return Allocation{}, err // the idle node's answer already
	}
	if _, never := allocate(inv, &nothingUsed, &req); never != nil {
		return Allocation{}, never // says what the node has, not what is free
	}
	return Allocation{}, &Error{Reason: ReasonInsufficientDevices, Message: err.Message}
}

// nothingUsed is an empty Used that is only read.
var nothingUsed Used

func allocate(inv *Inventory, used *Used, req *Request) (Allocation, *Error) {
	p, err := newPlanner(inv, used, req)
	if err != nil {
		return Allocation{}, err
	}
	return p.run()
}

type planner struct {
	inv    *Inventory
	used   *Used
	req    *Request
	idle   bool // used holds nothing: a failure is for ever, and says what the node has
	kind   Kind
	sel    labels.Selector
	vfSel  labels.Selector
	gpuSel labels.Selector
	cands  []cand  // PFs matching the selectors, in BDF order
	desig  []unit  // designated VFs
	gpus   []int32 // indices into inv.gpus of free GPUs matching, by minor
	with   []int32 // indices into inv.gpus for WithGPUs
}

// cand is a PF that matches the request's selectors.
type cand struct {
	pf     int32
	reason string  // why it cannot be used; empty if it can
	free   []int32 // VF indices free and matching (VF kind)
	total  int     // VFs matching the VF selector (VF kind)
	shared bool    // other pods hold VFs on it
	rail   string
	nDesig int // designated VFs on it
}

// unit is a PF (vf = -1) or one of its VFs, by candidate index.
type unit struct{ c, vf int32 }

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

func newPlanner(inv *Inventory, used *Used, req *Request) (*planner, *Error) {
	p := &planner{inv: inv, used: used, req: req, idle: used.IsEmpty(), kind: req.Kind}
	if err := req.check(); err != nil {
		return nil, p.fail(ReasonInvalidRequest, "request: %v", err)
	}
	var err error
	if p.sel, err = selector(req.Selector); err != nil {
		return nil, p.fail(ReasonInvalidRequest, "request: selector: %v", err)
	}
	if p.vfSel, err = selector(req.VFSelector); err != nil {
		return nil, p.fail(ReasonInvalidRequest, "request: vfSelector: %v", err)
	}
	if p.gpuSel, err = selector(req.GPUSelector); err != nil {
		return nil, p.fail(ReasonInvalidRequest, "request: gpuSelector: %v", err)
	}
	if p.kind == Auto {
		switch {
		case len(req.DesignatedVFs) > 0 || req.VFSelector != nil:
			p.kind = VFs
		case req.Count == 0 && !req.All && !(req.NICPerGPURoot && req.joint()):
			p.kind = WholePF // no NICs asked (e.g. GPUs only): the kind does not matter
		case inv.mode == modeVF:
			p.kind = VFs
		case inv.mode == modePF:
			p.kind = WholePF
		default:
			_, err := inv.modeOrError()
			return nil, &Error{Reason: err.Reason, Message: err.Message + "; set the request's kind"}
		}
	}
	p.buildCands()
	if err := p.resolveDesignated(); err != nil {
		return nil, err
	}
	if err := p.buildGPUs(); err != nil {
		return nil, err
	}
	return p, nil
}

// rootBusy reports whether other pods use any NIC on root.
func (p *planner) rootBusy(root string) bool {
	for i := range p.inv.pfs {
		pf := &p.inv.pfs[i]
		if pf.root != root {
			continue
		}
		if has(p.used.pfs, pf.bdf) || has(p.used.exPF, pf.bdf) {
			return true
		}
		for _, v := range pf.vfs {
			if has(p.used.vfs, v.bdf) {
				return true
			}
		}
	}
	return false
}

func (p *planner) buildCands() {
	inv, u, req := p.inv, p.used, p.req
	busy := map[string]bool{}
	p.cands = make([]cand, 0, len(inv.pfs))
	var backing []int32 // one array for every candidate's free list
	if p.kind == VFs {
		backing = make([]int32, 0, len(inv.vfAt))
	}
	for i := range inv.pfs {
		pf := &inv.pfs[i]
		if !p.sel.Matches(labels.Set(pf.labels)) {
			continue
		}
		c := cand{pf: int32(i)}
		if p.kind == VFs {
			start := len(backing)
			for j := range pf.vfs {
				v := &pf.vfs[j]
				if !p.vfSel.Matches(labels.Set(v.labels)) {
					continue
				}
				c.total++
				if has(u.vfs, v.bdf) {
					c.shared = true
				} else {
					backing = append(backing, int32(j))
				}
			}
			c.free = backing[start:len(backing):len(backing)]
			if c.total == 0 {
				continue // no VF matches: not a candidate at all
			}
			if !c.shared {
				for _, v := range pf.vfs {
					if has(u.vfs, v.bdf) {
						c.shared = true
						break
					}
				}
			}
		}
		if req.RailLabel != "" {
			r, ok := pf.labels[req.RailLabel]
			if !ok {
				c.reason = "no " + req.RailLabel + " label"
			}
			c.rail = r
		}
		switch {
		case c.reason != "":
		case !pf.healthy:
			c.reason = "unhealthy"
		case has(u.pfs, pf.bdf):
			c.reason = "held whole"
		case has(u.exPF, pf.bdf):
			c.reason = "held exclusively"
		case pf.root != "" && has(u.exRt, pf.root):
			c.reason = "PCIe root " + pf.root + " held exclusively"
		case p.kind == WholePF && c.sharedAny(pf, u):
			c.reason = "has VFs in use"
		case req.Exclusive == ExclusiveDevice && p.kind == VFs && c.shared:
			c.reason = "shared with other pods"
		case req.Exclusive == ExclusivePCIe && pf.root == "":
			c.reason = "PCIe root unknown"
		case req.Scope == ScopePCIe && pf.root == "":
			c.reason = "PCIe root unknown"
		case req.Scope == ScopeNUMANode && pf.numa == UnknownNUMANode:
			c.reason = "NUMA node unknown"
		case req.Exclusive == ExclusivePCIe:
			b, ok := busy[pf.root]
			if !ok {
				b = p.rootBusy(pf.root)
				busy[pf.root] = b
			}
			if b {
				c.reason = "PCIe root " + pf.root + " shared with other pods"
			}
		}
		p.cands = append(p.cands, c)
	}
}

func (c *cand) sharedAny(pf *pfInfo, u *Used) bool {
	for _, v := range pf.vfs {
		if has(u.vfs, v.bdf) {
			return true
		}
	}
	return false
}

func (p *planner) resolveDesignated() *Error {
	seen := map[BDF]bool{}
	for _, b := range p.req.DesignatedVFs {
		if seen[b] {
			return p.fail(ReasonInvalidRequest, "designated VF %s named twice", b)
		}
		seen[b] = true
		ref, ok := p.inv.vfAt[b]
		if !ok {
			return p.fail(ReasonTooFewDevices, "designated VF %s is not on the node", b)
		}
		pf := &p.inv.pfs[ref.pf]
		ci := slices.IndexFunc(p.cands, func(c cand) bool { return c.pf == ref.pf })
		if ci < 0 {
			return p.fail(ReasonTooFewDevices, "designated VF %s: PF %s does not match the selectors", b, pf.bdf)
		}
		c := &p.cands[ci]
		if c.reason != "" {
			return p.fail(ReasonTooFewDevices, "designated VF %s: PF %s %s", b, pf.bdf, c.reason)
		}
		if has(p.used.vfs, b) {
			return p.fail(ReasonTooFewDevices, "designated VF %s is in use", b)
		}
		if !slices.Contains(c.free, ref.vf) {
			return p.fail(ReasonTooFewDevices, "designated VF %s does not match the VF selector", b)
		}
		c.nDesig++
		p.desig = append(p.desig, unit{int32(ci), ref.vf})
	}
	if p.req.OneVFPerPF || p.req.RailLabel != "" {
		for i, c := range p.cands {
			if c.nDesig > 1 {
				return p.fail(ReasonTopologyUnsatisfiable, "designated VFs: %d on PF %s, but one per PF (or rail) was asked", c.nDesig, p.inv.pfs[c.pf].bdf)
			}
			for j := range p.cands[:i] {
				if p.req.RailLabel != "" && c.nDesig > 0 && p.cands[j].nDesig > 0 && c.rail == p.cands[j].rail {
					return p.fail(ReasonTopologyUnsatisfiable, "designated VFs: two on rail %s=%s", p.req.RailLabel, c.rail)
				}
			}
		}
	}
	return nil
}

// avail is how many more units cand c can give beyond its designated VFs.
func (p *planner) avail(c *cand) int {
	if c.reason != "" {
		return 0
	}
	n := 1
	if p.kind == VFs {
		n = len(c.free) - c.nDesig
	}
	if (p.req.OneVFPerPF || p.req.RailLabel != "") && n > 0 {
		n = 1
		if c.nDesig > 0 {
			n = 0
		}
	}
	return n
}

// want is the number of units asked for, or -1 for All.
func (p *planner) want() int {
	if p.req.All {
		return -1
	}
	n := max(p.req.Count, len(p.desig))
	if p.req.NICPerGPURoot && p.req.joint() {
		n = max(n, 1) // as koordinator: a joint pod gets at least one NIC
	}
	return n
}

func (p *planner) run() (Allocation, *Error) {
	if p.want() == 0 && !p.req.joint() {
		return Allocation{Node: p.inv.name}, nil // nothing asked: trivially met
	}
	groups := p.groups()
	var lastErr *Error
	for _, g := range groups {
		units, gpus, err := p.pickGroup(g)
		if err == nil {
			return p.result(units, gpus), nil
		}
		if lastErr == nil {
			lastErr = err
		}
	}
	if p.req.Scope != "" && p.req.Scope != ScopeNode {
		return Allocation{}, p.scopeError(groups, lastErr)
	}
	return Allocation{}, lastErr
}
