package rdma

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan"
)

// Every error Allocate, Fits and Score return wraps exactly one of these (test with
// errors.Is); the error's text says what ran out or what is wrong.
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

// Reasons an [Error] carries. Each is valid as it is as a metav1.Condition's Reason
// and as an event's reason.
const (
	// ReasonInsufficientDevices: the node has the devices the request needs, but not
	// enough of them are free now. The message says how many are free. Wraps
	// ErrInsufficient.
	ReasonInsufficientDevices kplan.Reason = "InsufficientDevices"
	// ReasonTooFewDevices: even with every device free, the node has too few PFs,
	// VFs or GPUs that match the request and are healthy (or lacks a device the
	// request names). The message states what the node has. Wraps ErrUnsatisfiable.
	ReasonTooFewDevices kplan.Reason = "TooFewDevices"
	// ReasonTopologyUnsatisfiable: even with every device free, the node cannot place
	// the request as its topology rules require (within one PCIe root, NUMA node or
	// PF; NICs on the GPUs' PCIe roots; one NIC per rail). Wraps ErrUnsatisfiable.
	ReasonTopologyUnsatisfiable kplan.Reason = "TopologyUnsatisfiable"
	// ReasonMixedNICModes: the node has healthy PFs with and without VFs, so neither
	// its capacity in CountModel nor a request that follows the node's mode (Auto)
	// can be decided. Wraps ErrUnsatisfiable.
	ReasonMixedNICModes kplan.Reason = "MixedNICModes"
	// ReasonInvalidRequest: the request is invalid whatever the node (a negative
	// count, an unknown policy, a selector that does not parse, a pod's resource or
	// hint annotation that cannot be read). Wraps ErrUnsatisfiable.
	ReasonInvalidRequest kplan.Reason = "InvalidRequest"
	// ReasonInvalidInventory: the node's Device object or inventory is invalid or
	// missing (nil). Wraps ErrUnsatisfiable.
	ReasonInvalidInventory kplan.Reason = "InvalidInventory"
	// ReasonInvalidOptions: a CapacityModel or ScoreOptions the package does not know.
	// Wraps ErrUnsatisfiable.
	ReasonInvalidOptions kplan.Reason = "InvalidOptions"
	// ReasonInvalidAllocation: a pod's device-allocated or allocate-hint annotation
	// cannot be read, or names devices the node does not have, so what the node's
	// pods hold is not known. Wraps neither sentinel: the node may be usable again
	// once that pod changes or goes.
	ReasonInvalidAllocation kplan.Reason = "InvalidAllocation"
)

