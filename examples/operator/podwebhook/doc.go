// Package podwebhook is the example operator's mutating admission webhook for pod
// CREATE.
//
// # What it embeds of kplan
//
//   - ranktable: into the pods of a ModelServing annotated with a ranktable
//     template (their controller reference names it) it injects the ranktable
//     volume, wait init container and mounts (ranktable.PodConfigMapName names the
//     table, ranktable.Inject mounts it in the engine containers); and into the
//     pods of the Mutator's other owner kinds (Mutator.Owners: a pod carrying a
//     kind's owner label is that owner's, whatever its controller), when the owner
//     is annotated. A foreign owner's pod without its group labels yet is left as
//     it is: the owner's own webhook (LWS's) may set them after this one, and
//     reinvocationPolicy IfNeeded calls this webhook again. It loads the template
//     with ranktables.LoadTemplate and never renders it.
//   - revision: into pods each matching ConfigMapSet selects it injects the set's
//     emptyDir, hub volume, reload sidecar and mounts (revision.Inject, whose
//     environment configures the reload agent, package examples/reload), then gives
//     the sidecar a restricted security context and labels the pod
//     LabelConfigMapSetPod.
//   - webhookpatch: the injected pod must pass webhookpatch.Validate, and the answer
//     is webhookpatch.Diff of the pod before and after, as a JSON patch.
//
// A conflict with the user's own objects rejects the pod; nothing is skipped
// silently. Why the webhook fails closed and never renders templates:
// examples/operator/README.md.
package podwebhook
