// Package rdmacapacity is the example operator's node RDMA capacity controller
// (optional: operator.Options.NodeRDMACapacity).
//
// # What it embeds of kplan
//
// Package rdma's capacity counting: for each node it reads koordinator's Device
// object (rdma.NodeFromDevice, rdma.NewInventory), counts the node's
// koordinator.sh/rdma with rdma.Capacity under either capacity model, and keeps the
// node's status.capacity and status.allocatable equal to it, with a Warning event
// carrying the rdma error's reason and message when a Device cannot be counted.
package rdmacapacity
