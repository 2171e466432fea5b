package rollout

import (
	"fmt"
	"slices"
	"time"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/natural"
)

// RecoverStrategy is how a failed replica is replaced. The empty RecoverStrategy is
// CreateThenDelete.
type RecoverStrategy string

const (
	// CreateThenDelete starts a replacement, swaps it in once it is ready, and
	// releases the failed replica ReleaseDelay after the swap (the default).
	CreateThenDelete RecoverStrategy = "CreateThenDelete"
	// DeleteThenCreate releases the failed replica first and starts its replacement
	// in the same step (for services that cannot run two copies).
	DeleteThenCreate RecoverStrategy = "DeleteThenCreate"
	// NoRecover only reports failed replicas: nothing is started, swapped,
	// released or cancelled, and recovery left by another strategy waits.
	NoRecover RecoverStrategy = "NoRecover"
)

// RecoverPolicy configures [PlanRecover]. The zero value replaces failed replicas
// create-then-delete, with no timeouts, no delay and no quota.
type RecoverPolicy struct {
	// Strategy is how failed replicas are replaced.
	Strategy RecoverStrategy
	// StartTimeout marks a replica failed when it has not been ready and healthy for
	// this long (State.UnreadySince); 0 disables it.
	StartTimeout time.Duration
	// GangMemberTimeout marks a gang lost when one of its members has been missing,
	// not ready or not healthy for this long (the member's UnreadySince); 0
	// disables it.
	GangMemberTimeout time.Duration
	// ReleaseDelay is how long a swapped-out replica is kept before it is released.
	ReleaseDelay time.Duration
	// MaxParallel caps replacements in flight (started, not yet swapped in); 0 means
	// no cap.
	MaxParallel int
	// MaxPerWindow caps replacements started within any Window; 0 means no cap.
	MaxPerWindow int
	// Window is the rate-limit window for MaxPerWindow; it must be set (positive) when
	// MaxPerWindow is.
	Window time.Duration
	// Started lists when earlier replacements were started (the caller keeps this
	// record); only those within Window of now count.
	Started []time.Time
}

// Replacement asks the caller to create a replica replacing For, at the same
// Revision and Column, in the slot Index names, marked as replacing For (its
// pods carry the [PodAnnotations].ReplacementFor annotation naming For, which
// [FromPods] reads into [Replica].ReplacementFor). For a gang, Members lists
// the columns of the failed gang's members: the caller creates a whole new
// gang, one pod in each.
type Replacement struct {
	// For names the failed replica.
	For string
	// Revision and Column are the failed replica's.
	Revision, Column string
	// Index is the replacement's index ([Replica].Index): the lowest index no
	// replica of its column holds and no earlier Replacement of the step takes
	// (the failed replica keeps its own until it is released).
	Index int
	// Members lists the columns ([Member].Column) of the failed gang's
	// members, missing ones included, in member order (an empty string for a
	// member without a column); nil for a single pod.
	Members []string
}

// Swap asks the caller to take Old out of service (set its SwappedAt to now) and
// make New an ordinary replica (clear its ReplacementFor). Old is empty when the
// failed replica is already gone (DeleteThenCreate).
type Swap struct {
	// Old is the failed replica; New its ready replacement.
	Old, New string
}

// RecoverStep is one reconcile's recovery actions. Every list is in natural order
// of replica names.
type RecoverStep struct {
	// Replace lists replacements to start.
	Replace []Replacement
	// Swap lists replacements that are ready to take over.
	Swap []Swap
	// Release lists replicas to delete: swapped out for ReleaseDelay, or failed
	// replicas under DeleteThenCreate.
	Release []string
	// Cancel lists replacements to delete because their failed replica recovered
	// or they failed themselves.
	Cancel []string
	// Failed lists every replica found failed, with the reason.
	Failed []Wait
	// Waiting explains replicas recovery left alone this step.
	Waiting []Wait
}

// Reasons [FailureReason] and [PlanRecover] give in [RecoverStep].Failed: why
// a replica must be replaced.
const (
	// ReasonFailed: the replica (a gang: some member) is Failed.
	ReasonFailed kplan.Reason = "ReplicaFailed"
	// ReasonLost: the replica (a gang: some member) is Lost.
	ReasonLost kplan.Reason = "ReplicaLost"
	// ReasonStartTimeout: the replica has not been ready and healthy for
	// StartTimeout.
	ReasonStartTimeout kplan.Reason = "StartTimeoutExceeded"
	// ReasonGangMember: one member of the gang has been missing or not ready
	// for GangMemberTimeout.
	ReasonGangMember kplan.Reason = "GangMemberTimeoutExceeded"
)

