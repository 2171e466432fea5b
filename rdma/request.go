package rdma

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind says whether a request wants whole PFs or VFs.
type Kind int

// Request kinds.
const (
	// Auto follows the node: VFs on a VF-mode node, PFs on a PF-mode node (an error on
	// a node mixing modes).
	Auto Kind = iota
	// WholePF asks for whole PFs.
	WholePF
	// VFs asks for virtual functions.
	VFs
)

// String returns "auto", "PF" or "VF".
func (k Kind) String() string {
	switch k {
	case WholePF:
		return "PF"
	case VFs:
		return "VF"
	}
	return "auto"
}

// Scope is requiredTopologyScope: everything allocated must sit within one of it.
type Scope string

// Topology scopes (koordinator's DeviceTopologyScope).
const (
	ScopeNode     Scope = "Node"     // anywhere on the node (the default)
	ScopeNUMANode Scope = "NUMANode" // one known NUMA node (never -1)
	ScopePCIe     Scope = "PCIe"     // one PCIe root
	ScopeDevice   Scope = "Device"   // one PF (for VFs)
)

// Exclusive is exclusivePolicy: what the allocation keeps others from sharing.
type Exclusive string

// Exclusive policies (koordinator's DeviceExclusivePolicy).
const (
	// ExclusiveNone: only the built-in rule (a PF given whole is not shared with VFs).
	ExclusiveNone Exclusive = ""
	// ExclusiveDevice: no other pod may use the PFs this allocation touches.
	ExclusiveDevice Exclusive = "DeviceLevel"
	// ExclusivePCIe: no other pod may use NICs on the PCIe roots this allocation
	// touches, and those roots must be free of other pods' NICs now.
	ExclusivePCIe Exclusive = "PCIeLevel"
)

// Joint says how NICs must relate to the GPUs allocated with them.
type Joint string

// Joint policies.
const (
	// JointPreferred: NICs on the GPUs' PCIe roots first, then the GPUs' NUMA nodes,
	// then anywhere. The default when GPUs are requested.
	JointPreferred Joint = "Preferred"
	// JointSamePCIe: the NICs' PCIe roots must equal the GPUs' (requiredScope
	// SamePCIe); otherwise the pod does not fit.
	JointSamePCIe Joint = "SamePCIe"
)

// Request is what a pod asks of one node. The zero value asks for nothing.
type Request struct {
	// Kind is WholePF, VFs, or Auto (follow the node's mode).
	Kind Kind
	// Count is how many PFs or VFs. Ignored when All is set.
	Count int
	// All asks for every matching free PF or VF (allocateStrategy ApplyForAll); at
	// least one must be free.
	All bool
	// Selector selects PFs by their labels; nil selects all.
	Selector *metav1.LabelSelector
	// VFSelector selects VFs by their VF group's labels; nil selects all.
	VFSelector *metav1.LabelSelector
	// DesignatedVFs are VF BDFs that must be part of the allocation (implies VFs). If
	// Count is larger, the rest are chosen as usual.
	DesignatedVFs []BDF
	// OneVFPerPF takes at most one VF from each PF (koordinator upstream's behaviour).
	OneVFPerPF bool
	// RailLabel, when set, makes the allocation take at most one NIC per value of this
	// PF label ("one NIC per rail", DRA's distinctAttribute); PFs without it are not
	// eligible.
	RailLabel string
	// Scope is requiredTopologyScope; empty means ScopeNode.
	Scope Scope
	// Exclusive is exclusivePolicy.
	Exclusive Exclusive
	// GPUs asks for this many whole GPUs allocated jointly with the NICs.
	GPUs int
	// GPUSelector selects GPUs by labels; nil selects all.
	GPUSelector *metav1.LabelSelector
	// WithGPUs names GPUs (by minor) already chosen for this pod, e.g. by a GPU plugin;
	// NICs are then placed relative to them. Mutually exclusive with GPUs.
	WithGPUs []int32
	// Joint is the NIC-to-GPU policy when GPUs or WithGPUs is set; empty means
	// JointPreferred.
	Joint Joint
	// NICPerGPURoot sizes the NIC count of a joint request (GPUs or WithGPUs) from the
	// GPUs allocated, as koordinator does: one NIC unit per PCIe root the GPUs sit on,
	// or Count if that is more. With JointSamePCIe every GPU root gets one and the GPUs
	// may span as many roots as they need (Count does not limit them). With
	// JointPreferred a GPU root without a free NIC is made up by a NIC elsewhere (same
	// NUMA node first) when there is one, and only Count units (at least one) are
	// required. Ignored with All or without GPUs. RequestFromPod sets it for koordinator's joint pods.
	NICPerGPURoot bool
}

func (r *Request) joint() bool { return r.GPUs > 0 || len(r.WithGPUs) > 0 }

// IsZero reports whether r asks for nothing: no PFs or VFs (no count, not All, no
// designated VFs) and no GPUs (neither GPUs nor WithGPUs). Selectors, scope and
// policies alone ask for nothing. Allocate returns an empty Allocation for such a
// request on any node, so a scheduler plugin can skip the pod in PreFilter.
func (r Request) IsZero() bool {
	return r.Count == 0 && !r.All && len(r.DesignatedVFs) == 0 && !r.joint()
}

