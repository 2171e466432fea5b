package rollouttest

import (
	"context"
	"errors"
	"fmt"
	"time"

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
//     repaired and deleted pods are gone one Settle later, checking every
//     step, and requires Complete within Bound reconciles and then
//     [Converged].
//
// Replicas are named r-0, r-1, ... in the order of an enumeration that lists each
// multiset once, with indexes 0, 1, ... in each pool; columns likewise. The
// planner must not depend on the order of its input (rollout.Plan does not),
// so states that differ only in the order replicas or columns are listed are
// not enumerated twice. In gang mode the strategy's Columns are "0" to
// "Columns-1" and a gang has a member in each, named <gang>-<column> (none
// when missing); members all run their gang's revision (half-updated gangs are
// not enumerated).
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
