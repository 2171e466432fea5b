package rdmaplugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/rdma"
)

// holding is what one bound pod holds on its node, as the plugin counts it.
//
// A pod is trusted when it asks for RDMA devices (koordinator.sh/rdma, read with the
// plugin's capacity model): only such a pod is ever given devices by the plugin (or
// by another scheduler serving the same request), so its annotation says what its
// containers use. A pod that asks for none never went through the plugin: whatever
// its device-allocated annotation says was written by someone else.
//
// A holding is recorded once the plugin knows what the pod holds: what it reserved
// for the pod itself, else the first annotation it could use (after a restart). From
// then on the pod holds exactly that until it is gone: an edit of its annotations
// (or their removal) is reported and not counted, since the devices are still in
// use by its containers.
type holding struct {
	pod     *corev1.Pod
	trusted bool
	// recorded: alloc is what the pod holds; baseline is the pod's annotations
	// (annotationKey) when it was recorded.
	recorded bool
	alloc    rdma.Allocation
	baseline string
	// err is why the annotation cannot be used, while not recorded: for a trusted pod
	// the node's holdings are unknown, for another pod the annotation is ignored.
	err error
	// reported is the annotations (annotationKey) last reported on: each change is
	// reported once.
	reported string
}

// record fixes what the pod holds from now on.
func (h *holding) record(a rdma.Allocation, trusted bool) {
	h.recorded, h.alloc, h.trusted, h.err = true, a, trusted, nil
	h.baseline = annotationKey(h.pod)
}

// annotationKey identifies what a pod's device-allocated and allocate-hint
// annotations say (an absent annotation differs from an empty one).
func annotationKey(pod *corev1.Pod) string {
	var b strings.Builder
	for _, k := range []string{rdma.AnnotationDeviceAllocated, rdma.AnnotationDeviceAllocateHint} {
		if v, ok := pod.Annotations[k]; ok {
			fmt.Fprintf(&b, "%d:%s", len(v), v)
		} else {
			b.WriteString("-")
		}
	}
	return b.String()
}

// Reasons of the events the plugin writes on pods whose annotations it cannot use as
// they are and on Device objects with problems, and of the nodes it refuses for a
// reason of its own.
const (
	// ReasonDevicesPublishedTwice: a node's Device object and one of its
	// ResourceSlices publish the same devices; the node is refused to pods asking
	// for RDMA devices and to pods with resource claims.
	ReasonDevicesPublishedTwice kplan.Reason = "DevicesPublishedTwice"
	// ReasonAllocationUnusable: a pod that asks for RDMA devices carries a
	// device-allocated annotation that does not parse, names devices the node does
	// not have, or does not match the pod's request. What it holds is unknown, so no
	// RDMA pod is placed on its node until the annotation is fixed or the pod is gone.
	ReasonAllocationUnusable kplan.Reason = "RDMAAllocationUnusable"
	// ReasonAllocationChanged: a bound pod's device-allocated or allocate-hint
	// annotation changed after the plugin recorded what the pod holds. The recorded
	// devices stay held until the pod is gone; the edit is not counted.
	ReasonAllocationChanged kplan.Reason = "RDMAAllocationChanged"
	// ReasonAllocationIgnored: a pod that asks for no RDMA devices carries RDMA
	// devices in a device-allocated annotation that cannot be used; it is ignored.
	ReasonAllocationIgnored kplan.Reason = "RDMAAllocationIgnored"
	// ReasonAllocationNotRequested: a pod that asks for no RDMA devices carries RDMA
	// devices in its device-allocated annotation (the plugin did not allocate them).
	// They are counted as held, so they are not handed out twice; its allocate
	// hint's exclusivity is not.
	ReasonAllocationNotRequested kplan.Reason = "RDMAAllocationNotRequested"
	// ReasonDeviceInvalid: a Device object cannot be used at all; no RDMA pod is
	// placed on its node.
	ReasonDeviceInvalid kplan.Reason = "RDMADeviceInvalid"
	// ReasonDeviceVFsSkipped: some VFs of a Device object have no valid PCI address
	// and are left out; the rest of the node is used.
	ReasonDeviceVFsSkipped kplan.Reason = "RDMADeviceVFsSkipped"
)

