// Package operator wires the example operator: a controller-runtime manager that
// embeds kplan, the I/O half that the library's pure plans leave to their users.
// Each controller is a package of its own, which says what of kplan it embeds:
//
//   - modelserving: ModelServings (CRD serving.examples.kplan.dev/v1alpha1), whose
//     pods it creates and rolls out with package rollout; the reference for
//     embedding rollout.
//   - ranktables: the rank table ConfigMaps of ModelServings annotated with a
//     ranktable template, planned with package ranktable, and of the other owner
//     kinds Options.RanktableOwners names (LeaderWorkerSet, DisaggregatedSet,
//     kthena's ModelServing: see OWNERS.md).
//   - configmapset: ConfigMapSets (CRD apps.kplan.dev/v1alpha1), planned with
//     package revision.
//   - rdmacapacity (Options.NodeRDMACapacity): nodes' koordinator.sh/rdma capacity
//     from koordinator's Device objects, counted with package rdma.
//   - podwebhook: the pod mutating webhook, injecting ranktable mounts
//     (ranktable.Inject) and ConfigMapSet sidecars (revision.Inject), answering
//     with webhookpatch.Diff.
//
// The Kubernetes mechanics the ModelServing controller needs and kplan leaves out
// (ControllerRevision history, expectations, in-place updates) are packages
// of examples/internal. The ConfigMapSet reload sidecar is package examples/reload,
// which depends on neither this package nor the controllers.
//
// This package holds what one process running them all needs: Setup (the
// controllers and the webhook on a manager), NewScheme, CacheOptions (the manager
// caches only what the operator reconciles), NewWebhookServer (HTTP/1.1, the API
// server's client certificate), MetricsServerOptions (authenticated and authorized
// scrapes) and CheckImage (the images it injects are pinned). The binary is
// examples/cmd/kplan-operator.
//
// Manifests: examples/config (CRDs, RBAC and admission policies, webhook
// configuration, deployment, the API server's client certificate for the webhook).
// The integration tests of this package run the whole operator, as its
// ServiceAccount, against a real kube-apiserver and etcd (see DEVELOPERS.md).
package operator
