package rollouttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// Planner plans one reconcile of a rollout: [rollout.Plan] ([DefaultPlanner]),
// or a controller's own planning function under test. [Simulator] and
// [Exhaustive] call it the same way. A planner must not modify replicas.
type Planner interface {
	Plan(replicas []rollout.Replica, strategy rollout.Strategy) (rollout.Step, error)
}

// PlannerFunc adapts a function to [Planner].
type PlannerFunc func(replicas []rollout.Replica, strategy rollout.Strategy) (rollout.Step, error)

// Plan calls f.
func (f PlannerFunc) Plan(replicas []rollout.Replica, strategy rollout.Strategy) (rollout.Step, error) {
	return f(replicas, strategy)
}

// DefaultPlanner is [rollout.Plan].
var DefaultPlanner Planner = PlannerFunc(rollout.Plan)

// ScopeStates are the states [Scope] gives replicas (and gang members) by
// default: available, ready but not yet available, not ready, failed.
var ScopeStates = []rollout.State{
	{Ready: true, Available: true, Healthy: true},
	{Ready: true, Healthy: true},
	{Healthy: true},
	{Failed: true},
}

// Scope bounds the states and strategies [Exhaustive] enumerates for one mode.
// Every field but Mode and Replicas has a default.
type Scope struct {
	// Mode is the rollout mode.
	Mode rollout.Mode
	// Replicas: Strategy.Replicas runs from 1 to this (gangs in gang mode, rows
	// per column in group mode).
	Replicas int
	// Extra: each pool holds from n - Extra to n + Extra replicas (at least 0),
	// so scale-ups, scale-downs and leftover surge are covered. Default 0.
	Extra int
	// Revisions: replicas run one of the first Revisions of [Revisions] (default
	// 2). Every one of them is tried as the target, so rollbacks are covered.
	Revisions int
	// Columns is the number of columns in group mode and of members per gang in
	// gang mode; default 1 (2 in group mode).
	Columns int
	// States are the states a replica (in gang mode: each member) can be in;
	// default [ScopeStates].
	States []rollout.State
	// Missing adds a missing member to the states of gang members.
	Missing bool
	// DataRevisions: when above 0, replicas serve one of the first DataRevisions
	// of [DataRevisions], and every strategy is tried without and with
	// TargetDataRevision (the last of them).
	DataRevisions int
	// MaxBudget bounds maxUnavailable and maxSurge, each an integer from 0 to
	// MaxBudget (never both 0); default n, which covers every budget n resolves
	// to.
	MaxBudget int
	// VersionOrders to try; default all three.
	VersionOrders []rollout.VersionOrder
}

// Exhaustive checks a planner against every state of a [Scope]: every multiset
// of replicas (each with a revision, a state and, with DataRevisions, a data
// revision; in group mode one multiset per column) under every strategy (each
// target, with and without History, every maxUnavailable and maxSurge up to
// MaxBudget, LatestRatio nil and 0..n, every VersionOrder, with and without a
// data target). For each pair it
//
//  1. plans once, checks that the planner left its input alone, and checks the
//     step with [Check] (an error is a violation unless AcceptError accepts it);
//  2. runs the rollout to the end in a [Simulator] without faults, where every
//     replica becomes available one Settle after it is updated, created or
//     recreated, checking every step, and requires Complete within Bound
//     reconciles and then [Converged].
//
// Replicas are named r-0, r-1, ... in the order of an enumeration that lists each
// multiset once; columns likewise. The planner must not depend on the order of
// its input (rollout.Plan does not), so states that differ only in the order
// replicas or columns are listed are not enumerated twice. Gang members all run
// their gang's revision (half-updated gangs are not enumerated).
//
// The cluster side of each rollout is an [Executor]: a [Simulator] without
// faults by default, or the one Executor starts for the scenario (for example a
// controller running against a test API server), driven by a [Driver] whose
// clock starts at [Epoch].
type Exhaustive struct {
	// Scope is what is enumerated.
	Scope Scope
	// Planner is checked; nil means [DefaultPlanner].
	Planner Planner
	// AcceptError reports whether an error the planner returns for the first
	// step of a scenario is right (bad input it should reject); nil accepts none.
	// An error later in a rollout is always a violation.
	AcceptError func(sc Scenario, err error) bool
	// Bound is how many reconciles a rollout may take; nil means [ProgressBound].
	Bound func(rollout.Strategy) int
	// Executor starts the cluster side of one scenario, holding its replicas; nil
	// means a [Simulator] with [NoFaults]. When it observes other replicas than
	// the scenario's (other names, say), the checks apply to what it observes.
	// Its methods are called with context.Background(); an executor that needs
	// the test's context keeps its own.
	Executor func(sc Scenario) (Executor, error)
}

