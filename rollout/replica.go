package rollout

import "time"

// State is what a controller observed about one replica (or one gang member).
type State struct {
	// Ready is true when the replica passes its readiness check.
	Ready bool
	// Available is true when the replica has been ready long enough to serve
	// (minReadySeconds). An available replica counts toward the availability budget.
	Available bool
	// Healthy is false when the replica's health check fails.
	Healthy bool
	// Terminating is true once the replica (or member) is being deleted: its pod
	// has a deletion timestamp and is still there. Terminating replicas are
	// ignored by [Plan] and [PlanRecover]. A terminating gang member is not
	// ready, not available and not healthy for its gang, and a gang whose
	// present members are all terminating is itself terminating
	// ([Replica.Effective]).
	Terminating bool
	// Failed is true when the replica cannot serve without being replaced: its
	// process exited, it was taken offline, or it cannot get resources.
	Failed bool
	// Lost is true when the replica is gone for good (its node is lost, or a gang
	// member has been missing for too long). A lost replica is also failed.
	Lost bool
	// ReadySince is when the replica last became ready; zero when unknown.
	ReadySince time.Time
	// UnreadySince is when the replica last stopped being ready and healthy (or was
	// created, if it never was); zero when unknown. [PlanRecover] compares it with
	// its timeouts; a zero time never times out.
	UnreadySince time.Time
}

// serving reports whether the state can take traffic.
func (s State) serving() bool {
	return s.Ready && s.Healthy && !s.Failed && !s.Lost && !s.Terminating
}

// Member is one pod of a gang replica (one column of a row).
type Member struct {
	// Name is the member's pod name; required unless Missing (a missing member
	// has no pod, and its Name is not read).
	Name string
	// Column is the member's place in its gang (for example a role and a rank
	// in it, "decode-1"): with the gang's Index, the slot a controller names the
	// member's pod from. Required for a missing member, and unique among the
	// gang's members: [Plan] names missing members by it ([Repair].Missing,
	// [Update].Missing). [FromPods] reads it from PodLabels.Column.
	Column string
	// Revision is the member's own revision; empty means the gang's revision.
	Revision string
	// Missing is true when the member's pod does not exist. [Plan] asks the
	// caller to create missing members ([Repair], or [Update].Missing when the
	// gang is updated).
	Missing bool
	// State is the member's observed state.
	State State
}

// Replica is the unit a rollout schedules: one pod, or a gang of pods that are
// created, updated and deleted together.
type Replica struct {
	// Name identifies the replica; names are unique within one call.
	Name string
	// Revision is the revision the replica runs (for a gang: should run).
	Revision string
	// DataRevision is the revision of the data the replica serves (a search
	// index, a model, a LoRA adapter), released apart from Revision; for a gang,
	// the data all its members serve. Read only when the strategy sets
	// TargetDataRevision.
	DataRevision string
	// State is the replica's observed state. For a gang it is ignored, except
	// Terminating and Failed, and the gang's state is its worst member's.
	State State
	// Members are the pods of a gang replica, in column order; empty for a single pod.
	Members []Member
	// Column is the replica's column in group mode; empty otherwise.
	Column string
	// Index is the replica's place in its pool, from 0: a pod's ordinal (as a
	// StatefulSet's), a gang's group index, a row in group mode (within its
	// column). It is what a controller names pods from: [Plan] gives each
	// replica it creates the lowest index that no replica of its pool (its
	// column in group mode) holds ([Create].Index), and names a gang's missing
	// members by it and their columns. A terminating replica holds no index
	// (its pods are going; one created in its place waits for their names).
	// Indexes need not be unique or dense; a caller that does not name pods by
	// index leaves them 0 and ignores Create.Index. It must not be negative.
	Index int
	// Priority orders replicas of equal health: lower priority is updated first.
	Priority int32
	// DeletionCost orders replicas of equal health and priority: lower cost is
	// updated or deleted first (like controller.kubernetes.io/pod-deletion-cost).
	DeletionCost int64
	// ReplacementFor names the failed replica this one replaces while it is being
	// recovered; empty for ordinary replicas. See [PlanRecover].
	ReplacementFor string
	// SwappedAt is when recovery took this replica out of service in favour of its
	// replacement; it is released ReleaseDelay later. Zero for ordinary replicas.
	SwappedAt time.Time
}

