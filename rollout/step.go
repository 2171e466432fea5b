package rollout

import "github.com/kplan-dev/kplan"

// Update asks the caller to move one replica to another revision in place. It
// names what to do to pods: update Pods, and (a gang) create a pod in each of
// the Missing columns, at To.
type Update struct {
	// Replica is the replica's name.
	Replica string
	// From is the revision it runs now; To the revision it should run.
	From, To string
	// Column is the replica's column (group mode).
	Column string
	// Index is the replica's index ([Replica].Index): with a column of Missing,
	// the slot a missing member's pod is named from.
	Index int
	// Pods names the pods to update: the replica itself for a single pod; every
	// member of a gang that has a pod and is not terminating, in member order.
	// A terminating member is going away: leave it; once its pod is gone it is
	// missing, and a later step's [Repair] creates it at the gang's revision.
	Pods []string
	// Missing lists the columns ([Member].Column) of a gang's missing members,
	// in member order: the caller creates a pod in each, at To, so a gang that
	// is updated gets no [Repair]. Empty for a single pod.
	Missing []string
	// DataFrom is the data revision the replica serves now and DataTo the one it
	// should serve after this update; both are set only when the strategy sets
	// TargetDataRevision, and DataTo is then always that. An update with From
	// equal to To moves only the data; one with both pairs different moves both
	// at once, and takes the replica down once.
	DataFrom, DataTo string
}

// Create asks the caller to create one replica at Revision, in Column (group
// mode), serving Strategy.TargetDataRevision when it is set, in the slot Index
// names: a pod, or in gang mode a gang with a pod in each of Members.
type Create struct {
	// Revision is the revision the new replica runs.
	Revision string
	// Column is the column it belongs to (group mode); empty otherwise.
	Column string
	// Index is the new replica's index ([Replica].Index): the lowest index that
	// no replica of its pool (its column in group mode) holds (a terminating
	// one holds none) and no earlier Create of the step takes. Name the pod (a
	// gang: the gang and its pods) from it.
	Index int
	// Members lists the columns of a new gang's members, one pod each: the
	// strategy's Columns, in order. Empty for a single pod, and in gang mode
	// when the strategy names no columns.
	Members []string
}

// Delete asks the caller to delete one replica: every pod in Pods.
type Delete struct {
	// Replica is the replica's name.
	Replica string
	// Column is the replica's column (group mode); empty otherwise.
	Column string
	// Pods names the pods to delete: the replica itself for a single pod; every
	// member of a gang that has a pod and is not already terminating, in member
	// order (empty when none has: the gang is gone once it is deleted).
	Pods []string
}

// Repair asks the caller to create the missing members of a gang replica
// ([Member].Missing set), at the gang's revision, so that the gang is whole
// again. A gang missing a member is not available, so repairing it costs no
// availability, and it adds no replica, so it takes no surge: [Plan] repairs
// every gang it counts that has missing members and that it neither updates
// (the Update creates them, see [Update].Missing) nor deletes, whatever the
// gang's revision, the budget and LatestRatio. A gang that recovery is
// replacing is left to [PlanRecover]; a recovery replacement that lacks
// members is repaired like any gang (it is swapped in only once whole), and
// otherwise left to recovery. Members that are terminating are not listed:
// their pods still exist; once they are gone (and observed missing) a later
// step repairs them.
type Repair struct {
	// Replica is the gang's name.
	Replica string
	// Revision is the revision to create the members at: the gang's
	// (Replica.Revision).
	Revision string
	// Column is the gang's column (group mode); empty otherwise.
	Column string
	// Index is the gang's index ([Replica].Index).
	Index int
	// Missing lists the columns of the members to create ([Member].Column), in
	// member order: one pod each, named from Index and the column.
	Missing []string
}

// Wait explains why a replica that still has to change was left alone, or
// (in [RecoverStep].Failed) why recovery found it failed.
type Wait struct {
	// Replica is the replica's name.
	Replica string
	// Reason is why, one of the Reason constants: valid as a
	// metav1.Condition's Reason and an event's reason.
	Reason kplan.Reason
	// Message says the same for people.
	Message string
}

