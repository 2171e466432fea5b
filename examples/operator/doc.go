// Package operator is a tiny controller-runtime operator that embeds kplan: it is the
// I/O half that the library's pure plans leave to their users.
//
// # Overview
//
//   - RanktableReconciler: owners are ModelServings annotated kthena.io/ranktable-template
//     (on the ModelServing, as kthena does; kthena.io/ranktable-level there overrides
//     the template's level). It loads the template ConfigMaps from the templates
//     namespace, calls ranktable.Planner.Plan with the owner's pods (those labelled
//     with its name that it controls), the serving groups its spec expects and the
//     namespace's ConfigMaps, creates and updates the ConfigMaps and deletes those of
//     groups no longer expected (re-reading and re-planning on resourceVersion
//     conflicts),
//     records the plan's events, exports the design's metrics and requeues as the plan
//     says.
//     Each owner gets the finalizer RanktableFinalizer on create; deleting the owner
//     (or removing its annotation) deletes its ranktable ConfigMaps and removes the
//     finalizer. Its status carries the RanktableReady condition
//     (servingv1.ConditionRanktableReady, beside the ModelServing controller's
//     conditions; both write the status with its resourceVersion, so neither
//     overwrites the other): True when every
//     group is complete, False with the waiting or failed groups' own messages (a
//     timed out group names the pods without the annotation, a parse failure the pod
//     and field), with KServe's events on the transitions (RanktableReady,
//     RanktableNotReady) and UpdateFailed when the status write fails.
//     A template that breaks its render budget makes the condition False naming
//     the template and the limit. Why the webhook never renders templates: README.md.
//   - ConfigMapSetReconciler: ConfigMapSets (CRD apps.kplan.dev/v1alpha1, the
//     revision package's types) get their hub ConfigMap, pod annotations and status
//     from revision.Plan, and the condition ConfigMapSetComplete from the plan's
//     Complete and Waiting: True (RolloutComplete, or Partitioned while the
//     partition keeps pods on older revisions) or False with the reason and message
//     of the first pod that waits.
//   - ModelServingReconciler: ModelServings (CRD serving.examples.kplan.dev/v1alpha1,
//     package examples/api/serving/v1alpha1): spec.replicas serving groups of
//     roles, whose pods it creates directly, named <modelserving>-<role>-<group>-<member>
//     and labelled with kthena's ModelServing labels. The roles' templates are
//     kept as ControllerRevisions (Kubernetes' history: hash and collision count,
//     renumbering on rollback, a history limit). Each reconcile reads the pods as
//     rollout replicas for the strategy's mode (Rolling and Lockstep: each role a
//     pool of pods; Gang: a pool of serving groups; Group: columns of role
//     members), plans one step with rollout.Plan or rollout.PlanLockstep and
//     carries it out, with expectations so that a lagging cache never creates,
//     deletes or updates twice. A serving group that lost a pod (deleted,
//     evicted, or recreated while its old pod terminated) is made whole at its
//     revision (rollout's Step.Repair, which names the group's index and the
//     missing members' columns, from which the pods are named, as a create's
//     slot names a new group's or row's pods); a create whose name a pod of another
//     owner holds is reported (Failed=True, PodNameTaken, and an event) and
//     retried. A pod whose new revision differs from its
//     current one only in container images is updated in place (same name and
//     UID) behind the readiness gate servingv1.PodConditionImagesReady, False
//     until its containers run the new images and are ready (in Gang mode,
//     until every member of its group is on one revision and restarted), so
//     the update spends the availability budget like a recreate; any other change deletes
//     the pod and creates it again under its name (README.md compares this with
//     OpenKruise's InPlaceIfPossible and kthena). The partition pauses, reverting the template rolls
//     back; the status reports revisions, counts per role, each group's phase
//     and the Available, Progressing, RollingUpdate and Failed conditions with
//     the plan's reasons as rollout gives them (rollout.Step.Reason). With spec.recoveryPolicy, failed pods (a group in
//     Gang mode) are replaced with rollout.PlanRecover: the replacement is
//     annotated with what it replaces, the failed one with when it was swapped
//     out, and recovery actions take the reconcile before the rollout's.
//   - NodeRDMAReconciler (Options.NodeRDMACapacity): keeps each node's
//     koordinator.sh/rdma capacity and allocatable from koordinator's Device object
//     with rdma.Capacity, under either capacity model.
//   - PodMutator: a mutating admission webhook for pod CREATE that injects the ranktable
//     volume, wait init container and mounts (ranktable.PodConfigMapName names the
//     table, ranktable.Inject mounts it in the engine containers) into the pods of an
//     annotated ModelServing (their controller reference names it) and each matching
//     ConfigMapSet's emptyDir, reload sidecar and mounts (revision.Inject, plus
//     EnvSetName, EnvPodName and EnvPodNamespace for the reload agent, package
//     examples/reload), and answers with webhookpatch.Diff of the pod before and
//     after.
//
// Manifests: examples/config (CRDs, RBAC and admission policies, webhook
// configuration, deployment, the API server's client certificate for the webhook);
// the integration tests run against a real kube-apiserver and etcd (see
// DEVELOPERS.md). A process embedding the operator creates its manager with
// CacheOptions (it caches only what it reconciles), NewWebhookServer (HTTP/1.1, the
// API server's client certificate) and MetricsServerOptions (authenticated and
// authorized scrapes), as examples/cmd/kplan-operator does.
//
// # Expected pods
//
// Each table expects the members the ModelServing's spec gives it: at role level
// (one table per role of each serving group, ConfigMap
// <modelserving>-<group index>-<role>-ranktable) the role's replicas, at group level
// (one table per serving group, <modelserving>-<group index>-ranktable) the sum over
// the roles. The serving groups are those the ModelServing's pods are in (a Gang
// rollout's surge group has an index beyond spec.replicas) and, while fewer than
// spec.replicas have pods, the lowest free indexes, where the controller creates
// groups. So a deleted pod resets its table until its replacement (same name, new
// UID) has its annotation, and a pod a rollout recreates does the same.
//
// A single surge pod (Rolling, Lockstep or Group mode with maxSurge above 0) would
// be created in a slot beyond spec.replicas: its serving group would never have all
// its members, so its table would never complete and its wait container never end.
// So with a rank-table template those modes surge nothing: an unset maxSurge is 0
// (servingv1.RolloutPools), and the ValidatingAdmissionPolicy
// modelserving-ranktable-surge (config/rbac/policies.yaml) refuses maxSurge above 0,
// and maxUnavailable 0, with a message naming the fix (Gang mode surges whole
// serving groups, each with a complete table of its own).
//
// # Differences from the design
//
//   - ConfigMap names carry the serving group (the design's
//     {ms}-{role}-ranktable collides across groups; see the ranktable package).
//   - The operator does not create the wait container in the pods it builds: the
//     webhook injects it, as into any pod a ModelServing controls (only the
//     operator may create those: the policy kplan-modelserving-pods). A
//     ModelServing annotated after its pods exist gets its tables, but its existing
//     pods mount nothing until they are recreated.
package operator
