// Package webhookpatch mutates pods idempotently and computes the RFC 6902 patches a
// mutating admission webhook returns.
//
// # Overview
//
// A webhook deep-copies the pod it is asked about, calls the [Injector] primitives on
// the copy, checks the result with [Validate], and returns [Diff] of the two as the
// patch ([Patch] gives the bytes and patch type). Webhooks are invoked again
// (reinvocationPolicy IfNeeded) and pods are re-created from templates, so:
//
//   - every Ensure primitive is idempotent: a second call changes nothing and
//     [Diff] then returns no operations, also on the pod as the API server stored it
//     (strings that are not valid UTF-8 are written as the API server keeps them, with
//     U+FFFD for every bad byte);
//   - names the API server would reject are errors, never injected: env var names
//     follow the rule of Kubernetes 1.34 and later (printable ASCII without '=');
//   - what an injector injected is recorded in one annotation, [RecordAnnotation]
//     (names plus content hashes, no timestamps), so an injector can update its own
//     objects, tell them apart from the user's, and [Injector.Strip] them;
//   - a same-named object that differs and is not ours is a conflict error wrapping
//     [ErrConflict], never silently kept or overwritten;
//   - an injection of several steps runs through [Injector.Apply], on a copy: when a
//     step fails half-way the pod is left exactly as it was, and the [Result] says
//     whether the pod changed and which recorded items were added, changed or
//     removed.
//
// Sidecars run as native sidecars (init containers with restartPolicy Always) from
// Kubernetes 1.29 on and as the first app container with OpenKruise's container launch
// priority before; [SidecarModeFor] picks the mode from the cluster version. Several
// webhooks (or several injectors in one webhook) can share a pod: a [ContainerSelector]
// that names no containers skips the containers another injector added, so a sidecar
// placed among the app containers never receives another injector's mounts and env
// vars, and webhooks that invoke each other again reach a fixed point after one round.
//
// [MergeContainer] and [MergePodSpec] merge runtime defaults with user overrides the
// way KServe does, and [AddFinalizer], [RemoveFinalizer], [AddFinalizerPatch] and
// [RemoveFinalizerPatch] manage finalizers in place or as merge patches.
//
// # How Diff builds a patch
//
// [Diff] compares the two pods field by field, as their JSON encodings. A field present
// in only one pod is added or removed whole; present in both, it is compared: strings,
// numbers, quantities and times are replaced when their values differ; maps are diffed
// key by key in sorted order; lists whose elements have a Kubernetes merge key
// (containers and volumes by name, mounts by mountPath, env by name, ...) and lists of
// distinct strings are matched by key:
//
//  1. if before's keys are a prefix of after's, elements are diffed in place and the
//     rest appended with "add /-";
//  2. otherwise removed keys are removed from the highest index down, and after is
//     walked in order: kept elements are diffed in place, new ones added at their
//     index (or "/-" when nothing of before follows);
//  3. if kept elements changed their relative order, the list is replaced whole.
//
// Lists without keys are diffed by position with their tail appended or removed.
//
// # Invariants
//
//   - Applying Diff(before, after) to before's JSON yields after's JSON (tested with
//     evanphx/json-patch, the library the API server applies patches with).
//   - Diff never mutates its inputs and returns operations in a deterministic order.
//   - Applying a primitive twice equals applying it once; every primitive's result
//     passes [Validate] when its input did. In particular a primitive that would take
//     the pod's annotations (the injection record included) over Kubernetes' 256 KiB
//     limit (k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB) returns
//     an error instead.
//   - A primitive that returns an error leaves the pod unchanged; so does an
//     [Injector.Apply] whose injection returns an error, whatever it changed before
//     the error.
//
// # Differences from the design
//
//   - The ranktable design injects its init container without recording it; here every
//     injection is recorded so re-invocation is idempotent and conflicts are reported.
//   - The ConfigMapSet design uses OpenKruise's container launch priority below
//     Kubernetes 1.28 and native sidecars from 1.28; here native sidecars start at
//     1.29, because in 1.28 the SidecarContainers gate is off by default and the API
//     server drops the restartPolicy, which would leave the sidecar blocking the
//     pod's start for ever.
//   - KServe's merge leaves both value and valueFrom when runtime and user set different
//     ones; here the user's choice wins whole.
package webhookpatch