// Reasons [Plan] gives in [Wait].Reason ([Step].Waiting) and in [Step].Reason.
const (
	// ReasonBudget: updating this available replica would take availability
	// below Replicas - maxUnavailable.
	ReasonBudget kplan.Reason = "MaxUnavailableReached"
	// ReasonWindow: group mode; the latest version's ratio moves one step at a
	// time and waits for the slowest column.
	ReasonWindow kplan.Reason = "GroupWindow"
	// ReasonNotAvailable: the replica runs the right revision but is not
	// available yet.
	ReasonNotAvailable kplan.Reason = "WaitingForAvailable"
	// ReasonRecovering: recovery is replacing this replica; the rollout leaves
	// it alone.
	ReasonRecovering kplan.Reason = "BeingReplaced"
	// ReasonScaleDown: the replica is surplus, but deleting it now would take
	// availability below the floor.
	ReasonScaleDown kplan.Reason = "SurplusKept"
	// ReasonLockstep: [PlanLockstep] only. In Waiting, the old replica is kept
	// as the role's share of the old revision while the other roles drain
	// theirs. As a Step's Reason, the role waits for the other roles: it has
	// reached the step they are moving to, or keeps only such old replicas.
	ReasonLockstep kplan.Reason = "WaitingForOtherRoles"
)

// Reasons [Plan] and [PlanLockstep] give only in [Step].Reason and
// [LockstepStep].Reason.
const (
	// ReasonComplete: nothing is left to do ([Step].Complete).
	ReasonComplete kplan.Reason = "RolloutComplete"
	// ReasonUpdating: the step has actions to carry out.
	ReasonUpdating kplan.Reason = "Updating"
)

// Step is one reconcile's actions. Lists are in the order replicas were chosen
// (least healthy first, see [CompareReplicas]), columns in natural order.
type Step struct {
	// Update lists replicas to move in place.
	Update []Update
	// Create lists replicas to create (scale up or surge), one entry each.
	Create []Create
	// Delete lists replicas to delete (scale down, or old replicas after surge).
	Delete []Delete
	// Repair lists gangs whose missing members the caller creates (see [Repair]).
	Repair []Repair
	// Waiting explains every replica that still has to change but was left
	// alone. A gang in Repair is not listed as ReasonNotAvailable (the Repair
	// is what it waits for); a gang with terminating members and none missing
	// waits with ReasonNotAvailable until they are gone and observed missing.
	Waiting []Wait
	// Reason says where the rollout stands, to set a condition from as is:
	// ReasonComplete when Complete; ReasonUpdating when the step has actions;
	// otherwise why it waits, the first of ReasonBudget, ReasonWindow,
	// ReasonScaleDown, ReasonLockstep, ReasonRecovering and ReasonNotAvailable
	// among Waiting (ReasonNotAvailable when Waiting is empty).
	Reason kplan.Reason
	// Message says the same for people: the actions, then the waiting
	// replicas by reason (the first five names of each); empty when Complete.
	Message string
	// Complete is true when nothing is left to do: the desired count exists, the
	// requested share runs TargetRevision, every replica serves
	// TargetDataRevision (when set), every replica is available (so no gang has
	// a missing or terminating member), and (group mode) every row is whole: in
	// each row all columns run one revision.
	Complete bool
	// Budget is the strategy's budget resolved against Replicas (per column in
	// group mode).
	Budget Budget
	// Latest is how many replicas (per column in group mode) should run
	// TargetRevision once this step's actions are done: the requested LatestRatio
	// in rolling and gang mode, the window's position in group mode (the
	// requested count once no column runs fewer).
	Latest int
	// Rows is, in group mode, each revision's whole rows as observed (before this
	// step's actions), oldest revision first, for every revision some replica
	// runs; nil in other modes. A row serves only when all its columns run one
	// revision, so a revision's serving capacity is its AvailableRows.
	Rows []RevisionRows
}

// RevisionRows is how many whole rows of one revision a group has: the fewest
// of its replicas in any column.
type RevisionRows struct {
	// Revision is the revision.
	Revision string
	// Rows is the fewest replicas running Revision in any column.
	Rows int
	// AvailableRows is the fewest available replicas running Revision in any
	// column: the rows that can serve now.
	AvailableRows int
}

// Empty reports whether the step asks for no action: no Update, Create,
// Delete or Repair.
func (s *Step) Empty() bool {
	return len(s.Update) == 0 && len(s.Create) == 0 && len(s.Delete) == 0 && len(s.Repair) == 0
}
