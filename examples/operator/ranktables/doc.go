// Package ranktables is the example operator's ranktable controller: it keeps the
// rank table ConfigMaps of owners annotated kthena.io/ranktable-template (on the
// owner, as kthena does; kthena.io/ranktable-level there overrides the template's
// level). Reconciler serves the example ModelServing; OwnerReconciler serves one
// kind another controller runs (LeaderWorkerSet, DisaggregatedSet, kthena's
// ModelServing, or any kind its labels describe), read as unstructured objects
// and never written (see examples/operator/OWNERS.md).
//
// # Logs
//
// Each reconcile logs one line with the plan's summary (keys owner, groups,
// completed, waiting, failed, written, unmatched) and one line per ConfigMap it
// creates, updates or deletes (action, configMap, group, pods); each group's
// phase and each pod left out of every group are logged at V(1).
//
// # Foreign owners
//
// OwnerReconciler finds an owner's pods by the kind's owner label (a
// LeaderWorkerSet's pods are controlled by its StatefulSets), through a cache of
// the pods carrying that label; the groups each owner's spec expects come from
// owners.Preset.Expected, and a group's table lists only pods of its leader's
// revision (owners.SameRevision). It adds no finalizer and writes no status: the
// tables' controller owner references let the garbage collector delete them with
// the owner, removing the annotation deletes them at once, and the plan's events
// go to the owner and its ConfigMaps.
//
// # What it embeds of kplan
//
// Package ranktable, whole: it loads the template ConfigMaps from the templates
// namespace (ranktable.TemplateCache, LoadTemplate), calls ranktable.Planner.Plan
// with the owner's pods (those labelled with its name that it controls), the
// serving groups its spec expects and the namespace's ConfigMaps, creates and
// updates the ConfigMaps the plan returns and deletes those of groups no longer
// expected (re-reading and re-planning on resourceVersion conflicts), records the
// plan's events, exports the design's metrics and requeues as the plan says.
//
// Each owner gets the finalizer Finalizer on create; deleting the owner (or
// removing its annotation) deletes its ranktable ConfigMaps and removes the
// finalizer. Its status carries the RanktableReady condition
// (servingv1.ConditionRanktableReady, beside the ModelServing controller's
// conditions; both write the status with its resourceVersion, so neither
// overwrites the other): True when every group is complete, False with the waiting
// or failed groups' own messages (a timed out group names the pods without the
// annotation, a parse failure the pod and field), with KServe's events on the
// transitions (RanktableReady, RanktableNotReady) and UpdateFailed when the status
// write fails. A template that breaks its render budget makes the condition False
// naming the template and the limit. Why the webhook (package podwebhook, which
// injects the table's mount with LoadTemplate and ranktable.Inject) never renders
// templates: examples/operator/README.md.
//
// # Expected pods
//
// Each table expects the members the ModelServing's spec gives it (the shape its
// API type's methods give: GroupCount, GroupName, Role.Members): at role level (one
// table per role of each serving group, ConfigMap
// <modelserving>-<group index>-<role>-ranktable) the role's replicas, at group level
// (one table per serving group, <modelserving>-<group index>-ranktable) the sum over
// the roles. The serving groups are those the ModelServing's pods are in (a Gang
// rollout's surge group has an index beyond spec.replicas) and, while fewer than
// spec.replicas have pods, the lowest free indexes, where the ModelServing
// controller creates groups. So a deleted pod resets its table until its
// replacement (same name, new UID) has its annotation, and a pod a rollout
// recreates does the same.
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
//   - The ModelServing controller does not create the wait container in the pods
//     it builds: the webhook injects it, as into any pod a ModelServing controls
//     (only the operator may create those: the policy kplan-modelserving-pods). A
//     ModelServing annotated after its pods exist gets its tables, but its existing
//     pods mount nothing until they are recreated.
package ranktables
