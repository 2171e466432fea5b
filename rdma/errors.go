package rdma

import (
	"errors"
	"fmt"
	"strings"
)

// Every error Allocate, Fits and Score return for a request wraps exactly one of these
// (test with errors.Is); the error's text says what ran out or what is wrong.
var (
	// ErrInsufficient: the node has the devices the request needs, but not enough of
	// them are free now. Releasing other pods' devices would let it fit. A scheduler
	// plugin returns Unschedulable: the pod may fit later, and preempting pods helps.
	ErrInsufficient = errors.New("rdma: not enough free devices now")
	// ErrUnsatisfiable: the node cannot satisfy the request even with every device
	// free (too few or unhealthy devices, no matching labels or topology, a NIC mode
	// that does not fit, an invalid request or inventory). A scheduler plugin returns
	// UnschedulableAndUnresolvable: preemption on this node cannot help.
	ErrUnsatisfiable = errors.New("rdma: the node can never satisfy the request")
)

// classified is an error that wraps one of the sentinels and keeps the cause's text.
type classified struct {
	kind error // ErrInsufficient or ErrUnsatisfiable
	err  error
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

func unsatisfiable(err error) error { return &classified{ErrUnsatisfiable, err} }

// maxListed caps the per-PF details in an error.
const maxListed = 8

func (p *planner) unitName(n int) string {
	s := "PF"
	if p.kind == VFs {
		s = "VF"
	}
	if n != 1 {
		s += "s"
	}
	return s
}

// matching renders the selectors as " matching {…}", or "" when there are none.
func (p *planner) matching() string {
	var pf, vf string
	if p.req.Selector != nil {
		pf = p.sel.String()
	}
	if p.req.VFSelector != nil {
		vf = p.vfSel.String()
	}
	switch {
	case pf != "" && vf != "":
		return " matching {" + pf + "} with VFs {" + vf + "}"
	case pf != "":
		return " matching {" + pf + "}"
	case vf != "":
		return " matching {" + vf + "}"
	}
	return ""
}

// freeIn is how many units group g could give at most (designated included).
func (p *planner) freeIn(g group) int {
	t := p.newTaker()
	t.fill(g.cands, -1)
	return len(t.units)
}

// details lists the PFs of g that ran out (or all of them when none did).
func (p *planner) details(g group) string {
	var out, all []string
	for _, ci := range g.cands {
		c := &p.cands[ci]
		pf := &p.inv.pfs[c.pf]
		var s string
		switch {
		case c.reason != "":
			s = fmt.Sprintf("PF %s: %s", pf.bdf, c.reason)
		case p.kind == VFs:
			s = fmt.Sprintf("PF %s: %d of %d free", pf.bdf, len(c.free), c.total)
		default:
			s = fmt.Sprintf("PF %s: free", pf.bdf)
		}
		all = append(all, s)
		if c.reason != "" || (p.kind == VFs && len(c.free) == 0) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = all
	}
	if len(out) > maxListed {
		out = append(out[:maxListed], fmt.Sprintf("and %d more", len(out)-maxListed))
	}
	return strings.Join(out, "; ")
}

func (p *planner) needText(need int) string {
	if need < 0 {
		return "all " + p.unitName(2) + p.matching()
	}
	return fmt.Sprintf("%d %s%s", need, p.unitName(need), p.matching())
}

// shortage says what ran out in group g.
func (p *planner) shortage(g group, need int) error {
	free := p.freeIn(g)
	if free == 0 && len(g.cands) == 0 {
		return p.errorf("need %s, none on the node", p.needText(need))
	}
	if need < 0 {
		return p.errorf("need %s, 0 free (%s)", p.needText(-1), p.details(g))
	}
	return p.errorf("need %s, %d free (%s)", p.needText(need), free, p.details(g))
}

func scopeNoun(s Scope) string {
	switch s {
	case ScopeDevice:
		return "PF"
	case ScopePCIe:
		return "PCIe root"
	}
	return "NUMA node"
}

// scopeError reports a failure in every group of a required topology scope.
func (p *planner) scopeError(groups []group, first error) error {
	noun := scopeNoun(p.req.Scope)
	need := p.want()
	if len(groups) == 0 {
		return p.errorf("need %s within one %s, no %s has any", p.needText(need), noun, noun)
	}
	if p.req.joint() {
		inner := strings.TrimPrefix(first.Error(), "node "+p.inv.name+": rdma: ")
		return p.errorf("need the request within one %s, none can hold it (first, %s: %s)", noun, p.groupLabel(groups[0]), inner)
	}
	best := 0
	var parts []string
	for _, g := range groups {
		f := p.freeIn(g)
		best = max(best, f)
		parts = append(parts, fmt.Sprintf("%s: %d free", p.groupLabel(g), f))
	}
	if len(parts) > maxListed {
		parts = append(parts[:maxListed], fmt.Sprintf("and %d more", len(parts)-maxListed))
	}
	return p.errorf("need %s within one %s, at most %d free in any (%s)", p.needText(need), noun, best, strings.Join(parts, "; "))
}

func (p *planner) groupLabel(g group) string {
	if len(g.cands) == 0 {
		return g.key
	}
	pf := &p.inv.pfs[p.cands[g.cands[0]].pf]
	switch p.req.Scope {
	case ScopeDevice:
		return "PF " + pf.bdf.String()
	case ScopeNUMANode:
		return fmt.Sprintf("NUMA node %d", pf.numa)
	}
	return g.key
}