// Epoch is where the clock of the rollouts [Exhaustive] drives starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Report counts what [Exhaustive.Run] checked.
type Report struct {
	// States is how many replica sets were enumerated, summed over n.
	States int
	// Strategies is how many strategies were enumerated, summed over n.
	Strategies int
	// Scenarios is how many state and strategy pairs were checked.
	Scenarios int
	// Errors is how many scenarios the planner rejected with an accepted error.
	Errors int
	// Reconciles is how many times the planner was called in all.
	Reconciles int
	// MaxReconciles is the most reconciles one rollout took to report Complete.
	MaxReconciles int
}

// Violation is a scenario whose rollout broke a rule.
type Violation struct {
	// Scenario is the starting state and strategy.
	Scenario Scenario
	// Reconcile is the reconcile (1 = the first) that broke the rule.
	Reconcile int
	// Err says what went wrong.
	Err error
}

func (v *Violation) Error() string {
	return fmt.Sprintf("reconcile %d: %v\n%s", v.Reconcile, v.Err, v.Scenario)
}

func (v *Violation) Unwrap() error { return v.Err }

// Run enumerates the scope and checks every scenario, returning at the first
// violation (a [*Violation]) or a bad scope. The report counts what was checked
// up to then.
func (e *Exhaustive) Run() (Report, error) {
	sc := e.Scope.withDefaults()
	if err := sc.validate(); err != nil {
		return Report{}, err
	}
	planner := e.Planner
	if planner == nil {
		planner = DefaultPlanner
	}
	bound := e.Bound
	if bound == nil {
		bound = ProgressBound
	}
	var rep Report
	for n := 1; n <= sc.Replicas; n++ {
		strategies := sc.strategies(n)
		states := sc.states(n)
		rep.States += len(states)
		rep.Strategies += len(strategies)
		for _, replicas := range states {
			for _, s := range strategies {
				rep.Scenarios++
				scen := Scenario{Strategy: s, Replicas: replicas, GangSize: max(sc.gangSize(), 1)}
				if err := e.check(scen, planner, bound, &rep); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, nil
}

func (e *Exhaustive) check(scen Scenario, planner Planner, bound func(rollout.Strategy) int, rep *Report) error {
	fail := func(reconcile int, err error) error {
		return &Violation{Scenario: Scenario{Strategy: scen.Strategy, Replicas: Clone(scen.Replicas), GangSize: scen.GangSize},
			Reconcile: reconcile, Err: err}
	}
	var ex Executor
	if e.Executor == nil {
		ex = &Simulator{Replicas: Clone(scen.Replicas), GangSize: scen.GangSize, Faults: NoFaults}
	} else {
		var err error
		if ex, err = e.Executor(Scenario{Strategy: scen.Strategy, Replicas: Clone(scen.Replicas), GangSize: scen.GangSize}); err != nil {
			return fail(0, fmt.Errorf("starting the executor: %w", err))
		}
	}
	d := &Driver{Executor: ex, Planner: planner, Strategy: scen.Strategy, Now: Epoch}
	_, err := d.Run(context.Background(), max(bound(scen.Strategy), 1))
	rep.Reconciles += d.Reconciles
	if err == nil {
		rep.MaxReconciles = max(rep.MaxReconciles, d.Reconciles)
		return nil
	}
	var re *reconcileError
	if !errors.As(err, &re) {
		return fail(d.Reconciles, err)
	}
	if re.n == 1 && re.plan && e.AcceptError != nil && e.AcceptError(scen, re.err) {
		rep.Errors++
		return nil
	}
	return fail(re.n, re.err)
}

func (sc Scope) withDefaults() Scope {
	if sc.Revisions == 0 {
		sc.Revisions = 2
	}
	if sc.Columns == 0 {
		sc.Columns = 1
		if sc.Mode == rollout.Group {
			sc.Columns = 2
		}
	}
	if sc.States == nil {
		sc.States = ScopeStates
	}
	if sc.VersionOrders == nil {
		sc.VersionOrders = []rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst}
	}
	return sc
}

func (sc Scope) validate() error {
	switch {
	case sc.Mode != "" && sc.Mode != rollout.Rolling && sc.Mode != rollout.Gang && sc.Mode != rollout.Group:
		return fmt.Errorf("scope: mode: %q is not Rolling, Gang or Group", sc.Mode)
	case sc.Replicas < 1 || sc.Replicas > 16:
		return fmt.Errorf("scope: replicas: %d, want 1 to 16", sc.Replicas)
	case sc.Extra < 0 || sc.Extra > 4:
		return fmt.Errorf("scope: extra: %d, want 0 to 4", sc.Extra)
	case sc.Revisions < 1 || sc.Revisions > len(Revisions):
		return fmt.Errorf("scope: revisions: %d, want 1 to %d", sc.Revisions, len(Revisions))
	case sc.Columns < 1 || sc.Columns > 4:
		return fmt.Errorf("scope: columns: %d, want 1 to 4", sc.Columns)
	case sc.DataRevisions < 0 || sc.DataRevisions > len(DataRevisions):
		return fmt.Errorf("scope: dataRevisions: %d, want 0 to %d", sc.DataRevisions, len(DataRevisions))
	case len(sc.States) == 0:
		return fmt.Errorf("scope: states: must not be empty")
	case sc.MaxBudget < 0:
		return fmt.Errorf("scope: maxBudget: %d is negative", sc.MaxBudget)
	}
	return nil
}

func (sc Scope) gangSize() int {
	if sc.Mode == rollout.Gang {
		return sc.Columns
	}
	return 0
}

// strategies enumerates the strategies for n.
func (sc Scope) strategies(n int) []rollout.Strategy {
	revs := Revisions[:sc.Revisions]
	maxBudget := sc.MaxBudget
	if maxBudget == 0 {
		maxBudget = n
	}
	ratios := []*intstr.IntOrString{nil}
	for k := 0; k <= n; k++ {
		ratios = append(ratios, ptrTo(intstr.FromInt32(int32(k))))
	}
	dataTargets := []string{""}
	if sc.DataRevisions > 0 {
		dataTargets = append(dataTargets, DataRevisions[sc.DataRevisions-1])
	}
	var cols []string
	if sc.Mode == rollout.Group {
		cols = columnNames(sc.Columns)
	}
	var out []rollout.Strategy
	for _, target := range revs {
		for _, history := range [][]string{nil, slices.Clone(revs)} {
			for u := 0; u <= maxBudget; u++ {
				for s := 0; s <= maxBudget; s++ {
					if u == 0 && s == 0 {
						continue
					}
					for _, ratio := range ratios {
						for _, order := range sc.VersionOrders {
							for _, data := range dataTargets {
								out = append(out, rollout.Strategy{
									Mode: sc.Mode, TargetRevision: target, TargetDataRevision: data,
									Replicas: n, Columns: cols, History: history, VersionOrder: order,
									MaxUnavailable: ptrTo(intstr.FromInt32(int32(u))),
									MaxSurge:       ptrTo(intstr.FromInt32(int32(s))),
									LatestRatio:    ratio,
								})
							}
						}
					}
				}
			}
		}
	}
	return out
}

func ptrTo(v intstr.IntOrString) *intstr.IntOrString { return &v }

func columnNames(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("col-%d", i)
	}
	return out
}

// kinds lists every replica a pool can hold (without name or column): each
// revision, data revision and state (in gang mode, each state per member).
func (sc Scope) kinds() []rollout.Replica {
	data := []string{""}
	if sc.DataRevisions > 0 {
		data = DataRevisions[:sc.DataRevisions]
	}
	type memberState struct {
		missing bool
		state   rollout.State
	}
	var ms []memberState
	for _, st := range sc.States {
		ms = append(ms, memberState{state: st})
	}
	if sc.Missing {
		ms = append(ms, memberState{missing: true})
	}
	var out []rollout.Replica
	for _, rev := range Revisions[:sc.Revisions] {
		for _, d := range data {
			if sc.Mode != rollout.Gang {
				for _, st := range sc.States {
					out = append(out, rollout.Replica{Revision: rev, DataRevision: d, State: st})
				}
				continue
			}
			// Every tuple of member states, as a number in base len(ms).
			tuples := 1
			for range sc.Columns {
				tuples *= len(ms)
			}
			for t := range tuples {
				r := rollout.Replica{Revision: rev, DataRevision: d}
				for range sc.Columns {
					m := ms[t%len(ms)]
					t /= len(ms)
					r.Members = append(r.Members, rollout.Member{Missing: m.missing, State: m.state})
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// multisets returns every multiset of sizes lo..hi over k kinds, as
// nondecreasing index lists.
func multisets(k, lo, hi int) [][]int {
	var out [][]int
	var cur []int
	var rec func(from, left int)
	rec = func(from, left int) {
		if left == 0 {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := from; i < k; i++ {
			cur = append(cur, i)
			rec(i, left-1)
			cur = cur[:len(cur)-1]
		}
	}
	for size := max(lo, 0); size <= hi; size++ {
		rec(0, size)
	}
	return out
}

// states enumerates the replica sets for n.
func (sc Scope) states(n int) [][]rollout.Replica {
	kinds := sc.kinds()
	pools := multisets(len(kinds), n-sc.Extra, n+sc.Extra)
	columns := 1
	var cols []string
	if sc.Mode == rollout.Group {
		columns = sc.Columns
		cols = columnNames(columns)
	}
	var out [][]rollout.Replica
	// One pool per column, as a nondecreasing tuple of pool indexes.
	choice := make([]int, columns)
	var rec func(col, from int)
	rec = func(col, from int) {
		if col == columns {
			var rs []rollout.Replica
			for c, p := range choice {
				for _, k := range pools[p] {
					r := kinds[k]
					r.Name = fmt.Sprintf("r-%d", len(rs))
					r.Members = slices.Clone(r.Members)
					for m := range r.Members {
						r.Members[m].Name = fmt.Sprintf("%s-%d", r.Name, m)
					}
					if cols != nil {
						r.Column = cols[c]
					}
					rs = append(rs, r)
				}
			}
			out = append(out, rs)
			return
		}
		for p := from; p < len(pools); p++ {
			choice[col] = p
			rec(col+1, p)
		}
	}
	rec(0, 0)
	return out
}