// Effective returns the state [Plan] uses: the replica's own state for a single
// pod, and for a gang the worst member's:
//
//   - a missing member, and a terminating one (its pod is going away), is not
//     ready, not available and not healthy, so the gang is not either; the
//     gang's UnreadySince is the earliest of its members that do not serve;
//   - the gang is ready, available and healthy only when every member is, and
//     failed or lost when any member is (a terminating member included: a pod
//     stuck terminating on a lost node still fails its gang);
//   - the gang is terminating when its own State says so, or when it has
//     members present and every one of them is terminating (the gang is being
//     deleted); a gang with some members terminating and others present is
//     not terminating, only unavailable;
//   - a gang whose present members disagree on the revision (partial) is not
//     available; a terminating member does not make its gang partial, since it
//     is recreated at the gang's revision once gone.
func (r Replica) Effective() State { return effective(&r) }

// effective is [Replica.Effective] without copying the replica.
func effective(r *Replica) State {
	s, _, _, _ := inspect(r)
	return s
}

// inspect walks a replica's members once: its effective state, whether the gang
// is partial (some member that is not terminating runs another revision than
// the gang's), whether some member is missing, and the index of the first
// member that is invalid (-1 when none; see memberError).
func inspect(r *Replica) (s State, partial, missing bool, bad int) {
	bad = -1
	if len(r.Members) == 0 {
		return r.State, false, false, -1
	}
	s = State{Ready: true, Available: true, Healthy: true,
		Terminating: r.State.Terminating, Failed: r.State.Failed, Lost: r.State.Lost}
	present, terminating := 0, 0
	for i := range r.Members {
		m := &r.Members[i]
		if bad < 0 && ((m.Missing && (m.Column == "" || columnRepeated(r, i))) || (!m.Missing && m.Name == "")) {
			bad = i
		}
		going := !m.Missing && m.State.Terminating
		if m.Revision != "" && m.Revision != r.Revision && !going {
			partial = true
			s.Available = false
		}
		if m.Missing {
			missing = true
			s.Ready, s.Available, s.Healthy = false, false, false
			s.UnreadySince = earliest(s.UnreadySince, m.State.UnreadySince)
			continue
		}
		present++
		ms := &m.State
		s.Failed = s.Failed || ms.Failed
		s.Lost = s.Lost || ms.Lost
		if going {
			// Going away: counts like a missing member (its pod is recreated once
			// it is gone), but a failure it reports still counts.
			terminating++
			s.Ready, s.Available, s.Healthy = false, false, false
			s.UnreadySince = earliest(s.UnreadySince, ms.UnreadySince)
			continue
		}
		s.Ready = s.Ready && ms.Ready
		s.Available = s.Available && ms.Available
		s.Healthy = s.Healthy && ms.Healthy
		if ms.ReadySince.After(s.ReadySince) {
			s.ReadySince = ms.ReadySince
		}
		if !ms.serving() {
			s.UnreadySince = earliest(s.UnreadySince, ms.UnreadySince)
		}
	}
	if present > 0 && terminating == present {
		s.Terminating = true
	}
	return s, partial, missing, bad
}

// columnRepeated reports whether another member of r is in member i's column.
func columnRepeated(r *Replica, i int) bool {
	for j := range r.Members {
		if j != i && r.Members[j].Column == r.Members[i].Column {
			return true
		}
	}
	return false
}

// terminating reports whether a replica is being deleted: its own state says
// so, or (a gang) it has members present and all of them are terminating. It is
// [Replica.Effective]'s Terminating without the rest of the walk.
func terminating(r *Replica) bool {
	if r.State.Terminating {
		return true
	}
	present := false
	for i := range r.Members {
		m := &r.Members[i]
		if m.Missing {
			continue
		}
		if !m.State.Terminating {
			return false
		}
		present = true
	}
	return present
}

// earliest returns the earlier of two times, ignoring zero times.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// healthRank orders states least healthy first: failed or lost (0), not ready or
// not healthy (1), ready but not yet available (2), available (3).
func healthRank(s State) int {
	switch {
	case s.Failed || s.Lost:
		return 0
	case !s.Ready || !s.Healthy:
		return 1
	case !s.Available:
		return 2
	}
	return 3
}

// counts reports whether s counts as available for the budget.
func counts(s State) bool {
	return s.Available && s.Ready && s.Healthy && !s.Failed && !s.Lost
}