// Error is the error NodeFromDevice, NewInventory, Capacity, RequestFromPod,
// Request.Validate, UsedByPods, AllocationFromPod, Allocate, Fits and Score return:
// a machine-readable Reason for a condition, an event or a scheduler status, and the
// human-readable Message. Get it with errors.As:
//
//	var e *rdma.Error
//	if errors.As(err, &e) {
//		recorder.Event(node, corev1.EventTypeWarning, string(e.Reason), e.Message)
//	}
//
// The Reason decides which sentinel the error wraps (see the Reason constants), so
// errors.Is(err, ErrInsufficient) and errors.Is(err, ErrUnsatisfiable) keep working.
type Error struct {
	// Reason says what went wrong: one of the Reason constants of this package.
	Reason kplan.Reason
	// Message is the human-readable description: it names the node (or pod, or
	// Device object) and what ran out or is wrong. Error returns it.
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel the reason implies: ErrInsufficient for
// ReasonInsufficientDevices, none for ReasonInvalidAllocation and for reasons this
// package does not define, ErrUnsatisfiable for every other reason.
func (e *Error) Unwrap() error {
	switch e.Reason {
	case ReasonInsufficientDevices:
		return ErrInsufficient
	case ReasonTooFewDevices, ReasonTopologyUnsatisfiable, ReasonMixedNICModes,
		ReasonInvalidRequest, ReasonInvalidInventory, ReasonInvalidOptions:
		return ErrUnsatisfiable
	}
	return nil
}

// newError is an *Error with a formatted message.
func newError(reason kplan.Reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// wrapError is an *Error with the message prefix+err's text and the reason of the
// *Error err wraps, or fallback when it wraps none.
func wrapError(fallback kplan.Reason, prefix string, err error) *Error {
	reason := fallback
	var e *Error
	if errors.As(err, &e) {
		reason = e.Reason
	}
	return &Error{Reason: reason, Message: prefix + err.Error()}
}

// maxListed caps the per-PF details in an error.
const maxListed = 8

// fail is the planner's error: the node and the package name the message.
func (p *planner) fail(reason kplan.Reason, format string, args ...any) *Error {
	return newError(reason, "node %s: rdma: "+format, append([]any{p.inv.name}, args...)...)
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

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

// spread renders the rule that limits how many units one PF or rail gives, or "".
func (p *planner) spread() string {
	switch {
	case p.req.RailLabel != "":
		return " one per " + p.req.RailLabel
	case p.req.OneVFPerPF && p.kind == VFs:
		return " one per PF"
	}
	return ""
}

// freeIn is how many units group g could give at most (designated included).
func (p *planner) freeIn(g group) int {
	t := p.newTaker()
	t.fill(g.cands, -1)
	return len(t.units)
}

// where names group g in a never-fits message: "node" for the whole node.
func (p *planner) where(g group) string {
	if g.key == nodeGroup {
		return "node"
	}
	return p.groupLabel(g)
}

// has says how many of something group g offers: what is free when other pods hold
// devices ("3 free"), what the group has when nothing is held ("node has 3"), as a
// request that fails on an idle node can never fit.
func (p *planner) has(g group, n int) string {
	if !p.idle {
		return fmt.Sprintf("%d free", n)
	}
	return fmt.Sprintf("%s has %d", p.where(g), n)
}

// details lists the PFs of g that ran out or cannot be used (or all of them when none
// did).
func (p *planner) details(g group) string {
	var out, all []string
	for _, ci := range g.cands {
		c := &p.cands[ci]
		pf := &p.inv.pfs[c.pf]
		var s string
		switch {
		case c.reason != "":
			s = fmt.Sprintf("PF %s: %s", pf.bdf, c.reason)
		case p.kind == VFs && p.idle:
			s = fmt.Sprintf("PF %s: %s", pf.bdf, plural(c.total, "VF"))
		case p.kind == VFs:
			s = fmt.Sprintf("PF %s: %d of %d free", pf.bdf, len(c.free), c.total)
		case p.idle:
			s = "PF " + pf.bdf.String()
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
		return "all " + p.unitName(2) + p.matching() + p.spread()
	}
	return fmt.Sprintf("%d %s%s%s", need, p.unitName(need), p.matching(), p.spread())
}

// shortage says what ran out in group g.
func (p *planner) shortage(g group, need int) *Error {
	free := p.freeIn(g)
	if free == 0 && len(g.cands) == 0 {
		on := "the node"
		if g.key != nodeGroup {
			on = p.groupLabel(g)
		}
		return p.fail(ReasonTooFewDevices, "need %s, none on %s", p.needText(need), on)
	}
	return p.fail(ReasonTooFewDevices, "need %s, %s (%s)", p.needText(need), p.has(g, free), p.details(g))
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
func (p *planner) scopeError(groups []group, first *Error) *Error {
	noun := scopeNoun(p.req.Scope)
	need := p.want()
	if len(groups) == 0 {
		return p.fail(ReasonTopologyUnsatisfiable, "need %s within one %s, no %s has any", p.needText(need), noun, noun)
	}
	if p.req.joint() {
		inner := strings.TrimPrefix(first.Message, "node "+p.inv.name+": rdma: ")
		return p.fail(ReasonTopologyUnsatisfiable, "need the request within one %s, none can hold it (first, %s: %s)", noun, p.groupLabel(groups[0]), inner)
	}
	best := 0
	var parts []string
	for _, g := range groups {
		f := p.freeIn(g)
		best = max(best, f)
		if p.idle {
			parts = append(parts, fmt.Sprintf("%s: %d", p.groupLabel(g), f))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %d free", p.groupLabel(g), f))
		}
	}
	if len(parts) > maxListed {
		parts = append(parts[:maxListed], fmt.Sprintf("and %d more", len(parts)-maxListed))
	}
	if p.idle {
		return p.fail(ReasonTopologyUnsatisfiable, "need %s within one %s, none has more than %d (%s)", p.needText(need), noun, best, strings.Join(parts, "; "))
	}
	return p.fail(ReasonTopologyUnsatisfiable, "need %s within one %s, at most %d free in any (%s)", p.needText(need), noun, best, strings.Join(parts, "; "))
}

// groupLabel names a scope group: "PF 0000:3b:00.0", "pci0000:3a", "NUMA node 1", or
// "node".
func (p *planner) groupLabel(g group) string {
	switch {
	case g.key == nodeGroup:
		return "node"
	case p.req.Scope == ScopeDevice && len(g.cands) > 0:
		return "PF " + p.inv.pfs[p.cands[g.cands[0]].pf].bdf.String()
	case p.req.Scope == ScopeNUMANode:
		n, _ := strconv.Atoi(g.key)
		return "NUMA node " + strconv.Itoa(n)
	}
	return g.key
}