// assess decides what a bound pod holds on a node with devices d, from its
// device-allocated annotation: trusted reports whether the pod asks for RDMA devices.
// A trusted pod's annotation must decode, name only devices of the node, and match
// its request (see consistent). Another pod's annotation only has to decode and name
// devices of the node; its allocate hint's exclusivity is not counted.
func assess(d nodeDevices, pod *corev1.Pod, model rdma.CapacityModel) (a rdma.Allocation, trusted bool, err error) {
	req, err := rdma.RequestFromPod(pod, model)
	if err != nil || req.IsZero() {
		// The plugin never allocated for this pod: its allocate hint is not read
		// (a malformed one must not hide the devices its annotation names).
		cp := *pod
		cp.Annotations = maps.Clone(pod.Annotations)
		delete(cp.Annotations, rdma.AnnotationDeviceAllocateHint)
		a, err := rdma.AllocationFromPod(d.inv, &cp)
		return a, false, err
	}
	a, err = rdma.AllocationFromPod(d.inv, pod)
	if err != nil {
		return rdma.Allocation{}, true, err
	}
	if err := consistent(d, pod, req, a); err != nil {
		return rdma.Allocation{}, true, err
	}
	return a, true, nil
}

// consistent checks a trusted pod's allocation a (from its annotation) against its
// request and the node: it holds RDMA devices, each PF and VF once, each PF entry's
// minor is the PF's, as many units as the request asks (at least that many when a
// NIC per GPU root is added, at least one for all matching devices), and for a joint
// request as many GPUs as asked, each on the node and listed once.
func consistent(d nodeDevices, pod *corev1.Pod, req rdma.Request, a rdma.Allocation) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("pod %s: annotation %s: "+format, append([]any{rdma.PodName(pod), rdma.AnnotationDeviceAllocated}, args...)...)
	}
	if len(a.NICs) == 0 {
		return fail("holds no RDMA device, but the pod asks for %s", askedFor(req))
	}
	dec, err := rdma.DecodeAllocated(pod.Annotations[rdma.AnnotationDeviceAllocated])
	if err != nil {
		return err // AllocationFromPod decoded it already
	}
	nic := map[rdma.BDF]rdma.NICAllocation{}
	vfs := map[rdma.BDF]bool{}
	for _, n := range a.NICs {
		if _, dup := nic[n.BDF]; dup {
			return fail("PF %s is listed twice", n.BDF)
		}
		nic[n.BDF] = n
		for _, v := range n.VFs {
			if vfs[v.BDF] {
				return fail("VF %s is listed twice", v.BDF)
			}
			vfs[v.BDF] = true
		}
	}
	for i, e := range dec.RDMA {
		if b, ok := rdma.EntryPF(e); ok && nic[b].Minor != e.Minor {
			return fail("rdma[%d].minor: %d, but PF %s has minor %d on node %s", i, e.Minor, b, nic[b].Minor, a.Node)
		}
	}
	units := a.Units()
	switch {
	case req.All:
	case req.NICPerGPURoot:
		if units < req.Count {
			return fail("holds %d RDMA devices, but the pod asks for at least %d", units, req.Count)
		}
	case units != req.Count:
		return fail("holds %d RDMA devices, but the pod asks for %s", units, askedFor(req))
	}
	if req.GPUs > 0 {
		var minors []int32
		for _, g := range a.GPUs {
			if slices.Contains(minors, g.Minor) {
				return fail("GPU %d is listed twice", g.Minor)
			}
			if !d.hasGPU(g.Minor) {
				return fail("GPU %d is not on node %s", g.Minor, a.Node)
			}
			minors = append(minors, g.Minor)
		}
		if len(minors) != req.GPUs {
			return fail("holds %d GPUs, but the pod asks for %d jointly with its NICs", len(minors), req.GPUs)
		}
	}
	return nil
}

// askedFor says what a request asks for, for a message.
func askedFor(req rdma.Request) string {
	if req.All {
		return "all matching RDMA devices"
	}
	return fmt.Sprintf("%d", req.Count)
}

