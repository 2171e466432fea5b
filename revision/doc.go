// Package revision plans ConfigMapSets: configuration files versioned and released
// beside a workload, independently of its images, with several versions serving at
// once.
//
// # Overview
//
// A reconciler calls [Plan] once per reconcile with the set, its hub ConfigMap, the
// matched pods and the time. Plan returns the hub ConfigMap with what to do with it
// (a kplan.Action: create, update or nothing), the pod patches, the new status,
// events (kplan.Event, naming the set), the cold pods it leaves alone
// ([Result.Cold]), why each pod that is not current waits ([Result.Waiting]) and
// whether the rollout is complete as far as the partition allows
// ([Result.Complete]). Every reason is a kplan.Reason constant of this package,
// valid as is as an event's and a condition's reason. A mutating webhook calls
// [Inject] for new pods: all or nothing, reporting what it injected as a
// webhookpatch.Result. The node side calls [Restarts] and [MarkCurrent]; the reload
// sidecar calls [Hub.Files]. Building blocks: [Validate], [RevisionHash], [Hub]
// ([DecodeHub], [Hub.Add], [Hub.Trim], [Hub.HubConfigMap]), [KeysFor] and
// [Keys.Read], [ResolvePartition].
//
//   - Every distinct spec.data is a revision named by [RevisionHash]: the first 16 hex
//     digits of SHA-256 over a canonical, length-prefixed encoding of the data (and of
//     the collision count when it is above zero). If the hub holds the name with
//     different data, the count is bumped and the data rehashed;
//     status.collisionCount keeps it.
//   - The hub ConfigMap "{name}-hub" ([HubName]) holds every kept revision as a JSON
//     list, oldest first, under [HubDataKey]. Data equal to an old revision moves that
//     revision to newest.
//
// Key scheme (see [Keys]): for a set named N, with S = N when N has at most
// 25 characters, else its first 16 characters, "-" and 8 hex
// digits of its hash:
//
//	apps.kruise.io/configmapset.S.updateRevision            wanted revision (controller)
//	apps.kruise.io/configmapset.S.updateRevisionTimestamp   ms since epoch (controller)
//	apps.kruise.io/configmapset.S.currentRevision           confirmed revision (node side)
//	apps.kruise.io/configmapset.S.currentRevisionTimestamp  ms since epoch (node side)
//	apps.kruise.io/configmapset.S.updateOrder=1             label (with injectUpdateOrder)
//
// # Algorithm
//
// Plan, for n non-terminating pods:
//
//  1. Validate the set; decode the hub; add spec.data (create, or move an equal old
//     revision to newest): that is the update revision U.
//  2. Cold start: when the hash of spec.containers differs from
//     status.lastContainersHash, status.lastContainersTimestamp becomes now, rounded
//     up to a whole second (the API server stores whole seconds, so a pod created in
//     that second stays cold across reconciles). Pods
//     created before it are cold: never changed (they lack the new mounts). Pods
//     without the set's reload sidecar (not injected: the webhook failed open or
//     injection was paused) are cold too, and count against maxUnavailable only
//     when not ready, since they can never confirm a revision. Plan lists the
//     non-terminating cold pods in [Result.Cold], in name order, each with a
//     reason ([ReasonNotInjected] wins over
//     [ReasonCreatedBeforeContainersChange]) and a message.
//  3. Partition: kept = partition resolved against n ([ResolvePartition]: percent,
//     fractional allowed, rounds up; below 100% with n > 1 at least one pod
//     updates; clamped to [0, n]).
//     Pods to update: want = n - kept.
//  4. If fewer than want pods have wanted revision U, warm pods are picked in this
//     priority order (the design's implementation section's order):
//     (1) pods not on status.currentRevision before pods on it;
//     (2) among those, pods whose revision is not in the hub (or missing) first;
//     (3) then pods on older revisions (smaller hub index) first;
//     ties by namespace and name (byte order).
//  5. If more than want pods have U (partition raised), pods go back to
//     status.currentRevision: pods that have not confirmed U first, then in reverse
//     name order. With no older current revision in the hub nothing rolls back.
//  6. With restartInjectedContainers, changes are bounded by maxUnavailable
//     (default 1, percent rounds down but never to 0, at most n): unavailable pods are not-ready pods and pods whose wanted revision is not
//     confirmed (restarting); changing an already-unavailable pod is free, and
//     sending a restarting pod back to the revision it runs frees budget for pods
//     the plan tried before it.
//  7. Warm kept pods whose revision is not in the hub get the current revision (or U
//     when there is none): a pod cannot load a revision the hub does not hold.
//  8. Trim the hub to revisionHistoryLimit non-live revisions (default 10), oldest
//     first; live revisions (current, U, every pod's wanted and current) are kept.
//  9. Status counts pods after the plan; currentRevision becomes U once every pod is
//     updated (wanted = current = U) and ready. status.conditions are kept as given.
//  10. Waiting: every pod that is not current (on U, confirmed and ready, and not
//     sent back by a raised partition), in name order, with the first reason that
//     applies: the budget of step 6 held it back ([ReasonMaxUnavailableReached],
//     given to as many pods as steps 4 and 5 fell short of, in their order); its
//     wanted revision is not confirmed ([ReasonRevisionNotConfirmed]); it is not
//     ready ([ReasonPodNotReady]); it is kept on an older revision by the partition
//     ([ReasonPartitioned]). A cold pod is [ReasonPartitioned] when it is ready on a
//     confirmed revision and n - kept pods are on U, else it waits with its cold
//     reason. Complete: every waiting pod is [ReasonPartitioned].
//
// With spec.updateStrategy.type [ExternalUpdate], steps 3 to 7 are skipped: the
// pods' owner (a workload controller that releases the data together with its
// own pod changes, under one budget) writes each pod's wanted revision itself, and
// Plan never changes one (partition and maxUnavailable must be unset). The hub,
// the status, the update-order label and the waiting pods are planned as above; a
// ready pod on an older revision waits with [ReasonUpdatedByOwner] (not
// [ReasonPartitioned]), so Complete means every pod runs U, confirmed and ready.
//
// The node side ([Restarts], [MarkCurrent]) works from the pod alone: the reload
// sidecar restarts first; once it runs since after the wanted revision's timestamp,
// with restartInjectedContainers, every container that mounts the set's volume
// follows; when all of them run since after that timestamp and the pod is ready, the
// current revision is marked. Who restarts the injected containers is
// spec.updateStrategy.restartMethod: with [RestartSignal] (the default) the reload
// sidecar sends each one's main process SIGTERM and the kubelet restarts it, for
// which [Inject] makes the pod share one process namespace and marks each injected
// container with [EnvContainerName]; with [RestartExternal] something outside the
// pod does (such as OpenKruise's ContainerRecreateRequest). While a pod waits for
// those restarts, its waiting reason names the containers and says when the pod
// cannot be restarted by signal and must be re-created.
//
// Deleting a ConfigMapSet leaves pods alone: nothing here acts on deletion, and a
// reconciler should not patch pods of a deleted set (the hub may be garbage-collected
// through an owner reference; pods keep the files already written).
//
// # Invariants
//
//   - Inputs are never mutated; outputs are byte-identical for the same input in any
//     pod order.
//   - Plan never moves pods onto U beyond n - kept; pods beyond it (partition
//     raised) go back to the current revision as far as the maxUnavailable budget
//     allows; a plan never makes more pods unavailable than the budget (or than
//     were unavailable already). Cold pods are never changed.
//   - [Inject] is all or nothing: on any error the pod is exactly as it was, however
//     far the injection got.
//   - The hub always comes with an action: create when there was none, update when
//     its data differ, kplan.ActionNone (and a copy of the hub read) when it holds
//     them already.
//   - Complete is true exactly when only the partition holds pods back; with
//     partition 0 it means every pod runs U, confirmed and ready, and
//     status.currentRevision is U.
//   - Live revisions are never trimmed; the hub round-trips through Encode and
//     DecodeHub; a hub over [MaxHubBytes] or pod annotations over 256 KiB are errors,
//     never truncated. File names that are not valid ConfigMap keys (such as
//     "../etc/passwd") are errors wherever a hub is read, built or handed to the
//     sidecar ([DecodeHub], [Hub.Add], [Hub.Encode], [Hub.Files]), so no name leaves
//     the sidecar's data directory.
//   - Every output is a valid next input: the zero time, or a time outside 1970 to
//     9999, as the reconcile time is an error, as it could not be written back.
//   - Every key produced is a valid qualified name for every valid set name.
//   - Tested by a rapid state machine (pods created through Inject, reconciles
//     through Plan, restarts through Restarts and MarkCurrent, with random data,
//     partition, pod, readiness and spec.containers changes; every step checks the
//     partition, maxUnavailable, priority and rollback order, live revisions, hub
//     round trip and action, status counts and labels, the waiting pods and their
//     reasons, and a failure-free run must complete the rollout as far as the
//     partition allows and say so), by a rapid property test of Inject on pods with
//     obstacles at every step, by fuzz targets for every parser and by golden files
//     for the hub, the patches and injected pods.
//
// # Differences from the design
//
//   - Keys: the design's apps.kruise.io/configMapSet/{name}/revision has two "/" and
//     is not a valid key; Kruise's configmapset.{name}.* scheme is used, with long names
//     hash-shortened. The design's revision/revisionTimestamp are named
//     updateRevision/updateRevisionTimestamp as in Kruise. Timestamps are milliseconds.
//   - The update-order label configMapSet/{name}/updateOrder is invalid too; it is
//     apps.kruise.io/configmapset.S.updateOrder. Plan sets it on every warm pod
//     whose wanted revision is not confirmed yet (pods it picks, and new pods that
//     have not loaded theirs) and removes it once the pod confirms it.
//   - Priority: the design lists the rules in two orders; the implementation section's
//     order is used (see Algorithm 4).
//   - The hub stores a JSON list, not a YAML mapping (mappings have no order).
//   - partition is an intstr.IntOrString (the design's *string) so integers are
//     typed; status gains collisionCount and lastContainersHash.
//   - maxUnavailable 0 (or 0%) is rejected by [Validate]: with restarts it would stop
//     every rollout. It resolves to at most the number of pods.
//   - A set without data is one revision with no files, stored as {} in the hub.
//   - Cold pods (created before status.lastContainersTimestamp) never get a new
//     wanted revision from Plan, but the node side finishes a change asked before the
//     pod turned cold (otherwise the pod would stay unavailable for ever). The
//     containers restarted are those that mount the set's volume in the pod, not
//     spec.containers resolved anew, so a cold pod restarts the right ones.
//   - Plan returns a [Result] (Go does not allow a type named like the function).
//   - injectStrategy.pause pauses injection into new pods only; pods created
//     meanwhile have no reload sidecar, and Plan leaves them alone (they still
//     count in matchedPods, so the rollout does not complete while they exist).
//   - The design does not say how a caller learns which pods are cold, why pods
//     wait or whether the rollout is done; Plan lists them in [Result.Cold] and
//     [Result.Waiting] and says [Result.Complete], so callers need not re-implement
//     the rules. The status gains conditions, which Plan keeps and the reconciler
//     sets.
//   - Terminating pods are ignored; pods older than the set count as cold on the first
//     reconcile (they were never injected).
//   - The design leaves restarting the injected containers to Kruise's daemon;
//     here the reload sidecar restarts them by signal by default
//     (spec.updateStrategy.restartMethod, a field the design lacks), so a cluster
//     without OpenKruise completes such rollouts. The pod then shares one process
//     namespace: every container sees the others' processes.
//   - The reload sidecar is a native sidecar from Kubernetes 1.29 (not 1.28: the gate
//     is off by default there), container launch priority before.
//
// # Example
//
// The package example runs a controller's reconciles end to end: a data change, the
// hub, the partitioned selection, the status and the pods the partition keeps. The
// examples of [Plan] (cold pods, waiting pods and a condition set from them),
// [Inject], [Restarts], [MarkCurrent] and [Hub.Files] show each side on its own.
package revision
