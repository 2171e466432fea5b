package rollout

// Update asks the caller to move one replica to another revision in place.
type Update struct {
	// Replica is the replica's name.
	Replica string
	// From is the revision it runs now; To the revision it should run.
	From, To string
	// Column is the replica's column (group mode).
	Column string
	// Members lists every member of a gang replica, in member order: all of them
	// move together. It includes missing members (Member.Missing): the caller
	// creates them at To, so a gang that is updated gets no [Repair]. A member
	// that is terminating is going away: leave it; once its pod is gone it is
	// missing, and a later step's Repair creates it at To.
	Members []string
	// DataFrom is the data revision the replica serves now and DataTo the one it
	// should serve after this update; both are set only when the strategy sets
	// TargetDataRevision, and DataTo is then always that. An update with From
	// equal to To moves only the data; one with both pairs different moves both
	// at once, and takes the replica down once.
	DataFrom, DataTo string
}

// Create asks the caller to create Count new replicas (gangs in gang mode) at
// Revision, in Column (group mode), serving Strategy.TargetDataRevision when it
// is set. The caller names them.
type Create struct {
	// Revision is the revision the new replicas run.
	Revision string
	// Column is the column they belong to (group mode); empty otherwise.
	Column string
	// Count is how many to create; always at least 1.
	Count int
}

// Repair asks the caller to create the missing members of a gang replica
// (Member.Missing set), at the gang's revision, so that the gang is whole
// again. A gang missing a member is not available, so repairing it costs no
// availability, and it adds no replica, so it takes no surge: [Plan] repairs
// every gang it counts that has missing members and that it neither updates
// (the Update creates them, see [Update].Members) nor deletes, whatever the
// gang's revision, the budget and LatestRatio. A gang that recovery is
// replacing is left to [PlanRecover]; a recovery replacement that lacks
// members is repaired like any gang (it is swapped in only once whole), and
// otherwise left to recovery. Members that are
// terminating are not listed: their pods still exist; once they are gone (and
// observed missing) a later step repairs them.
type Repair struct {
	// Replica is the gang's name.
	Replica string
	// Revision is the revision to create the members at: the gang's
	// (Replica.Revision).
	Revision string
	// Column is the gang's column (group mode); empty otherwise.
	Column string
	// Members names the members to create (Member.Name), in member order. With
	// replicas built by [FromPods] and PodOptions.GangSize, the missing members
	// are placeholders named <gang>-missing-<i>: the caller maps them to the pods
	// its gang lacks.
	Members []string
}

// Wait explains why a replica that still has to change was left alone.
type Wait struct {
	// Replica is the replica's name.
	Replica string
	// Reason is why.
	Reason Reason
}

// Reason says why a replica waits, or why recovery found it failed: one of the
// Reason constants, a sentence fit to show a user.
type Reason string

// Reasons [Plan] gives in [Step].Waiting.
const (
	// ReasonBudget: updating this available replica would take availability below
	// Replicas - maxUnavailable.
	ReasonBudget Reason = "maxUnavailable budget exhausted"
	// ReasonWindow: group mode; the latest version's ratio moves one step at a time
	// and waits for the slowest column.
	ReasonWindow Reason = "group window: waiting for the slowest column"
	// ReasonNotAvailable: the replica runs the right revision but is not available yet.
	ReasonNotAvailable Reason = "not available yet"
	// ReasonRecovering: recovery is replacing this replica; the rollout leaves it alone.
	ReasonRecovering Reason = "being replaced by recovery"
	// ReasonScaleDown: the replica is surplus but deleting it now would take
	// availability below the floor.
	ReasonScaleDown Reason = "surplus, kept until others are available"
)

// Step is one reconcile's actions. Lists are in the order replicas were chosen
// (least healthy first, see [CompareReplicas]), columns in natural order.
type Step struct {
	// Update lists replicas to move in place.
	Update []Update
	// Create lists replicas to create (scale up or surge).
	Create []Create
	// Delete lists replicas to delete (scale down, or old replicas after surge).
	Delete []string
	// Repair lists gangs whose missing members the caller creates (see [Repair]).
	Repair []Repair
	// Waiting explains every replica that still has to change but was left
	// alone. A gang in Repair is not listed as ReasonNotAvailable (the Repair
	// is what it waits for); a gang with terminating members and none missing
	// waits with ReasonNotAvailable until they are gone and observed missing.
	Waiting []Wait
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
