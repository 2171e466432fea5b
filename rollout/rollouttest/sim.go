package rollouttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
)

// Faults is how often the simulator injects failures, each out of 100.
type Faults struct {
	// UpdateFails: an updated or created replica fails instead of becoming ready.
	UpdateFails int
	// Unready: an available replica becomes unready for a while.
	Unready int
	// Recovers: a failed or unready replica becomes available again on its own.
	Recovers int
	// Slow: a pending (updated, created or unready) replica stays pending for
	// another Settle.
	Slow int
	// MemberDeleted: a gang member's pod is deleted by someone else (an
	// eviction, a drain, a user): it terminates like a pod the planner deleted
	// and is then missing, until a step repairs it. When it was the gang's last
	// pod, the gang is gone.
	MemberDeleted int
}

// NoFaults injects nothing and heals replicas that failed before: every replica
// becomes available at the next Settle.
var NoFaults = Faults{Recovers: 100}

// Simulator applies rollout steps to replicas, the way a controller and the
// cluster would, with graceful deletion:
//
//   - an updated replica runs its new revision and data and is unavailable
//     until the next Settle (with Recreate, its pods are deleted instead);
//   - a created replica (serving the strategy's TargetDataRevision) appears
//     unavailable, and so do the members a [rollout.Repair] creates, or an
//     Update lists while they are missing; a created pod is named sim-<n> (a
//     gang member <gang>-<column>), with the index and columns the step gives;
//   - a deleted replica's pods (a gang: its members' pods) are terminating for
//     TerminatingSettles Settles and then gone; a gang member that is gone is
//     missing, and a gang whose last pod is gone is gone, as
//     [rollout.FromPods] would see it.
//
// Settle then lets replicas become available, and injects failures. Nothing
// recreates a missing gang member but a step that asks for it (a Repair, or an
// Update listing it): the simulator does not make up for a planner that
// forgets.
//
// The Simulator is an [Executor] (Observe, Execute, Advance), so a [Driver] or
// [Exhaustive] runs it like any other cluster side; its own Reconcile and Run
// are that driver over itself, with its Planner and Strategy.
type Simulator struct {
	// Strategy is planned with by Reconcile.
	Strategy rollout.Strategy
	// Replicas is the current state.
	Replicas []rollout.Replica
	// GangSize is the number of members a created gang gets when its Create
	// lists no member columns (the strategy names none): columns "0" to
	// "GangSize-1".
	GangSize int
	// Faults is the failure injection rate.
	Faults Faults
	// TerminatingSettles is how many Settles a deleted pod stays terminating
	// before it is gone; 0 (or less) means 1: gone at the next Settle, so the
	// next reconcile no longer sees it, while a member deleted during a Settle
	// (Faults.MemberDeleted) is seen terminating by one reconcile. A pod that
	// starts out terminating goes after as many Settles. [ProgressBound]
	// assumes the default.
	TerminatingSettles int
	// Recreate makes updates delete and recreate pods, as a controller that
	// cannot change a pod in place does, instead of updating them in place: an
	// Update deletes the pods that change (those not yet at its To, or all of
	// them when the data changes), which terminate as deleted pods do, and the
	// planner's next steps bring them back. A gang that keeps some pods misses
	// the others once they are gone, and a Repair creates them; a replica or a
	// gang whose pods all went is gone, and the planner creates another. Missing
	// members an Update lists are created at once, as in place.
	Recreate bool
	// Planner plans each reconcile; nil means [rollout.Plan]. Set it to check a
	// controller's own planner against the same rules.
	Planner Planner
	// Reconciles counts calls to Reconcile.
	Reconciles int
	created    int
	// terminating counts the Settles left to pods being deleted, by pod name;
	// a terminating pod without an entry has TerminatingSettles left.
	terminating map[string]int
}

// NewSimulator starts a simulation of scenario (its replicas are copied).
func NewSimulator(sc Scenario, faults Faults) *Simulator {
	return &Simulator{Strategy: sc.Strategy, Replicas: Clone(sc.Replicas), GangSize: max(sc.GangSize, 1), Faults: faults}
}

// Reconcile plans one step with Planner, checks it with [Check], and applies it:
// one [Driver.Reconcile] with the simulator as its [Executor].
func (s *Simulator) Reconcile() (rollout.Step, error) {
	d := s.driver()
	step, err := d.Reconcile(context.Background())
	s.Reconciles = d.Reconciles
	return step, err
}

// driver is a Driver over the simulator, with its Planner, Strategy and count.
func (s *Simulator) driver() *Driver {
	return &Driver{Executor: s, Planner: s.Planner, Strategy: s.Strategy, Reconciles: s.Reconciles}
}

