// Package operator is a tiny controller-runtime operator that embeds kplan: it is the
// I/O half that the library's pure plans leave to their users.
//
// # Overview
//
//   - RanktableReconciler: owners are StatefulSets annotated kthena.io/ranktable-template.
//     It loads the template ConfigMaps from the templates namespace, calls
//     ranktable.Planner.Plan with the owner's pods and ranktable ConfigMaps, creates and
//     updates the ConfigMaps (re-reading and re-planning on resourceVersion conflicts),
//     records the plan's events, sets the owner's RanktableReady status condition
//     (False with the failing template and limit), exports the design's metrics and
//     requeues as the plan says. Why the webhook never renders templates: README.md.
//   - ConfigMapSetReconciler: ConfigMapSets (CRD apps.kplan.dev/v1alpha1, the
//     revision package's types) get their hub ConfigMap, pod annotations and status
//     from revision.Plan.
//   - PodMutator: a mutating admission webhook for pod CREATE that injects the ranktable
//     volume, wait init container and mounts (ranktable.Inject) and each matching
//     ConfigMapSet's emptyDir, reload sidecar and mounts (revision.Inject), and answers
//     with webhookpatch.Diff of the pod before and after.
//
// Manifests: examples/config (CRD, RBAC, webhook configuration, deployment); the
// integration tests run against a real kube-apiserver and etcd (see DEVELOPERS.md).
//
// # Expected pods
//
// A bare StatefulSet says how many pods it wants but not how they split into groups.
// When the pod template's labels place pods in a group (ranktable.KeyOf of the
// template is not empty) that group expects spec.replicas pods, so a deleted pod resets
// the table. Otherwise the pods' own labels form the groups and each group expects the
// pods it has.
package operator