// Reasons [PlanRecover] gives in [RecoverStep].Waiting: why recovery leaves a
// replica alone this step.
const (
	// ReasonQuota: MaxParallel or MaxPerWindow holds the replacement back.
	ReasonQuota kplan.Reason = "RecoverQuotaExhausted"
	// ReasonNoRecover: the policy's strategy is NoRecover.
	ReasonNoRecover kplan.Reason = "RecoveryDisabled"
	// ReasonReplacementWait: the replacement is not serving yet.
	ReasonReplacementWait kplan.Reason = "ReplacementNotReady"
	// ReasonReleaseDelay: the replica is swapped out and waits for
	// ReleaseDelay before it is released.
	ReasonReleaseDelay kplan.Reason = "WaitingForReleaseDelay"
)

// FailureReason reports whether r must be replaced at now under policy, and why:
// it is Lost or Failed (a gang: any member is; ReasonLost, ReasonFailed), it has
// not been ready and healthy for StartTimeout (ReasonStartTimeout), or (a gang)
// one member has been missing or not ready for GangMemberTimeout
// (ReasonGangMember). Terminating replicas (a gang: every present member
// terminating, see [Replica.Effective]) and swapped-out replicas are never
// failed.
func FailureReason(r *Replica, policy RecoverPolicy, now time.Time) (kplan.Reason, bool) {
	if !live(r) {
		return "", false
	}
	s := r.Effective()
	switch {
	case s.Lost:
		return ReasonLost, true
	case s.Failed:
		return ReasonFailed, true
	case policy.StartTimeout > 0 && !s.serving() && timedOut(s.UnreadySince, policy.StartTimeout, now):
		return ReasonStartTimeout, true
	}
	if policy.GangMemberTimeout > 0 {
		for i := range r.Members {
			m := &r.Members[i]
			if (m.Missing || !m.State.serving()) && timedOut(m.State.UnreadySince, policy.GangMemberTimeout, now) {
				return ReasonGangMember, true
			}
		}
	}
	return "", false
}

func timedOut(since time.Time, d time.Duration, now time.Time) bool {
	return !since.IsZero() && now.Sub(since) >= d
}