// Apply applies a step's actions without checking them. Updates, deletes and
// repairs of replicas or pods that do not exist are skipped, and so are
// creates of members whose column has a pod.
func (s *Simulator) Apply(step rollout.Step) { s.apply(step, s.Strategy) }

// apply applies step; created replicas serve strategy's TargetDataRevision. It
// returns the replicas and pods named by updates, deletes and repairs that do
// not exist, and the member columns they create that have a pod. It acts on
// the pods and columns the step names, no others: a step that forgets a pod
// leaves it as it was.
func (s *Simulator) apply(step rollout.Step, strategy rollout.Strategy) (notFound, present []string) {
	idx := make(map[string]int, len(s.Replicas))
	for i := range s.Replicas {
		idx[s.Replicas[i].Name] = i
	}
	for _, u := range step.Update {
		i, ok := idx[u.Replica]
		if !ok {
			notFound = append(notFound, u.Replica)
			continue
		}
		nf, pr := s.update(&s.Replicas[i], u)
		notFound, present = append(notFound, nf...), append(present, pr...)
	}
	deleted := map[string]bool{}
	for _, d := range step.Delete {
		i, ok := idx[d.Replica]
		if !ok {
			notFound = append(notFound, d.Replica)
			continue
		}
		deleted[d.Replica] = true
		notFound = append(notFound, deletePods(&s.Replicas[i], d.Pods)...)
	}
	for _, rp := range step.Repair {
		i, ok := idx[rp.Replica]
		if !ok {
			notFound = append(notFound, rp.Replica)
			continue
		}
		r := &s.Replicas[i]
		for _, col := range rp.Missing {
			if !createMember(r, col, rp.Revision) {
				present = append(present, memberName(r.Name, col)) // an API server answers AlreadyExists
			}
		}
	}
	// A gang deleted with no pod left is gone at once: nothing terminates.
	s.Replicas = slices.DeleteFunc(s.Replicas, func(r rollout.Replica) bool {
		return len(r.Members) > 0 && !hasPod(&r) && deleted[r.Name]
	})
	for _, c := range step.Create {
		r := rollout.Replica{Name: fmt.Sprintf("sim-%d", s.created), Revision: c.Revision, Column: c.Column, Index: c.Index,
			State: pending, DataRevision: strategy.TargetDataRevision}
		s.created++
		if strategy.Mode == rollout.Gang {
			cols := c.Members
			if len(cols) == 0 {
				cols = gangColumns(s.GangSize)
			}
			for _, col := range cols {
				r.Members = append(r.Members, rollout.Member{Name: memberName(r.Name, col), Column: col, State: pending})
			}
		}
		s.Replicas = append(s.Replicas, r)
	}
	return notFound, present
}

