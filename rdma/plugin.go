package rdma

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// UsedByPods computes what the given pods hold on the node: their device-allocated
// annotations (rdma PFs and VFs, gpu minors) and, from their allocate-hint annotations,
// the PFs or PCIe roots they hold exclusively. Pods that have finished (Succeeded or
// Failed) hold nothing. A PF is found by the BDF in busID or id, else by minor. Any GPU
// share marks the GPU used for joint allocation. Errors name the pod and the field.
// Pods are not mutated.
func UsedByPods(inv *Inventory, pods []*corev1.Pod) (Used, error) {
	var u Used
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if err := addPod(inv, &u, pod); err != nil {
			return Used{}, fmt.Errorf("pod %s: %w", PodName(pod), err)
		}
	}
	return u, nil
}

func addPod(inv *Inventory, u *Used, pod *corev1.Pod) error {
	value, ok := pod.Annotations[AnnotationDeviceAllocated]
	if !ok {
		return nil
	}
	a, err := DecodeAllocated(value)
	if err != nil {
		return err
	}
	var excl Exclusive
	if h, ok := pod.Annotations[AnnotationDeviceAllocateHint]; ok {
		hints, err := DecodeAllocateHints(h)
		if err != nil {
			return err
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
				return annotationError(AnnotationDeviceAllocated, "rdma[%d]: PF %s is not on node %s", i, b, inv.name)
			}
		} else if pi, ok = inv.pfByMinor(d.Minor); !ok {
			return annotationError(AnnotationDeviceAllocated, "rdma[%d]: no PF with minor %d on node %s", i, d.Minor, inv.name)
		}
		pf := &inv.pfs[pi]
		var vfs []VirtualFunctionSpec
		if d.Extension != nil {
			vfs = d.Extension.VirtualFunctions
		}
		if len(vfs) == 0 {
			u.HoldPF(pf.bdf)
		}
		for j, v := range vfs {
			b, _ := ParseBDF(v.BusID)
			ref, ok := inv.vfAt[b]
			if !ok || int(ref.pf) != pi {
				return annotationError(AnnotationDeviceAllocated, "rdma[%d].extension.vfs[%d].busID: VF %s is not on PF %s", i, j, b, pf.bdf)
			}
			u.HoldVF(b)
		}
		switch {
		case excl == ExclusiveDevice, excl == ExclusivePCIe && pf.root == "":
			u.HoldPFExclusive(pf.bdf)
		case excl == ExclusivePCIe:
			u.HoldRootExclusive(pf.root)
		}
	}
	gpus, err := a.GPUMinors()
	if err != nil {
		return err
	}
	for _, m := range gpus {
		u.HoldGPU(m)
	}
	return nil
}

// Fits is the Filter phase: nil when req can be allocated on the node, else the error
// Allocate would return.
func Fits(inv *Inventory, used Used, req Request) error {
	_, err := Allocate(inv, used, req)
	return err
}

// ScoreStrategy chooses how Score rates free capacity.
type ScoreStrategy int

// Score strategies, as the scheduler's NodeResourcesFit.
const (
	// LeastAllocated prefers nodes with more units free after the allocation (spread).
	LeastAllocated ScoreStrategy = iota
	// MostAllocated prefers nodes with fewer units free after the allocation (pack).
	MostAllocated
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

// Score is the Score phase: 0..MaxScore for a node where req fits, else an error.
//
//	base = (total - used - requested) * 100 / total    (LeastAllocated)
//	base = (used + requested) * 100 / total            (MostAllocated)
//	score = (base * (100 - w) + topology * w) / 100
//
// counting units (VFs or PFs, as allocated) on healthy PFs; a PF held whole counts all
// its VFs.
func Score(inv *Inventory, used Used, req Request, opts ScoreOptions) (int64, error) {
	if opts.TopologyWeight < 0 || opts.TopologyWeight > 100 {
		return 0, fmt.Errorf("rdma: topology weight %d is outside 0..100", opts.TopologyWeight)
	}
	a, err := Allocate(inv, used, req)
	if err != nil {
		return 0, err
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
