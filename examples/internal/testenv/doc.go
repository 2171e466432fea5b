// Package testenv starts a real kube-apiserver and etcd for the examples' integration
// tests (controller-runtime envtest), building both binaries from Go modules, and
// plays a node's kubelet on it.
//
// # Binaries
//
// The binaries are built from the tool modules under examples/tools/envtestbin
// (kube-apiserver from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3), each
// its own Go module so their dependencies never enter examples/go.mod. They are cached
// in examples/.envtest/bin (git-ignored) together with a stamp: a hash of the tool
// modules' go.mod, go.sum and main.go, the build flags and the Go version. A cache
// whose stamp differs is rebuilt; a file lock keeps parallel test binaries from
// building twice. The first build takes several minutes (the API server is large);
// run `go -C examples run ./internal/testenv/prebuild` to build ahead of the tests.
//
// When KUBEBUILDER_ASSETS names a directory holding kube-apiserver and etcd, those
// are used and nothing is built.
//
// EnsureScheduler, EnsureControllerManager and EnsureLWS build kube-scheduler with
// kplan's RDMA plugin, kube-controller-manager and the LeaderWorkerSet controller
// into the same cache, each with its own stamp; they are never taken from
// KUBEBUILDER_ASSETS. LWSSourceDir returns the sigs.k8s.io/lws module the LWS
// binary is built from, whose config directory holds its CRDs and webhooks.
//
// # Kubelet
//
// envtest runs no scheduler, kubelet or controller manager: a pod never leaves
// Pending, and the API server deletes an unbound pod at once, with no graceful
// termination. StartKubelet plays a node (and the scheduler for its pods): it binds
// pods, starts their containers, restarts a container whose image changed, reports
// Ready from the containers and readiness gates, and removes a deleted pod only
// after its termination, each after a delay of the options. See Kubelet.
package testenv
