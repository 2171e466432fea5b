package revision

import "github.com/kplan-dev/kplan"

// Reasons of the events Plan returns in [Result].Events. Each is valid as is as an
// event's reason and as a metav1.Condition's Reason.
const (
	// ReasonRevisionCreated: spec.data is new; the hub gained a revision for it.
	ReasonRevisionCreated kplan.Reason = "RevisionCreated"
	// ReasonRevisionRestored: spec.data equals an older revision, which became the
	// newest under its old name.
	ReasonRevisionRestored kplan.Reason = "RevisionRestored"
	// ReasonHashCollision (a Warning): the hash of spec.data named a revision with
	// different data, so status.collisionCount was raised.
	ReasonHashCollision kplan.Reason = "HashCollision"
	// ReasonContainersChanged: spec.containers changed; pods created before now are
	// cold (see [ReasonCreatedBeforeContainersChange]).
	ReasonContainersChanged kplan.Reason = "ContainersChanged"
	// ReasonPodsUpdated: the plan asks pods for the update revision.
	ReasonPodsUpdated kplan.Reason = "PodsUpdated"
	// ReasonPodsRolledBack: the partition was raised; the plan asks pods to go back
	// to status.currentRevision.
	ReasonPodsRolledBack kplan.Reason = "PodsRolledBack"
	// ReasonRevisionsTrimmed: the hub dropped old revisions beyond
	// spec.revisionHistoryLimit.
	ReasonRevisionsTrimmed kplan.Reason = "RevisionsTrimmed"
	// ReasonRolloutComplete: every pod runs the update revision and is ready;
	// status.currentRevision became it.
	ReasonRolloutComplete kplan.Reason = "RolloutComplete"
)

// Reasons of the pods Plan lists in [Result].Cold and [Result].Waiting. A cold pod
// is listed with [ReasonNotInjected] or [ReasonCreatedBeforeContainersChange] (the
// first when both apply); a waiting pod with any of them.
const (
	// ReasonNotInjected: the pod lacks the set's reload sidecar
	// ([ReloadSidecarName]): it was created before the set or its webhook, while
	// injection was paused, or the webhook failed open. It can never confirm a
	// revision; Plan never changes it. Re-creating it lets the webhook inject it.
	ReasonNotInjected kplan.Reason = "NotInjected"
	// ReasonCreatedBeforeContainersChange: the pod was created before
	// status.lastContainersTimestamp, when spec.containers last changed, so it lacks
	// the current mounts; Plan never gives it a new revision. Re-creating it lets the
	// webhook inject it.
	ReasonCreatedBeforeContainersChange kplan.Reason = "CreatedBeforeContainersChange"
	// ReasonRevisionNotConfirmed: the pod is asked for a revision (by this plan or an
	// earlier one) that the node side has not confirmed yet: its reload sidecar, and
	// with restartInjectedContainers its injected containers, still have to restart.
	ReasonRevisionNotConfirmed kplan.Reason = "RevisionNotConfirmed"
	// ReasonPodNotReady: the pod runs the revision it is asked for but is not ready.
	ReasonPodNotReady kplan.Reason = "PodNotReady"
	// ReasonMaxUnavailableReached: the pod has to change revision, but with
	// restartInjectedContainers that would take more pods than maxUnavailable out of
	// service; it waits for others to become available.
	ReasonMaxUnavailableReached kplan.Reason = "MaxUnavailableReached"
	// ReasonUpdatedByOwner: the pod is ready on an older revision, and with
	// spec.updateStrategy.type External only its owner moves it to the update
	// revision (see [ExternalUpdate]).
	ReasonUpdatedByOwner kplan.Reason = "UpdatedByOwner"
	// ReasonPartitioned: the pod is ready on an older revision that
	// spec.updateStrategy.partition keeps it on. It is the one reason that does not
	// stop [Result].Complete.
	ReasonPartitioned kplan.Reason = "Partitioned"
)

// PodReason says why Plan treats one pod as it does: why it is cold
// ([Result].Cold) or why it waits ([Result].Waiting).
type PodReason struct {
	// Namespace is the pod's namespace.
	Namespace string
	// Name is the pod's name.
	Name string
	// Reason is one of the pod reasons, [ReasonNotInjected] to
	// [ReasonPartitioned]; never empty.
	Reason kplan.Reason
	// Message explains the reason for a person, naming the revisions, the
	// timestamps, the sidecar or the budget involved.
	Message string
}
