package rollouttest

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
}

// NoFaults injects nothing and heals replicas that failed before: every replica
// becomes available at the next Settle.
var NoFaults = Faults{Recovers: 100}

// Simulator applies rollout steps to replicas, the way a controller and the
// cluster would: an updated replica runs its new revision and data and is
// unavailable until the next Settle, a created one (serving the strategy's
// TargetDataRevision) appears unavailable, a deleted one
// disappears. Settle then lets replicas become available, and injects failures.
// A gang member that is missing is recreated at the next Settle, as a gang
// controller would, and then settles like any pending member.
//
// The Simulator is an [Executor] (Observe, Execute, Advance), so a [Driver] or
// [Exhaustive] runs it like any other cluster side; its own Reconcile and Run
// are that driver over itself, with its Planner and Strategy.
type Simulator struct {
	// Strategy is planned with by Reconcile.
	Strategy rollout.Strategy
	// Replicas is the current state.
	Replicas []rollout.Replica
	// GangSize is the number of members a created gang gets.
	GangSize int
	// Faults is the failure injection rate.
	Faults Faults
	// Planner plans each reconcile; nil means [rollout.Plan]. Set it to check a
	// controller's own planner against the same rules.
	Planner Planner
	// Reconciles counts calls to Reconcile.
	Reconciles int
	created    int
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

// Apply applies a step's actions without checking them. Updates and deletes of
// replicas that do not exist are skipped.
func (s *Simulator) Apply(step rollout.Step) { s.apply(step, s.Strategy) }

// apply applies step; created replicas serve strategy's TargetDataRevision. It
// returns the replicas named by updates and deletes that do not exist.
func (s *Simulator) apply(step rollout.Step, strategy rollout.Strategy) (notFound []string) {
	idx := make(map[string]int, len(s.Replicas))
	for i := range s.Replicas {
		idx[s.Replicas[i].Name] = i
	}
	pending := rollout.State{Healthy: true}
	for _, u := range step.Update {
		i, ok := idx[u.Replica]
		if !ok {
			notFound = append(notFound, u.Replica)
			continue
		}
		r := &s.Replicas[i]
		r.Revision = u.To
		if u.DataTo != "" {
			r.DataRevision = u.DataTo
		}
		r.State = pending
		for i := range r.Members {
			r.Members[i].Revision = u.To
			r.Members[i].State = pending
			r.Members[i].Missing = false
		}
	}
	gone := map[string]bool{}
	for _, d := range step.Delete {
		if _, ok := idx[d]; !ok {
			notFound = append(notFound, d)
		}
		gone[d] = true
	}
	s.Replicas = slices.DeleteFunc(s.Replicas, func(r rollout.Replica) bool { return gone[r.Name] })
	for _, c := range step.Create {
		for range c.Count {
			r := rollout.Replica{Name: fmt.Sprintf("sim-%d", s.created), Revision: c.Revision, Column: c.Column, State: pending,
				DataRevision: strategy.TargetDataRevision}
			s.created++
			if strategy.Mode == rollout.Gang {
				for m := range s.GangSize {
					r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("%s-%d", r.Name, m), State: pending})
				}
			}
			s.Replicas = append(s.Replicas, r)
		}
	}
	return notFound
}

// Settle moves time forward by one reconcile: every replica that is not
// available becomes available (a missing gang member is recreated first), except
// that, with the configured rates drawn from t, a pending replica (a recreated
// member included) may fail or stay pending, an available one may become
// unready, and a failed one stays failed unless it recovers. Rates of 100 need no
// t; with a nil t, lower rates inject nothing.
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
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if len(r.Members) == 0 {
			settle(&r.State, "replica")
			continue
		}
		for j := range r.Members {
			m := &r.Members[j]
			if m.Missing {
				// The gang controller recreates the member's pod.
				m.Missing = false
				m.State = rollout.State{Healthy: true}
			}
			settle(&m.State, "member")
		}
	}
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
	for _, c := range strategy.Columns {
		pools[c] = &poolStat{}
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
// Settle after it is updated, created or recreated: ceil(n / step) + 2, with n =
// Strategy.Replicas and step = [rollout.Budget.Step] (at least 1): one reconcile
// per batch, one that finds the last batch available, one that reports Complete;
// plus 2 in group mode when LatestRatio keeps old replicas (making their rows
// whole may take a surge and a deletion more). It is 0 when the strategy's
// budgets or ratio do not resolve.
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
	bound := (s.Replicas+step-1)/step + 2
	if s.Mode == rollout.Group && want < s.Replicas {
		bound += 2
	}
	return bound
}
