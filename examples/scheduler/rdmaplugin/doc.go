// Package rdmaplugin is a kube-scheduler plugin that allocates RDMA NICs (whole PFs or
// SR-IOV VFs, alone or jointly with GPUs) with kplan's rdma package, from koordinator's
// Device objects (scheduling.koordinator.sh/v1alpha1, one per node).
//
// # Extension points
//
//   - PreFilter decodes the pod's request (rdma.RequestFromPod: the koordinator.sh/rdma
//     resource and the allocate-hint and joint-allocate annotations) once per cycle.
//     Pods without a request skip the plugin.
//   - Filter fits the request against the node's inventory and what bound pods (from
//     their device-allocated annotations) and reserved pods (assumed, still binding)
//     hold. Not enough free devices now is Unschedulable; a request the node can never
//     satisfy is UnschedulableAndUnresolvable. The status carries rdma's reason
//     (InsufficientDevices, TooFewDevices, ...) and message as they are: the message
//     names the node and what ran out (what is free, or what the node has).
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
// and what pods hold (rebuilt from the bound pods' annotations when they change, plus
// reservations), counting only the pods the scheduler's NodeInfo of the node has: the
// scheduler's cache and the plugin's informer see a deletion at slightly different
// times, and a pod retried on the scheduler's event must find the devices free.
// Nothing else is remembered across restarts: a restarted scheduler rebuilds the state
// from the annotations, which every bound pod carries from its binding on, so no
// device is handed out twice.
//
// Pods rejected by the plugin are requeued when a pod holding devices is deleted (only
// if the pod could fit some node at all), and when a node or Device object is added
// or changed.
//
// # Arguments
//
// See Args: capacityModel (Count or Percent), scoringStrategy (LeastAllocated or
// MostAllocated), topologyWeight (0..100).
package rdmaplugin