// gangColumns are the columns of a created gang's members when the step names
// none: "0" to "n-1".
func gangColumns(n int) []string {
	out := make([]string, max(n, 1))
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// memberName is the name of the pod the simulator creates for gang g's member
// in column col.
func memberName(g, col string) string { return g + "-" + col }

// createMember creates the pod of r's missing member in column col at rev,
// and reports whether the column had one missing.
func createMember(r *rollout.Replica, col, rev string) bool {
	j := slices.IndexFunc(r.Members, func(m rollout.Member) bool { return m.Missing && m.Column == col })
	if j < 0 {
		return false
	}
	r.Members[j] = rollout.Member{Name: memberName(r.Name, col), Column: col, Revision: rev, State: pending}
	return true
}

// pending is the state of a pod just created or updated.
var pending = rollout.State{Healthy: true}

// update applies u to r: the pods it names in place, or (Recreate) by
// deleting those that change; the missing members it names are created. Pods
// already terminating are left to go. It returns the pods u names that r
// lacks, and the columns it creates that have a pod.
func (s *Simulator) update(r *rollout.Replica, u rollout.Update) (notFound, present []string) {
	dataChanges := u.DataTo != "" && u.DataTo != r.DataRevision
	if len(r.Members) == 0 {
		if !slices.Equal(u.Pods, []string{r.Name}) {
			return u.Pods, nil
		}
		switch {
		case r.State.Terminating:
		case s.Recreate:
			r.State.Terminating = true
		default:
			r.Revision, r.State = u.To, pending
			if u.DataTo != "" {
				r.DataRevision = u.DataTo
			}
		}
		return nil, nil
	}
	r.Revision = u.To
	if u.DataTo != "" {
		r.DataRevision = u.DataTo
	}
	for _, name := range u.Pods {
		j := slices.IndexFunc(r.Members, func(m rollout.Member) bool { return !m.Missing && m.Name == name })
		if j < 0 {
			notFound = append(notFound, name)
			continue
		}
		m := &r.Members[j]
		switch {
		case m.State.Terminating:
		case s.Recreate:
			if dataChanges || (m.Revision != "" && m.Revision != u.To) || (m.Revision == "" && u.From != u.To) {
				m.State.Terminating = true
			}
		default:
			m.Revision, m.State = u.To, pending
		}
	}
	for _, col := range u.Missing {
		// The update creates what the gang lacks, at To.
		if !createMember(r, col, u.To) {
			present = append(present, memberName(r.Name, col))
		}
	}
	return notFound, present
}

// deletePods starts deleting the pods of r that pods names (a single
// replica's is itself, a gang's its members), and returns those r lacks.
func deletePods(r *rollout.Replica, pods []string) (notFound []string) {
	for _, name := range pods {
		if len(r.Members) == 0 && name == r.Name {
			r.State.Terminating = true
			continue
		}
		j := slices.IndexFunc(r.Members, func(m rollout.Member) bool { return !m.Missing && m.Name == name })
		if len(r.Members) == 0 || j < 0 {
			notFound = append(notFound, name)
			continue
		}
		r.Members[j].State.Terminating = true
	}
	return notFound
}

// hasPod reports whether some member of a gang has a pod.
func hasPod(r *rollout.Replica) bool {
	return slices.ContainsFunc(r.Members, func(m rollout.Member) bool { return !m.Missing })
}

// Settle moves time forward by one reconcile. Terminating pods count down
// TerminatingSettles and then are gone (a gang member becomes missing; a gang
// whose last pod went is gone). Every other replica or member that is not
// available becomes available, except that, with the configured rates drawn
// from t, a pending one may fail or stay pending, an available one may become
// unready, a failed one stays failed unless it recovers, and a gang member's
// pod may be deleted (MemberDeleted; it then terminates from the next Settle).
// Missing members stay missing. Rates of 100 need no t; with a nil t, lower
// rates inject nothing.
func (s *Simulator) Settle(t *rapid.T) {
	roll := func(label string, pct int) bool {
		return pct >= 100 || (t != nil && pct > 0 && rapid.IntRange(0, 99).Draw(t, label) < pct)
	}
	good := rollout.State{Ready: true, Available: true, Healthy: true}
	settle := func(st *rollout.State, label string) {
		switch {
		case st.Failed:
			if roll(label+"-recovers", s.Faults.Recovers) {
				*st = good
			}
		case counts(*st):
			if roll(label+"-unready", s.Faults.Unready) {
				*st = rollout.State{Healthy: true}
			}
		case roll(label+"-slow", s.Faults.Slow):
		default:
			if roll(label+"-fails", s.Faults.UpdateFails) {
				*st = rollout.State{Failed: true}
			} else {
				*st = good
			}
		}
	}
	grace := max(s.TerminatingSettles, 1)
	left := map[string]int{}
	// gone counts one Settle down for a terminating pod and reports whether it
	// is gone.
	gone := func(name string) bool {
		n, ok := s.terminating[name]
		if !ok {
			n = grace
		}
		if n--; n > 0 {
			left[name] = n
			return false
		}
		return true
	}
	out := s.Replicas[:0]
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if r.State.Terminating {
			if !gone(r.Name) {
				out = append(out, *r)
			}
			continue
		}
		if len(r.Members) == 0 {
			settle(&r.State, "replica")
			out = append(out, *r)
			continue
		}
		went := false
		for j := range r.Members {
			m := &r.Members[j]
			switch {
			case m.Missing:
			case m.State.Terminating:
				if gone(m.Name) {
					*m = rollout.Member{Column: m.Column, Missing: true}
					went = true
				}
			case roll("member-deleted", s.Faults.MemberDeleted):
				m.State.Terminating = true
			default:
				settle(&m.State, "member")
			}
		}
		if went && !hasPod(r) {
			continue // its last pod is gone, and so is the gang
		}
		out = append(out, *r)
	}
	clear(s.Replicas[len(out):])
	s.Replicas = out
	s.terminating = left
}

func counts(st rollout.State) bool {
	return st.Available && st.Ready && st.Healthy && !st.Failed && !st.Lost
}

// Run reconciles and settles (with a nil t) until the plan is complete, at most
// limit times (0 or less means [ProgressBound]), and returns how many reconciles
// it took: [Driver.Run] with the simulator as its [Executor]. Each step is
// checked, and the end state must pass [Converged].
func (s *Simulator) Run(limit int) (int, error) {
	d := s.driver()
	n, err := d.Run(context.Background(), limit)
	s.Reconciles = d.Reconciles
	return n, err
}

