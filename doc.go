// Package kplan is a library of side-effect-free planning functions for Kubernetes
// controllers that run distributed AI inference.
//
// A controller, an admission webhook or a scheduler plugin hands a kplan package the
// state it observed and gets back the state it should write. No package talks to an
// API server, reads a file, the clock or the environment, or logs: time comes in as a
// parameter, inputs are never mutated, and the same input in any order gives
// byte-identical output.
//
// # Packages
//
//   - [github.com/kplan-dev/kplan/ranktable]: Ascend HCCL rank tables for the pods of a
//     role or group, the ConfigMaps to write and the pod mutation that holds the engine
//     until the table is complete.
//   - [github.com/kplan-dev/kplan/rollout]: rolling, gang and group rolling updates,
//     rollback and recover of abstract replicas.
//   - [github.com/kplan-dev/kplan/revision]: ConfigMapSet planning: configuration
//     versions released independently of images.
//   - [github.com/kplan-dev/kplan/rdma]: RDMA PF/VF inventory, node capacity and
//     allocation with PCI addresses, for scheduler plugins.
//   - [github.com/kplan-dev/kplan/webhookpatch]: idempotent pod mutations, the RFC 6902
//     patches an admission webhook returns, container merging and finalizers.
//
// # Embedding
//
// Each package has one entry point that a reconciler calls once per reconcile (for
// example webhookpatch.Diff, rollout.Plan) and small building blocks beside it. The
// caller does the I/O: it reads objects from its cache, calls the planner, and writes
// what the plan says. The examples module in this repository shows a complete
// controller-runtime operator doing so.
//
// # One vocabulary
//
// The packages speak the same language to the controller that embeds them:
//
//   - every reason a package returns (a rollout wait, a rank table's failure, a
//     revision's event, a device request that can never fit) is a [Reason]: an
//     UpperCamelCase constant a reconciler puts in a metav1.Condition or an event as
//     it is, with the human sentence beside it in a Message;
//   - every event is an [Event] with the object it is about;
//   - every desired object comes with an [Action], ActionNone included;
//   - every pod injection (ranktable.Inject, revision.Inject) applies everything or
//     leaves the pod exactly as it was, and reports what it changed as a
//     webhookpatch.Result.
package kplan
