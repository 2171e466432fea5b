// Package rdmaplugin is a kube-scheduler plugin that allocates RDMA NICs (whole PFs or
// SR-IOV VFs, alone or jointly with GPUs) with kplan's rdma package, from koordinator's
// Device objects (scheduling.koordinator.sh/v1alpha1, one per node).
//
// # Extension points
//
//   - PreFilter decodes the pod's request (rdma.RequestFromPod: the koordinator.sh/rdma
//     resource and the allocate-hint and joint-allocate annotations) once per cycle.
//     Pods without a request skip the plugin, except pods with resource claims while
//     ResourceSlices are watched: Filter keeps those off nodes whose devices are
//     also published for DRA.
//   - Filter fits the request against the node's inventory and what bound pods (from
//     their device-allocated annotations) and reserved pods (assumed, still binding)
//     hold. Not enough free devices now is Unschedulable; a request the node can never
//     satisfy, and a node without a usable Device object, are
//     UnschedulableAndUnresolvable, so preemption does not try the node. The status
//     carries rdma's reason (InsufficientDevices, TooFewDevices, ...) and message as
//     they are: the message names the node and what ran out (what is free, or what
//     the node has).
//   - Score is rdma.Score (LeastAllocated or MostAllocated, plus a topology share).
//   - Reserve allocates and holds the devices; Unreserve releases them.
//   - Bind, when the plugin is the profile's first bind plugin (as in the checked-in
//     configuration), binds the pods it allocated devices to with a Binding carrying
//     scheduling.koordinator.sh/device-allocated, which the API server writes onto the
//     pod with the node name; other pods go to the next binder. Otherwise PreBind
//     writes the annotation before DefaultBinder binds; a pod retried after a failed
//     binding then carries the annotation of the failed attempt, which PreBind
//     replaces (gpu list included when the plugin chose the GPUs).
//   - SignPod signs pods by their request, so identical pods that fill a node may be
//     batched by the scheduler.
//   - Preemption: Filter counts only the pods in the NodeInfo it is given, so the
//     scheduler's dry run, which removes victims from a copy of the NodeInfo, sees
//     their devices free. AddPod and RemovePod (PreFilterExtensions) count a pod
//     nominated to a node (after its preemption) as holding what it would get there,
//     so pods of lower or equal priority do not take the devices freed for it.
//
// # State
//
// The plugin keeps, per node, the inventory (rebuilt when the Device object changes)
// and what each bound pod holds, plus reservations, counting only the pods the
// scheduler's NodeInfo of the node has: the scheduler's cache and the plugin's
// informer see a deletion at slightly different times, and a pod retried on the
// scheduler's event must find the devices free. What a bound pod holds is recorded
// once: what the plugin reserved for it, else (after a restart) its first usable
// device-allocated annotation. Later edits of its annotations are reported with a
// Warning event and not counted. Nothing else is remembered across restarts: a
// restarted scheduler rebuilds the state from the annotations, which every bound pod
// carries from its binding on, so no device is handed out twice.
//
// A pod that asks for RDMA devices must carry an annotation that decodes, names
// devices of the node and matches its request; if it does not and nothing was
// recorded for it, what it holds is unknown and its node takes no RDMA pod
// (Unschedulable, naming the pod) until the annotation is fixed or the pod is gone. A
// pod that asks for none was never given devices by the plugin: the devices its
// annotation names are counted without its allocate hint's exclusivity, and an
// annotation that cannot be used is ignored. Every such case is logged and reported
// as a Warning event on the pod once per change of its annotations (reasons
// ReasonAllocationUnusable, ReasonAllocationChanged, ReasonAllocationIgnored,
// ReasonAllocationNotRequested), and counted in the metric
// kplan_rdma_annotation_problems_total.
//
// Problems of a Device object (VFs left out because their PCI address is not valid,
// or an object that cannot be used) are reported once per change: a Warning event on
// the Device object (ReasonDeviceVFsSkipped, ReasonDeviceInvalid), a log line, and
// the gauges kplan_rdma_device_vfs_skipped and kplan_rdma_device_invalid.
//
// A node whose Device object and a node-local ResourceSlice publish the same devices
// (by PCI address) is refused to pods asking for RDMA devices and to pods with
// resource claims alike (UnschedulableAndUnresolvable), unless Args.DRAOverlap is
// Ignore: two allocators would hand the same devices out.
//
// # Retries
//
// Queueing hints retry a pod the plugin rejected when a pod that may hold devices is
// deleted or finishes (only if the pod could fit some node at all), when a bound
// pod's device-allocated or allocate-hint annotation changes, when the pod's own
// request annotations change, when a node is added or its allocatable changes, when
// a Device object is added, changed or deleted, and when a ResourceSlice changes or
// is deleted.
//
// # Arguments
//
// See Args: capacityModel (Count or Percent), scoringStrategy (LeastAllocated or
// MostAllocated), topologyWeight (0..100), draOverlap (Refuse or Ignore).
package rdmaplugin