// assessLocked assesses a bound pod's annotations on node and returns what to
// report: a recorded pod whose annotations changed since, or a pod whose annotation
// cannot be used (see assess), or a pod holding RDMA devices it does not ask for.
// Each change of the annotations is reported once. A pod on a node without a usable
// Device object is assessed when one appears.
func (c *cluster) assessLocked(node string, h *holding) []notice {
	cur := annotationKey(h.pod)
	if h.recorded {
		if cur == h.baseline || cur == h.reported {
			if cur == h.baseline {
				h.reported = ""
			}
			return nil
		}
		h.reported = cur
		return []notice{{object: h.pod, reason: ReasonAllocationChanged, message: changedMessage(h)}}
	}
	d, ok := c.devices[node]
	if !ok || d.err != nil {
		h.err = nil
		return nil
	}
	a, trusted, err := assess(d, h.pod, c.model)
	h.trusted = trusted
	if err == nil {
		h.record(a, trusted)
		if trusted || len(a.NICs) == 0 || cur == h.reported {
			return nil
		}
		h.reported = cur
		return []notice{{object: h.pod, reason: ReasonAllocationNotRequested, message: fmt.Sprintf(
			"pod %s asks for no %s, yet its %s annotation names RDMA devices on node %s (%s): they are counted as held so that they are not handed out twice, but the scheduler did not allocate them; its allocate hint's exclusivity is not counted",
			rdma.PodName(h.pod), rdma.ResourceRDMA, rdma.AnnotationDeviceAllocated, node, describe(a))}}
	}
	h.err = err
	if cur == h.reported {
		return nil
	}
	h.reported = cur
	if trusted {
		return []notice{{object: h.pod, reason: ReasonAllocationUnusable, message: fmt.Sprintf(
			"%v; what the pod holds on node %s is unknown, so no RDMA pod is placed there until the annotation is fixed or the pod is gone", err, node)}}
	}
	if a, _ := rdma.DecodeAllocated(h.pod.Annotations[rdma.AnnotationDeviceAllocated]); len(a.RDMA) == 0 && len(a.Other) > 0 {
		// Another type's list (gpu) this plugin cannot read: not its business.
		return nil
	}
	return []notice{{object: h.pod, reason: ReasonAllocationIgnored, message: fmt.Sprintf(
		"%v; the pod asks for no %s, so the annotation is ignored", err, rdma.ResourceRDMA)}}
}

// changedMessage says how a recorded pod's annotations changed.
func changedMessage(h *holding) string {
	what := rdma.AnnotationDeviceAllocated
	if v, ok := h.pod.Annotations[what]; !ok {
		what += " was removed"
	} else {
		what = fmt.Sprintf("%s is now %q", what, truncate(v, 200))
	}
	return fmt.Sprintf("pod %s: %s (or its allocate hint changed) after it was bound; it still holds what the scheduler counted for it (%s) until it is gone: edits of the annotation do not release devices its containers use",
		rdma.PodName(h.pod), what, describe(h.alloc))
}

// describe lists an allocation's devices for a message.
func describe(a rdma.Allocation) string {
	var parts []string
	for _, n := range a.NICs {
		if n.Whole {
			parts = append(parts, "PF "+n.BDF.String())
		}
		for _, v := range n.VFs {
			parts = append(parts, "VF "+v.BDF.String())
		}
	}
	for _, g := range a.GPUs {
		parts = append(parts, fmt.Sprintf("GPU %d", g.Minor))
	}
	if len(parts) == 0 {
		return "no devices"
	}
	return strings.Join(parts, ", ")
}

// unknownHoldings is the error of a node with a trusted pod whose annotation cannot
// be used: it names the pod and what is wrong. It wraps neither of rdma's sentinels:
// preempting that pod, or a change of its annotation, makes the node usable again.
func unknownHoldings(node string, h *holding) error {
	return &rdma.Error{Reason: rdma.ReasonInvalidAllocation, Message: fmt.Sprintf(
		"node %s: what pod %s holds is unknown (%v); no RDMA pod is placed on this node until that annotation is fixed or the pod is gone", node, rdma.PodName(h.pod), h.err)}
}

// nodeError is a node the plugin refuses for a reason of its own, which no
// preemption there can change (UnschedulableAndUnresolvable).
type nodeError struct {
	Reason  kplan.Reason
	Message string
}

func (e *nodeError) Error() string { return e.Message }

// truncate shortens s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
