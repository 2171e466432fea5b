// Package rdma plans RDMA NIC allocation: PF/VF inventory, node capacity, allocation
// with PCI addresses (jointly with GPUs), and the koordinator annotations that carry it.
//
// # Overview
//
// Nodes report RDMA NICs in koordinator's Device object: physical functions (PFs) with
// their SR-IOV virtual functions (VFs) and topology (socket, NUMA node, PCIe root, PCI
// address "BDF"). [NewInventory] validates one ([ValidateNode], a field.ErrorList) and
// indexes it; everything else reads the [Inventory]:
//
//   - [Capacity]: koordinator.sh/rdma for node status, in the design's [CountModel] (VFs
//     in VF mode, else PFs; mixed modes are an error) or upstream's [PercentModel]
//     (healthy PFs x 100). Unhealthy devices never count.
//   - [Allocate]: the entry point. A [Request] (count or all, PF and VF-group label
//     selectors, designated VFs, exclusivity, topology scope, joint GPUs) against what
//     [Used] says other pods hold gives an [Allocation].
//   - [EncodeAllocated] / [DecodeAllocated]: the scheduling.koordinator.sh/device-allocated
//     annotation. [DecodeAllocateHints], [DecodeJointAllocate] and [RequestFromPod] turn
//     a pod's hint annotations and resources into a Request.
//   - [UsedByPods], [AllocationFromPod], [Fits], [Score]: scheduler-plugin helpers
//     (see Scheduler plugins below); [NodeFromDevice] reads the Device object.
//   - [DeviceIDs], [DeviceIDsFromPod], [PCIDeviceEnv]: what the CNI side (Multus
//     deviceID, PCIDEVICE_<RESOURCE>) passes into the container.
//   - [DRADevices]: the same inventory as DRA (resource.k8s.io/v1) devices for a
//     ResourceSlice.
//
// [ParseBDF] and [BDF] handle PCI addresses: 4 or 5 hex digit domains, device <= 0x1f,
// function <= 7, upper case normalised to lower, numeric ordering.
//
// # Algorithm
//
// Allocate works in four steps.
//
//  1. Candidates. PFs matching Selector (and, for VFs, having a VF whose group matches
//     VFSelector), in BDF order. A candidate is unusable when unhealthy, held whole,
//     held exclusively, on an exclusively held PCIe root, (for whole PFs) has VFs in use,
//     (ExclusiveDevice) has VFs in use, (ExclusivePCIe) is on a root where other pods
//     hold anything or whose root is unknown, or lacks the RailLabel. Its free units are
//     the PF itself or its free matching VFs in BDF order. Designated VFs are taken
//     first and must be free and matching.
//  2. Scope groups. RequiredTopologyScope splits candidates (and GPUs) into groups: one
//     group for Node; one per PCIe root, per known NUMA node, or per PF (Device). PFs
//     with an unknown root or NUMA node (-1) belong to no PCIe or NUMA group: -1 is never
//     node 0. Groups are tried in key order; the first that holds the request wins (as in
//     DRA, no scoring across groups).
//  3. GPUs (joint requests). With SamePCIe required (or preferred), the GPU PCIe roots
//     are chosen first: the smallest set S of roots such that every root in S has a
//     free GPU and a free NIC unit, |S| <= GPUs, |S| <= NICs (unless NICPerGPURoot or
//     All, where the NIC count follows the roots), and S holds enough of both. Among
//     sets of that size it takes the best fit: the first in the order of fewest free
//     GPUs, then root, so partly used roots are filled before whole ones are broken
//     into (as koordinator prefers non-empty topology scopes). The search is an exact
//     dynamic programme over (root, roots chosen, GPUs still needed) that keeps the
//     most NIC units reachable, in O(roots x min(GPUs, NICs) x GPUs) time; no
//     exponential search, so it does not give up on large nodes. Each root in S gets
//     its lowest-minor GPU, the rest fill up the roots in that order. When no such S
//     exists, SamePCIe fails with the per-root counts; Preferred instead takes GPUs
//     from roots with NICs first, then roots with more free GPUs, unknown roots last.
//  4. NICs. Without GPUs: candidates in order of score (for VFs, PFs already shared
//     first, so whole PFs stay free), then PCIe root, then BDF; each gives its units in
//     BDF order (one when OneVFPerPF or RailLabel is set). With GPUs: round-robin across
//     the GPUs' roots (one unit per root per turn, rotating over the root's PFs); with
//     SamePCIe that is all, and every GPU root must get a NIC; otherwise PFs on the GPUs'
//     known NUMA nodes follow, then the rest, each by root then BDF. With
//     NICPerGPURoot (what RequestFromPod asks for koordinator's joint pods) the count
//     is one unit per GPU root, or Count if more: koordinator's 2/2/3/4 NICs for
//     3/4/6/8 GPUs on two-GPU roots.
//
// Failures name the node and what ran out: the count needed, the selectors, and the
// PFs that ran out or cannot be used (or all when none did). A request that would fit
// were other pods' devices free says how many are free, e.g. "node n1: rdma: need 2
// VFs matching {rdma-type=storage}, 1 free (PF 0000:3b:00.0: 0 of 8 free)"; one that
// cannot fit even on an idle node says what the node has, e.g. "node n1: rdma: need
// 12 GPUs, node has 8" (see Errors).
//
// # Errors
//
// The errors of [NodeFromDevice], [NewInventory], [Capacity], [RequestFromPod],
// [Request.Validate], [UsedByPods], [AllocationFromPod], [Allocate], [Fits] and [Score]
// are [*Error] values: a Reason, an UpperCamelCase constant valid as it is as a
// metav1.Condition's Reason, an event's reason or the first reason of a scheduler
// status, and a human-readable Message that names the node (or pod) and what is wrong.
// The Reason decides the sentinel the error wraps, so errors.Is tells "not now" from
// "never":
//
//   - [ReasonInsufficientDevices] wraps [ErrInsufficient]: the node has the devices,
//     other pods hold them now.
//   - [ReasonTooFewDevices], [ReasonTopologyUnsatisfiable], [ReasonMixedNICModes],
//     [ReasonInvalidRequest], [ReasonInvalidInventory] and [ReasonInvalidOptions] wrap
//     [ErrUnsatisfiable]: not even an idle node would fit the request.
//   - [ReasonInvalidAllocation] wraps neither: a pod's annotation on the node cannot be
//     read, so what the node's pods hold is not known until that pod changes or goes.
//
// Every error of Allocate, Fits and Score wraps exactly one of the two sentinels.
//
// # Invariants
//
//   - Allocate never returns a PF or VF that Used holds, nor a PF both whole and as VFs,
//     nor anything on a PF or PCIe root another pod holds exclusively; every PF it
//     returns matches the selectors, every VF the VF selector.
//   - Exclusivity is recorded: Allocation.ExclusivePFs / ExclusiveRoots, which Used.Add
//     keeps, and UsedByPods rebuilds from the pods' allocate-hint annotations, so a later
//     Allocate honours it.
//   - Deterministic: the same inventory (in any device order), Used and Request give the
//     same Allocation. Inputs are never mutated.
//   - Complete: when Allocate fails, no allocation satisfying the request exists (tested
//     against brute force on small inventories), except for the documented RailLabel
//     bound below.
//   - EncodeAllocated then DecodeAllocated gives back the allocation; other device types
//     in the annotation are kept byte for byte (compacted).
//
// # Differences from the design
//
//   - The design's annotation carries the PF BDF in busID; koordinator upstream carries it
//     in id. [Entries] writes both; [DecodeAllocated] reads either (both must agree).
//   - The design counts capacity as VFs or PFs; upstream as PFs x 100. Both are offered,
//     named, chosen by the caller.
//   - Upstream takes one VF per PF; here VFs fill a PF before the next unless
//     [Request].OneVFPerPF is set (as [RequestFromPod] does under [PercentModel]).
//     Plain VF requests prefer PFs already shared.
//   - Upstream lets several pods share a PF without VFs by percent (koordinator.sh/rdma
//     below 100 each); here a PF allocated without VFs is held by one pod.
//   - Koordinator's tests run as data: testdata/koordinator holds the cases of its
//     allocator tests (v1.8.0) with the devices it expects; kplan gives the same
//     devices in all but three, each recorded there with the reason (an impossible
//     fixture, a node mode kplan does not have, and a pod kplan places where
//     koordinator gives up).
//   - The inventory type is the indexed [Inventory], not the raw Device object, so it is
//     validated and indexed once per node, not per pod. Likewise keep each node's
//     [Used] (from [UsedByPods], updated with [Used.Add] and [Used.Remove] as pods are
//     reserved, unreserved and deleted) between scheduling cycles: decoding the pods'
//     annotations costs about ten times a [Fits] on a kept Used.
//   - A gpu list already in the device-allocated annotation (a GPU plugin's, with its
//     shares) is kept as is by [EncodeAllocated].
//   - The GPU resources written for a jointly allocated GPU are gpu-core and
//     gpu-memory-ratio 100 (a whole GPU); GPU memory in bytes is not known here.
//   - RailLabel with SamePCIe: the root search counts rails per root; a rail value that
//     spans two roots may make it report no fit where a matching exists. Real
//     rail-optimised nodes have one NIC per rail, so this does not arise there.
//   - PCIe-level exclusivity on a NIC with an unknown PCIe root is recorded as device
//     level; an ExclusivePCIe request never takes a NIC with an unknown root.
//
// # Compatibility with koordinator and DRA
//
// The JSON tags of [DeviceInfo], [DeviceTopology], [VirtualFunctionGroup],
// [DeviceAllocation], [DeviceHint] and [DeviceJointAllocate] are koordinator's. The
// topology maps onto DRA (resource.k8s.io) device attributes: pcieID is
// resource.kubernetes.io/pcieRoot, so SamePCIe is DRA's matchAttribute on pcieRoot and
// RailLabel is distinctAttribute on the rail attribute; selectors correspond to CEL
// selectors on the device labels. [DRADevices] writes exactly these attributes (the
// standard resource.kubernetes.io pcieRoot, numaNode and pciBusID, plus kind, parent PF,
// minor and labels under rdma.kplan.dev), leaving unknown NUMA nodes and roots out
// rather than writing 0. DRA takes the first full solution; Allocate likewise takes the
// first group in key order, but orders devices inside it by the rules above.
//
// # Scheduler plugins
//
// A kube-scheduler plugin uses the package per extension point as follows.
//
//   - Device objects: watch koordinator's Device ([DeviceGroup], [DeviceVersion],
//     [DeviceResource]) and build each node's [Inventory] once per object version with
//     [NodeFromDevice] and [NewInventory]. An inventory error (ReasonInvalidInventory,
//     wrapping ErrUnsatisfiable) makes the node unschedulable for RDMA pods
//     (UnschedulableAndUnresolvable) until the object changes.
//   - PreFilter: [RequestFromPod] once per pod; skip the pod when the [Request]
//     [Request.IsZero] (return Skip). A decoding error or a failing [Request.Validate]
//     (ReasonInvalidRequest, wrapping ErrUnsatisfiable) means the pod fits no node:
//     UnschedulableAndUnresolvable.
//   - State: keep one [Used] per node across cycles. Build it from the node's pods'
//     annotations with [UsedByPods] (at start-up, and after a restart, so nothing is
//     handed out twice); then Reserve calls [Used.Add] with the pod's [Allocation],
//     Unreserve and pod deletion call [Used.Remove] with the same Allocation (or, when
//     only the pod is at hand, with [AllocationFromPod]). Used counts holders, so
//     releasing one pod never frees a device another pod also holds (GPU shares).
//     A Used lives behind a pointer (go vet reports a copy by value): give snapshots
//     a [Used.Clone].
//   - Filter: [Fits]. Every error it (and [Allocate], [Score]) returns wraps exactly
//     one sentinel, tested with errors.Is:
//     [ErrInsufficient] (the devices exist but are held now) maps to
//     framework.Unschedulable, so the pod is retried when pods go and preemption may
//     help; [ErrUnsatisfiable] (not even an idle node would fit it) maps to
//     framework.UnschedulableAndUnresolvable. The [*Error]'s Reason and Message go
//     into the status (and events) as they are.
//   - Score: [Score], 0..[MaxScore].
//   - Reserve: [Allocate] (the same result Filter saw for the same Used), then
//     [Used.Add].
//   - Bind: write [EncodeAllocated]'s value as the [AnnotationDeviceAllocated]
//     annotation of the Binding object; the API server copies a Binding's
//     annotations onto the pod, so the pod is bound and annotated in one write, and a
//     binding that fails leaves no stale annotation behind. A plugin that is not the
//     binder writes the annotation in PreBind instead, and replaces its own earlier
//     value when the pod is retried after a failed binding.
//   - Preemption: count the devices of the pods the scheduler's view of the node
//     holds (its NodeInfo), not a separate list, so that the victims a preemption
//     dry run removes from that view free their devices; a pod nominated to the node
//     holds what it would be given there (PreFilter's AddPod and RemovePod).
//
// # Example
//
//	inv, err := rdma.NewInventory(node)          // once per Device object
//	used, err := rdma.UsedByPods(inv, podsOnNode) // what is taken, a *Used
//	req, err := rdma.RequestFromPod(pod, rdma.CountModel)
//	alloc, err := rdma.Allocate(inv, used, req)
//	value, err := rdma.EncodeAllocated(pod.Annotations[rdma.AnnotationDeviceAllocated], alloc, rdma.CountModel)
package rdma
