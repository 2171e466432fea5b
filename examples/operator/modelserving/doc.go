// Package modelserving is the example operator's ModelServing controller
// (serving.examples.kplan.dev/v1alpha1, package examples/api/serving/v1alpha1): the
// reference for embedding package rollout in a controller.
//
// # What it embeds of kplan
//
// Each reconcile reads the owner's pods as rollout replicas for the strategy's
// mode (servingv1.RolloutPools, then rollout.FromPods: Rolling and Lockstep make
// each role a pool of pods; Gang a pool of serving groups; Group columns of role
// members), plans one step with rollout.Plan, or rollout.PlanLockstep for every
// role at once, and with spec.recoveryPolicy rollout.PlanRecover, and carries the
// step out. The status is a pure function of the plan: revisions, counts per
// role, each group's phase, and the Available, Progressing, RollingUpdate and
// Failed conditions with the plan's reasons as rollout gives them
// (rollout.Step.Reason). Nothing else here calls kplan.
//
// # What it does around that
//
// The controller creates the pods directly, named <modelserving>-<role>-<group>-<member>
// and labelled with kthena's ModelServing labels. The Kubernetes mechanics live in
// packages of their own, which make no kplan call:
//
//   - examples/internal/history: the roles' templates as ControllerRevisions (hash
//     and collision count, renumbering on rollback, a history limit);
//   - examples/internal/expectations: a lagging cache never creates, deletes or
//     updates twice;
//   - examples/internal/inplace: a pod whose new revision differs from its current
//     one only in container images and in containers' cpu and memory requests and
//     limits (written through the pod's resize subresource, Kubernetes 1.33 and
//     later, when the QoS class stays) is updated in place (same name and UID)
//     behind the readiness gate servingv1.PodConditionImagesReady, False until its
//     containers run the new images, the node reports the new resources applied,
//     and they are ready (in Gang mode, until every member of its group is on one
//     revision and done), so the update spends the availability budget like a
//     recreate. Any other change deletes the pod and creates it again under its
//     name, as does a resize the node reports Infeasible or defers for five
//     minutes.
//
// A serving group that lost a pod (deleted, evicted, or recreated while its old pod
// terminated) is made whole at its revision (rollout's Step.Repair, which names the
// group's index and the missing members' columns, from which the pods are named, as
// a create's slot names a new group's or row's pods); a create whose name a pod of
// another owner holds is reported (Failed=True, PodNameTaken, and an event) and
// retried. The partition pauses, reverting the template rolls back. With
// spec.recoveryPolicy, failed pods (a group in Gang mode) are replaced: the
// replacement is annotated with what it replaces, the failed one with when it was
// swapped out, and recovery actions take the reconcile before the rollout's.
//
// # Data released with the pods
//
// A ModelServing may name a ConfigMapSet of its namespace (spec.configMapSet)
// whose spec.updateStrategy.type is External (revision.ExternalUpdate): the set's
// own controller then writes its hub and status but moves no pod, and this one
// releases the set's data with the pod templates, under one maxUnavailable.
// Each reconcile reads the set: its status.updateRevision is every pool's
// rollout.Strategy.TargetDataRevision; the set's currentRevision annotation on a
// pod (revision.Keys.CurrentRevision, which the reload sidecar writes once it
// serves the files) is the pod's rollout.Replica.DataRevision; and a pod whose
// wanted revision (revision.Keys.UpdateRevision) differs from it is read as not
// ready, so its data move spends the budget until the sidecar reports it. An
// update that moves data (rollout.Update with DataFrom != DataTo) writes the
// wanted revision and its timestamp on the pods the update keeps (an image change
// and a data change of one pod are one update: it goes down once); a pod the
// update recreates gets the update revision from the set's webhook. A set that is
// missing, not External or not reconciled yet fails the plan (Failed=True,
// PlanFailed, naming spec.configMapSet) until it changes; the controller watches
// ConfigMapSets for that. Every data move is logged.
//
// Files: reconciler.go (Reconcile as a list of steps), plan.go (the pure half: pods
// in, rollout's input and plan out), execute.go and create.go (the writes of a
// step), resize.go (recreating pods whose resize the node will not apply),
// status.go (the status from the plan), pods.go (slots and pod names), data.go
// (the ConfigMapSet data release).
package modelserving