// Validate checks r on its own, without a node: counts not negative, known kind,
// scope, exclusive and joint policies, selectors that parse, no designated VF named
// twice, GPUs and WithGPUs not both set, no VF selector or designated VFs with kind
// WholePF. Allocate makes the same checks; an error here means the request fits no
// node. The error is an *Error with ReasonInvalidRequest.
func (r Request) Validate() error {
	if err := r.check(); err != nil {
		return newError(ReasonInvalidRequest, "rdma: request: %v", err)
	}
	for _, s := range []struct {
		name string
		sel  *metav1.LabelSelector
	}{{"selector", r.Selector}, {"vfSelector", r.VFSelector}, {"gpuSelector", r.GPUSelector}} {
		if _, err := selector(s.sel); err != nil {
			return newError(ReasonInvalidRequest, "rdma: request: %s: %v", s.name, err)
		}
	}
	seen := make(map[BDF]bool, len(r.DesignatedVFs))
	for _, b := range r.DesignatedVFs {
		if seen[b] {
			return newError(ReasonInvalidRequest, "rdma: request: designated VF %s named twice", b)
		}
		seen[b] = true
	}
	seenGPU := make(map[int32]bool, len(r.WithGPUs))
	for _, m := range r.WithGPUs {
		if seenGPU[m] {
			return newError(ReasonInvalidRequest, "rdma: request: withGPUs: GPU %d named twice", m)
		}
		seenGPU[m] = true
	}
	return nil
}

func (r *Request) check() error {
	switch {
	case r.Count < 0:
		return fmt.Errorf("count %d is negative", r.Count)
	case r.GPUs < 0:
		return fmt.Errorf("gpus %d is negative", r.GPUs)
	case r.GPUs > 0 && len(r.WithGPUs) > 0:
		return fmt.Errorf("gpus and withGPUs are mutually exclusive")
	case r.Kind < Auto || r.Kind > VFs:
		return fmt.Errorf("unknown kind %d", r.Kind)
	case r.Kind == WholePF && len(r.DesignatedVFs) > 0:
		return fmt.Errorf("designated VFs with kind PF")
	case r.Kind == WholePF && r.VFSelector != nil:
		return fmt.Errorf("a VF selector with kind PF")
	}
	switch r.Scope {
	case "", ScopeNode, ScopeNUMANode, ScopePCIe, ScopeDevice:
	default:
		return fmt.Errorf("unknown requiredTopologyScope %q", r.Scope)
	}
	switch r.Exclusive {
	case ExclusiveNone, ExclusiveDevice, ExclusivePCIe:
	default:
		return fmt.Errorf("unknown exclusivePolicy %q", r.Exclusive)
	}
	switch r.Joint {
	case "", JointPreferred, JointSamePCIe:
	default:
		return fmt.Errorf("unknown joint policy %q", r.Joint)
	}
	return nil
}

// Allocation is the result of Allocate for one pod on one node.
type Allocation struct {
	// Node is the inventory's node name.
	Node string
	// NICs are the PFs touched, in BDF order: whole, or with the VFs allocated.
	NICs []NICAllocation
	// GPUs are the jointly allocated (or given) GPUs, by minor.
	GPUs []GPUAllocation
	// ExclusivePFs are the PFs the request's exclusivePolicy (DeviceLevel) reserves;
	// Used.Add records them.
	ExclusivePFs []BDF
	// ExclusiveRoots are the PCIe roots the request's exclusivePolicy (PCIeLevel)
	// reserves; Used.Add records them.
	ExclusiveRoots []string
}

// NICAllocation is one PF in an allocation.
type NICAllocation struct {
	// Minor is the PF's minor number.
	Minor int32
	// ID is the inventory's id for the PF.
	ID string
	// BDF is the PF's PCI address.
	BDF BDF
	// PCIeRoot is the PF's PCIe root; empty when unknown.
	PCIeRoot string
	// NUMANode is the PF's NUMA node; UnknownNUMANode when unknown.
	NUMANode int32
	// Whole is true when the PF itself is allocated.
	Whole bool
	// VFs are the PF's VFs allocated, in BDF order (empty when Whole).
	VFs []VFAllocation
}

// VFAllocation is one allocated VF.
type VFAllocation struct {
	// Minor is the VF's minor number in the inventory.
	Minor int32
	// BDF is the VF's PCI address.
	BDF BDF
}

// GPUAllocation is one jointly allocated GPU.
type GPUAllocation struct {
	// Minor is the GPU's minor number.
	Minor int32
	// ID is the inventory's id for the GPU.
	ID string
	// PCIeRoot is the GPU's PCIe root; empty when unknown.
	PCIeRoot string
	// NUMANode is the GPU's NUMA node; UnknownNUMANode when unknown.
	NUMANode int32
}

// Units is the number of PFs (whole) plus VFs allocated.
func (a Allocation) Units() int {
	n := 0
	for _, x := range a.NICs {
		if x.Whole {
			n++
		}
		n += len(x.VFs)
	}
	return n
}
