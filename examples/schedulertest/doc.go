// Package schedulertest runs kplan's RDMA scheduler plugin (the module in
// examples/scheduler) inside the real kube-scheduler against a real kube-apiserver
// (envtest), and the same inventories through the real DRA allocator. It holds only
// tests; see examples/scheduler/README.md.
package schedulertest