// Converged reports whether the replicas match what the strategy asks for: per
// pool, Replicas replicas, the requested count at the target (see [Check]), all
// available, and every replica serving TargetDataRevision when it is set.
func Converged(replicas []rollout.Replica, strategy rollout.Strategy) error {
	want, err := requested(Counted(replicas), strategy)
	if err != nil {
		return err
	}
	pools := map[string]*poolStat{}
	if strategy.Mode == rollout.Group {
		for _, c := range strategy.Columns {
			pools[c] = &poolStat{}
		}
	}
	for _, r := range Counted(replicas) {
		c := ""
		if strategy.Mode == rollout.Group {
			c = r.Column
		}
		if pools[c] == nil {
			pools[c] = &poolStat{}
		}
		ps := pools[c]
		ps.total++
		if Available(r) {
			ps.avail++
		}
		if r.Revision == strategy.TargetRevision {
			ps.latest++
		}
		if d := strategy.TargetDataRevision; d != "" && r.DataRevision != d {
			return fmt.Errorf("replica %s: serves data %q, want %q", r.Name, r.DataRevision, d)
		}
	}
	for c, ps := range pools {
		if ps.total != strategy.Replicas || ps.avail != ps.total || ps.latest != want {
			return fmt.Errorf("column %q: %d replicas (%d available, %d at %s), want %d with %d at target",
				c, ps.total, ps.avail, ps.latest, strategy.TargetRevision, strategy.Replicas, want)
		}
	}
	if strategy.Mode == rollout.Group {
		return WholeRows(replicas, strategy)
	}
	return nil
}

// WholeRows reports whether every row of a group is whole: for every revision,
// each column (Strategy.Columns and those the counted replicas name) runs as
// many replicas of it as every other column.
func WholeRows(replicas []rollout.Replica, strategy rollout.Strategy) error {
	byCol := map[string]map[string]int{}
	for _, c := range strategy.Columns {
		byCol[c] = map[string]int{}
	}
	revs := map[string]bool{}
	for _, r := range Counted(replicas) {
		if byCol[r.Column] == nil {
			byCol[r.Column] = map[string]int{}
		}
		byCol[r.Column][r.Revision]++
		revs[r.Revision] = true
	}
	cols := make([]string, 0, len(byCol))
	for c := range byCol {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	for _, rev := range slices.Sorted(maps.Keys(revs)) {
		for _, c := range cols[1:] {
			if a, b := byCol[cols[0]][rev], byCol[c][rev]; a != b {
				return fmt.Errorf("revision %s: %d replicas in column %q but %d in %q: some rows mix revisions", rev, a, cols[0], b, c)
			}
		}
	}
	return nil
}

// ProgressBound is how many reconciles [rollout.Plan] documents for completing a
// rollout in a world without faults, where every replica becomes available one
// Settle after it is updated, created or repaired, and a deleted pod is gone
// one Settle after it is deleted (graceful deletion, as the [Simulator] does
// by default), whether the executor updates pods in place or deletes and
// creates them again (Simulator.Recreate): 2 ceil(n / step) + 2, with n =
// Strategy.Replicas and step = [rollout.Budget.Step] (at least 1), plus 1 in
// group mode when LatestRatio keeps old replicas.
//
// Updating by delete and create, each batch takes two reconciles (one deletes
// the pods, the next creates them again, or repairs a gang, once they are
// gone), then one reconcile finds the last batch available and one reports
// Complete. Updating in place takes fewer: ceil(n / step) + 2, plus 1 when a
// gang member is still terminating at the start (its gang is repaired once it
// is gone), plus 2 in group mode when LatestRatio keeps old replicas (making
// their rows whole may take a surge and a deletion more); see rollout's
// Progress invariant. A pod that stays terminating longer
// (Simulator.TerminatingSettles above 1) delays what waits for it by as many
// Settles. ProgressBound is 0 when the strategy's budgets or ratio do not
// resolve.
func ProgressBound(s rollout.Strategy) int {
	b, err := rollout.ResolveBudget(s.MaxUnavailable, s.MaxSurge, s.Replicas)
	if err != nil {
		return 0
	}
	want, err := rollout.ResolveRatio(s.LatestRatio, s.Replicas)
	if err != nil {
		return 0
	}
	step := max(b.Step(), 1)
	bound := 2*((s.Replicas+step-1)/step) + 2
	if s.Mode == rollout.Group && want < s.Replicas {
		bound++
	}
	return bound
}