// PlanRecover returns one reconcile's recovery actions for replicas at now.
//
// For every failed replica F ([FailureReason]):
//   - without a replacement: start one (Replace), within the quota: at most
//     MaxParallel in flight, at most MaxPerWindow started within Window (counting
//     Started and this step's). Under DeleteThenCreate F is released in the same
//     step; under NoRecover F is only reported.
//   - with a replacement R that is ready (for a gang: every member present, ready
//     and healthy): Swap. R is never swapped in before it is ready, so
//     create-then-delete never deletes F before its replacement is ready.
//   - F swapped out (SwappedAt set): Release once ReleaseDelay has passed.
//
// A replacement is cancelled when it failed itself, or when its F is no longer
// failed at now: F recovered, or F is not ready but not failed either (for
// example StartTimeout was raised or turned off, or a gang's missing member came
// back and has not timed out again). Only a failed F is ever swapped out; if F
// fails again later, a new replacement starts. NoRecover only reports: it
// starts, swaps, releases and cancels nothing, and replacements and swapped-out
// replicas left by another strategy wait (ReasonNoRecover) until the strategy
// changes back. Recovery does not use the rolling budget: [Plan] counts F in
// place of R until the swap and never touches F or R.
//
// replicas is not modified; the result does not depend on its order.
func PlanRecover(replicas []Replica, policy RecoverPolicy, now time.Time) (RecoverStep, error) {
	switch policy.Strategy {
	case "", CreateThenDelete, DeleteThenCreate, NoRecover:
	default:
		return RecoverStep{}, fmt.Errorf("policy: strategy: %q is not CreateThenDelete, DeleteThenCreate or NoRecover", policy.Strategy)
	}
	if policy.MaxParallel < 0 || policy.MaxPerWindow < 0 || policy.Window < 0 ||
		policy.StartTimeout < 0 || policy.GangMemberTimeout < 0 || policy.ReleaseDelay < 0 {
		return RecoverStep{}, fmt.Errorf("policy: durations and quotas must not be negative")
	}
	if policy.MaxPerWindow > 0 && policy.Window == 0 {
		return RecoverStep{}, fmt.Errorf("policy: window: must be set when maxPerWindow is %d (without it Started would be ignored)", policy.MaxPerWindow)
	}
	if len(replicas) > MaxReplicas {
		return RecoverStep{}, fmt.Errorf("replicas: %d, more than MaxReplicas %d", len(replicas), MaxReplicas)
	}
	order := make([]*Replica, 0, len(replicas))
	byName := make(map[string]*Replica, len(replicas))
	for i := range replicas {
		r := &replicas[i]
		if _, dup := byName[r.Name]; dup || r.Name == "" || len(r.Name) > MaxNameLength {
			return RecoverStep{}, replicasError(replicas, nil) // order-independent (invalid.go)
		}
		byName[r.Name] = r
		order = append(order, r)
	}
	sortByName(order)
	var out RecoverStep
	// replacement of each failed replica, and in-flight count.
	replacementOf := map[string]*Replica{}
	inFlight := 0
	for _, r := range order {
		if r.ReplacementFor == "" || !live(r) {
			continue
		}
		if prev, dup := replacementOf[r.ReplacementFor]; dup {
			return RecoverStep{}, fmt.Errorf("replica %s: replacementFor: %q is already replaced by %s", r.Name, r.ReplacementFor, prev.Name)
		}
		replacementOf[r.ReplacementFor] = r
		inFlight++
	}
	started := 0
	for _, t := range policy.Started {
		if policy.Window > 0 && !t.After(now) && now.Sub(t) < policy.Window {
			started++
		}
	}
	var free map[string]*indexes // free indexes per column, built at the first replacement
	quota := func() bool {
		return (policy.MaxParallel == 0 || inFlight < policy.MaxParallel) &&
			(policy.MaxPerWindow == 0 || started < policy.MaxPerWindow)
	}
	for _, r := range order {
		switch {
		case terminating(r):
			continue
		case policy.Strategy == NoRecover && (r.ReplacementFor != "" || !r.SwappedAt.IsZero()):
			// NoRecover freezes recovery started under another strategy.
			out.Waiting = append(out.Waiting, wait(r.Name, ReasonNoRecover))
			continue
		case !r.SwappedAt.IsZero():
			if now.Sub(r.SwappedAt) >= policy.ReleaseDelay {
				out.Release = append(out.Release, r.Name)
			} else {
				out.Waiting = append(out.Waiting, wait(r.Name, ReasonReleaseDelay))
			}
			continue
		case r.ReplacementFor != "":
			old, ok := byName[r.ReplacementFor]
			if ok && !live(old) {
				ok = false // the failed replica is already going away
			}
			if _, failed := FailureReason(r, policy, now); failed {
				out.Cancel = append(out.Cancel, r.Name)
				continue
			}
			if ok {
				// A replacement exists only for a failed replica: once its replica
				// is no longer failed (it recovered, or the policy no longer counts
				// it failed), the replacement is cancelled, never swapped in.
				if _, oldFailed := FailureReason(old, policy, now); !oldFailed {
					out.Cancel = append(out.Cancel, r.Name)
					continue
				}
			}
			if !r.Effective().serving() || (ok && len(r.Members) < len(old.Members)) {
				out.Waiting = append(out.Waiting, wait(r.Name, ReasonReplacementWait))
				continue
			}
			sw := Swap{New: r.Name}
			if ok {
				sw.Old = old.Name
			}
			out.Swap = append(out.Swap, sw)
			continue
		}
		reason, failed := FailureReason(r, policy, now)
		if !failed {
			continue
		}
		out.Failed = append(out.Failed, wait(r.Name, reason))
		if _, has := replacementOf[r.Name]; has {
			continue
		}
		switch {
		case policy.Strategy == NoRecover:
			out.Waiting = append(out.Waiting, wait(r.Name, ReasonNoRecover))
		case !quota():
			out.Waiting = append(out.Waiting, wait(r.Name, ReasonQuota))
		default:
			inFlight++
			started++
			if free == nil {
				free = heldIndexes(replicas, true)
			}
			out.Replace = append(out.Replace, Replacement{For: r.Name, Revision: r.Revision, Column: r.Column,
				Index: takeIndex(free, r.Column), Members: memberColumns(r)})
			if policy.Strategy == DeleteThenCreate {
				out.Release = append(out.Release, r.Name)
			}
		}
	}
	return out, nil
}

func sortByName(rs []*Replica) {
	slices.SortFunc(rs, func(a, b *Replica) int { return natural.Compare(a.Name, b.Name) })
}
