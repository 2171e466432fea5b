// Package configmapset is the example operator's ConfigMapSet controller
// (CRD apps.kplan.dev/v1alpha1, package examples/api/configmapset/v1alpha1, whose
// types are package revision's).
//
// # What it embeds of kplan
//
// Package revision's planning half: each reconcile calls revision.Validate and
// revision.Plan with the set, its hub ConfigMap and the pods its selector matches,
// then writes the hub (created with ComponentHub, so the operator's cache sees
// it), the pods' revision annotations (the plan's merge patches) and the status,
// in that order, so a pod never names a revision the hub does not hold yet. The
// condition ConditionComplete is taken from the plan's Complete and Waiting: True
// (RolloutComplete, or Partitioned while the partition keeps pods on older
// revisions) or False with the reason and message of the first pod that waits. The
// plan's events are recorded on the set.
//
// A set with spec.updateStrategy.type External writes no pod's wanted revision:
// the pods' owner does (the ModelServing controller, for a ModelServing that names
// the set in spec.configMapSet, releasing the data with its pods under one
// budget). The hub, the status and the condition are kept as above; a pod waiting
// for its owner is UpdatedByOwner.
//
// The pod side is elsewhere: package podwebhook injects the set's volumes and
// reload sidecar into new pods (revision.Inject), and the sidecar (package
// examples/reload) writes the files and marks its pod current (revision.Restarts,
// revision.MarkCurrent).
package configmapset
