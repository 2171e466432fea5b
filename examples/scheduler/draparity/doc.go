// Package draparity compares kplan's rdma.Allocate with the Kubernetes DRA structured
// allocator (k8s.io/dynamic-resource-allocation/structured, what the DRA scheduler
// plugin runs) on the same inventory, published with rdma.DRADevices, and the same
// requests expressed as ResourceClaims. It holds only tests and benchmarks.
package draparity
