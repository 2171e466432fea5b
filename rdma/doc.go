// Package rdma plans RDMA PF/VF inventory, node capacity and allocation with PCI addresses.
//
// It is being built (issue 5); nothing is exported yet.
package rdma
