package rdma

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// UsedByPods computes what the given pods hold on the node: the sum of
// AllocationFromPod over the pods, as Used.Add records it, in a new Used. Pods that
// have finished (Succeeded or Failed) hold nothing. The error is an *Error (see
// AllocationFromPod) naming the pod and the field; a nil inventory or pod is an
// error. Pods are not mutated.
func UsedByPods(inv *Inventory, pods []*corev1.Pod) (*Used, error) {
	if inv == nil {
		return nil, newError(ReasonInvalidInventory, "rdma: used by pods: nil inventory")
	}
	u := new(Used)
	for i, pod := range pods {
		if pod == nil {
			return nil, newError(ReasonInvalidAllocation, "rdma: used by pods: pods[%d] is nil", i)
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		a, err := AllocationFromPod(inv, pod)
		if err != nil {
			return nil, err
		}
		u.Add(a)
	}
	return u, nil
}

// AllocationFromPod is what a pod holds on the node according to its device-allocated
// annotation (rdma PFs and VFs, gpu minors) and, from its allocate-hint annotation,
// the PFs or PCIe roots it holds exclusively. A PF is found by the BDF in busID or id,
// else by minor; an entry without VFs holds its PF whole. Any GPU share counts as
// holding the GPU. A pod without the annotation holds nothing. The pod's phase is not
// looked at (UsedByPods skips finished pods). Used.Remove(AllocationFromPod(inv, pod))
// releases exactly what Used.Add of the same value recorded, so a plugin can release
// a deleted pod's devices from its annotations alone, e.g. after a restart. The error
// is an *Error with ReasonInvalidAllocation (ReasonInvalidInventory for a nil
// inventory) that names the pod and the field. The pod is not mutated.
func AllocationFromPod(inv *Inventory, pod *corev1.Pod) (Allocation, error) {
	switch {
	case inv == nil:
		return Allocation{}, newError(ReasonInvalidInventory, "rdma: allocation from pod: nil inventory")
	case pod == nil:
		return Allocation{}, newError(ReasonInvalidAllocation, "rdma: allocation from pod: nil pod")
	}
	a, err := podAllocation(inv, pod)
	if err != nil {
		return Allocation{}, newError(ReasonInvalidAllocation, "pod %s: %v", PodName(pod), err)
	}
	return a, nil
}

func podAllocation(inv *Inventory, pod *corev1.Pod) (Allocation, error) {
	out := Allocation{Node: inv.name}
	value, ok := pod.Annotations[AnnotationDeviceAllocated]
	if !ok {
		return out, nil
	}
	a, err := DecodeAllocated(value)
	if err != nil {
		return Allocation{}, err
	}
	var excl Exclusive
	if h, ok := pod.Annotations[AnnotationDeviceAllocateHint]; ok {
		hints, err := DecodeAllocateHints(h)
		if err != nil {
			return Allocation{}, err
		}
		if hr := hints[RDMA]; hr != nil {
			excl = hr.ExclusivePolicy
		}
	}
	for i, d := range a.RDMA {
		pi, ok := -1, false
		if b, has := EntryPF(d); has {
			pi, ok = inv.pfIndex(b)
			if !ok {
				return Allocation{}, annotationError(AnnotationDeviceAllocated, "rdma[%d]: PF %s is not on node %s", i, b, inv.name)
			}
		} else if pi, ok = inv.pfByMinor(d.Minor); !ok {
			return Allocation{}, annotationError(AnnotationDeviceAllocated, "rdma[%d]: no PF with minor %d on node %s", i, d.Minor, inv.name)
		}
		pf := &inv.pfs[pi]
		var vfs []VirtualFunctionSpec
		if d.Extension != nil {
			vfs = d.Extension.VirtualFunctions
		}
		n := NICAllocation{Minor: pf.minor, ID: pf.id, BDF: pf.bdf, PCIeRoot: pf.root, NUMANode: pf.numa, Whole: len(vfs) == 0}
		for j, v := range vfs {
			b, _ := ParseBDF(v.BusID)
			ref, ok := inv.vfAt[b]
			if !ok || int(ref.pf) != pi {
				return Allocation{}, annotationError(AnnotationDeviceAllocated, "rdma[%d].extension.vfs[%d].busID: VF %s is not on PF %s", i, j, b, pf.bdf)
			}
			n.VFs = append(n.VFs, VFAllocation{Minor: pf.vfs[ref.vf].minor, BDF: b})
		}
		slices.SortStableFunc(n.VFs, func(x, y VFAllocation) int { return x.BDF.Compare(y.BDF) })
		out.NICs = append(out.NICs, n)
		switch {
		case excl == ExclusiveDevice, excl == ExclusivePCIe && pf.root == "":
			out.ExclusivePFs = append(out.ExclusivePFs, pf.bdf)
		case excl == ExclusivePCIe:
			out.ExclusiveRoots = append(out.ExclusiveRoots, pf.root)
		}
	}
	slices.SortStableFunc(out.NICs, func(x, y NICAllocation) int { return x.BDF.Compare(y.BDF) })
	slices.SortFunc(out.ExclusivePFs, BDF.Compare)
	slices.Sort(out.ExclusiveRoots)
	out.ExclusiveRoots = slices.Compact(out.ExclusiveRoots) // as Allocate records them
	gpus, err := a.GPUMinors()
	if err != nil {
		return Allocation{}, err
	}
	slices.Sort(gpus)
	for _, m := range gpus {
		g := GPUAllocation{Minor: m, NUMANode: UnknownNUMANode}
		if i, ok := inv.gpuAt[m]; ok {
			gi := &inv.gpus[i]
			g.ID, g.PCIeRoot, g.NUMANode = gi.id, gi.root, gi.numa
		}
		out.GPUs = append(out.GPUs, g)
	}
	return out, nil
}

// Fits is the Filter phase: nil when req can be allocated on the node, else the error
// Allocate would return.
func Fits(inv *Inventory, used *Used, req Request) error {
	_, err := Allocate(inv, used, req)
	return err
}

// ScoreStrategy chooses how Score rates free capacity. The empty ScoreStrategy is
// LeastAllocated.
type ScoreStrategy string

// Score strategies, as the scheduler's NodeResourcesFit.
const (
	// LeastAllocated prefers nodes with more units free after the allocation (spread).
	LeastAllocated ScoreStrategy = "LeastAllocated"
	// MostAllocated prefers nodes with fewer units free after the allocation (pack).
	MostAllocated ScoreStrategy = "MostAllocated"
)

// MaxScore is the highest score, as the scheduler framework's MaxNodeScore.
const MaxScore = 100

// ScoreOptions configures Score.
type ScoreOptions struct {
	// Strategy says whether nodes with more free capacity score higher or lower.
	Strategy ScoreStrategy
	// TopologyWeight (0..100) is the share of the score given to topology: 100 when
	// the NICs share the GPUs' PCIe roots (or, without GPUs, sit under one root), 50
	// when they share NUMA nodes, else 0.
	TopologyWeight int64
}

// Score is the Score phase: 0..MaxScore for a node where req fits, else the error
// Allocate would return (or, for invalid options, an *Error with
// ReasonInvalidOptions).
//
//	base = (total - used - requested) * 100 / total    (LeastAllocated)
//	base = (used + requested) * 100 / total            (MostAllocated)
//	score = (base * (100 - w) + topology * w) / 100
//
// counting units (VFs or PFs, as allocated) on healthy PFs; a PF held whole counts all
// its VFs.
func Score(inv *Inventory, used *Used, req Request, opts ScoreOptions) (int64, error) {
	if inv == nil {
		return 0, newError(ReasonInvalidInventory, "rdma: score: nil inventory")
	}
	if opts.TopologyWeight < 0 || opts.TopologyWeight > 100 {
		return 0, newError(ReasonInvalidOptions, "rdma: topology weight %d is outside 0..100", opts.TopologyWeight)
	}
	switch opts.Strategy {
	case "", LeastAllocated, MostAllocated:
	default:
		return 0, newError(ReasonInvalidOptions, "rdma: score strategy %q is not LeastAllocated or MostAllocated", opts.Strategy)
	}
	a, err := Allocate(inv, used, req)
	if err != nil {
		return 0, err
	}
	if used == nil {
		used = &nothingUsed
	}
	vf := len(a.NICs) > 0 && !a.NICs[0].Whole
	var total, busy int64
	for i := range inv.pfs {
		pf := &inv.pfs[i]
		if !pf.healthy {
			continue
		}
		held := has(used.pfs, pf.bdf)
		if !vf {
			total++
			if held || slices.ContainsFunc(pf.vfs, func(v vfInfo) bool { return has(used.vfs, v.bdf) }) {
				busy++
			}
			continue
		}
		total += int64(len(pf.vfs))
		for _, v := range pf.vfs {
			if held || has(used.vfs, v.bdf) {
				busy++
			}
		}
	}
	busy = min(total, busy+int64(a.Units()))
	var base int64
	if total > 0 {
		if opts.Strategy == MostAllocated {
			base = busy * MaxScore / total
		} else {
			base = (total - busy) * MaxScore / total
		}
	}
	return (base*(100-opts.TopologyWeight) + topologyScore(a)*opts.TopologyWeight) / 100, nil
}

// topologyScore is 100 when the NICs sit on the GPUs' roots (or one root without
// GPUs), 50 when on their NUMA nodes (or one NUMA node), else 0.
func topologyScore(a Allocation) int64 {
	if len(a.NICs) == 0 {
		return 0
	}
	var roots []string
	var numas []int32
	for _, g := range a.GPUs {
		roots = append(roots, g.PCIeRoot)
		numas = append(numas, g.NUMANode)
	}
	if len(a.GPUs) == 0 {
		roots, numas = []string{a.NICs[0].PCIeRoot}, []int32{a.NICs[0].NUMANode}
	}
	sameRoot, sameNUMA := true, true
	for _, n := range a.NICs {
		sameRoot = sameRoot && n.PCIeRoot != "" && slices.Contains(roots, n.PCIeRoot)
		sameNUMA = sameNUMA && n.NUMANode != UnknownNUMANode && slices.Contains(numas, n.NUMANode)
	}
	switch {
	case sameRoot:
		return 100
	case sameNUMA:
		return 50
	}
	return 0
}
