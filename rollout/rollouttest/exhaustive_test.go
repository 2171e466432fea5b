package rollouttest_test

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var fullScope = flag.Bool("exhaustive.full", false, "run the full exhaustive scopes (minutes) and print their counts and times")

var (
	available = rollout.State{Ready: true, Available: true, Healthy: true}
	notReady  = rollout.State{Healthy: true}
)

// acceptKPlanErrors accepts the one error rollout.Plan gives for a scope's
// strategies: a data release with maxUnavailable 0.
func acceptKPlanErrors(sc rollouttest.Scenario, err error) bool {
	s := sc.Strategy
	return s.TargetDataRevision != "" && s.MaxUnavailable.IntValue() == 0 &&
		strings.Contains(err.Error(), "targetDataRevision")
}

// ciScopes are small enough for CI (a few seconds in all on two shared cores).
var ciScopes = []struct {
	name  string
	scope rollouttest.Scope
}{
	{"rolling, up to 2 replicas, one more or fewer, 2 revisions, 4 states",
		rollouttest.Scope{Mode: rollout.Rolling, Replicas: 2, Extra: 1, Revisions: 2,
			VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}},
	{"rolling with data, up to 2 replicas, 2 revisions, 2 data revisions",
		rollouttest.Scope{Mode: rollout.Rolling, Replicas: 2, Revisions: 2, DataRevisions: 2,
			States: []rollout.State{available, notReady}, VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}},
	{"gang, up to 2 gangs of 2 members, members available or missing",
		rollouttest.Scope{Mode: rollout.Gang, Replicas: 2, Columns: 2, Revisions: 2, Missing: true,
			States: []rollout.State{available}, VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}},
	{"group, up to 2 rows in 2 columns",
		rollouttest.Scope{Mode: rollout.Group, Replicas: 2, Columns: 2, Revisions: 2,
			States: []rollout.State{available, notReady}, VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}},
}

// binomial is n choose k.
func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// wantCounts computes, independently of the enumeration, how many states and
// strategies a scope holds: multisets of m out of k kinds number C(k+m-1, m);
// group mode takes a multiset of column pools.
func wantCounts(sc rollouttest.Scope) (states, strategies int) {
	revs, cols, nStates := max(sc.Revisions, 2), sc.Columns, len(sc.States)
	if nStates == 0 {
		nStates = len(rollouttest.ScopeStates)
	}
	if cols == 0 {
		cols = 1
		if sc.Mode == rollout.Group {
			cols = 2
		}
	}
	orders := len(sc.VersionOrders)
	if orders == 0 {
		orders = 3
	}
	data, dataTargets := 1, 1
	if sc.DataRevisions > 0 {
		data, dataTargets = sc.DataRevisions, 2
	}
	kinds := revs * data * nStates
	if sc.Mode == rollout.Gang {
		perMember := nStates
		if sc.Missing {
			perMember++
		}
		tuples := 1
		for range cols {
			tuples *= perMember
		}
		kinds = revs * data * tuples
	}
	for n := 1; n <= sc.Replicas; n++ {
		pools := 0
		for m := max(n-sc.Extra, 0); m <= n+sc.Extra; m++ {
			pools += binomial(kinds+m-1, m)
		}
		if sc.Mode == rollout.Group {
			states += binomial(pools+cols-1, cols)
		} else {
			states += pools
		}
		b := sc.MaxBudget
		if b == 0 {
			b = n
		}
		strategies += revs * 2 * ((b+1)*(b+1) - 1) * (n + 2) * orders * dataTargets
	}
	return states, strategies
}

// TestExhaustiveSmallScopes runs rollout.Plan over every state of small scopes
// in every mode: each first step keeps the invariants, and each rollout
// completes within ProgressBound in a world without faults.
func TestExhaustiveSmallScopes(t *testing.T) {
	total := 0
	for _, tt := range ciScopes {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			rep, err := (&rollouttest.Exhaustive{Scope: tt.scope, AcceptError: acceptKPlanErrors}).Run()
			if err != nil {
				t.Fatal(err)
			}
			states, strategies := wantCounts(tt.scope)
			if rep.States != states || rep.Strategies != strategies {
				t.Fatalf("enumerated %d states and %d strategies, want %d and %d", rep.States, rep.Strategies, states, strategies)
			}
			if rep.Scenarios == 0 || rep.Reconciles < rep.Scenarios || rep.MaxReconciles < 2 {
				t.Fatalf("report %+v checks nothing", rep)
			}
			if (tt.scope.DataRevisions > 0) != (rep.Errors > 0) {
				t.Fatalf("%d accepted errors: only data releases with maxUnavailable 0 are rejected", rep.Errors)
			}
			total += rep.Scenarios
			t.Logf("%+v in %s", rep, time.Since(start).Round(time.Millisecond))
		})
	}
	t.Logf("%d scenarios in all", total)
}

// TestExhaustiveFullScopes is the full run BENCHMARKS.md reports: go test
// ./rollout/rollouttest -run TestExhaustiveFullScopes -exhaustive.full -v
func TestExhaustiveFullScopes(t *testing.T) {
	if !*fullScope {
		t.Skip("run with -exhaustive.full")
	}
	orders := []rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst}
	scopes := []rollouttest.Scope{
		{Mode: rollout.Rolling, Replicas: 3, Extra: 1, Revisions: 3, VersionOrders: orders},
		{Mode: rollout.Rolling, Replicas: 3, Revisions: 2, DataRevisions: 2},
		{Mode: rollout.Gang, Replicas: 2, Extra: 1, Columns: 2, Revisions: 2, Missing: true,
			States: []rollout.State{available, notReady, {Failed: true}}},
		{Mode: rollout.Group, Replicas: 1, Extra: 1, Columns: 2, Revisions: 2},
		{Mode: rollout.Group, Replicas: 2, Columns: 2, Revisions: 2},
		{Mode: rollout.Group, Replicas: 2, Columns: 3, Revisions: 3, States: []rollout.State{available, notReady}},
	}
	total, all := 0, time.Now()
	for _, sc := range scopes {
		start := time.Now()
		rep, err := (&rollouttest.Exhaustive{Scope: sc, AcceptError: acceptKPlanErrors}).Run()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v\n  %+v in %s", sc, rep, time.Since(start).Round(time.Millisecond))
		total += rep.Scenarios
	}
	t.Logf("%d scenarios in all, %s", total, time.Since(all).Round(time.Second))
}

// TestExhaustiveCatchesBadPlanners: planners that break one rule each are
// caught, with the scenario that shows it.
func TestExhaustiveCatchesBadPlanners(t *testing.T) {
	scope := rollouttest.Scope{Mode: rollout.Rolling, Replicas: 2, Revisions: 2}
	tests := []struct {
		name    string
		planner rollouttest.PlannerFunc
		want    string
	}{
		{"a planner that also updates every other old replica breaks the floor",
			func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
				st, err := rollout.Plan(rs, s)
				moved := map[string]bool{}
				for _, u := range st.Update {
					moved[u.Replica] = true
				}
				for _, d := range st.Delete {
					moved[d.Replica] = true
				}
				for _, r := range rs {
					if r.Revision != s.TargetRevision && !moved[r.Name] {
						st.Update = append(st.Update, rollout.Update{Replica: r.Name, From: r.Revision, To: s.TargetRevision,
							Index: r.Index, Pods: []string{r.Name}})
					}
				}
				return st, err
			}, "below floor"},
		{"a planner that never moves does not complete",
			func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) { return rollout.Step{}, nil },
			"not complete after"},
		{"a planner that reports Complete at once has not converged",
			func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
				return rollout.Step{Complete: true}, nil
			}, "complete but not converged"},
		{"a planner that writes to its input is caught",
			func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
				for i := range rs {
					rs[i].Priority = 1
				}
				return rollout.Plan(rs, s)
			}, "modified its input"},
		{"a planner that fails is reported unless the error is accepted",
			func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
				return rollout.Step{}, errors.New("boom")
			}, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&rollouttest.Exhaustive{Scope: scope, Planner: tt.planner}).Run()
			var v *rollouttest.Violation
			if !errors.As(err, &v) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a violation saying %q", err, tt.want)
			}
			if len(v.Scenario.Replicas) == 0 && v.Scenario.Strategy.Replicas == 0 {
				t.Fatalf("violation without its scenario: %v", err)
			}
		})
	}
}

func TestExhaustiveRejectsBadScopes(t *testing.T) {
	for _, sc := range []rollouttest.Scope{
		{Mode: rollout.Rolling},
		{Mode: rollout.Rolling, Replicas: 2, Revisions: 9},
		{Mode: rollout.Rolling, Replicas: 2, Extra: -1},
		{Mode: rollout.Gang, Replicas: 2, Columns: 9},
		{Mode: rollout.Mode("Stateful"), Replicas: 1},
	} {
		if _, err := (&rollouttest.Exhaustive{Scope: sc}).Run(); err == nil || !strings.HasPrefix(err.Error(), "scope: ") {
			t.Errorf("%+v: got %v, want a scope error", sc, err)
		}
	}
}

// TestSimulatorUsesItsPlanner: the Simulator plans with the Planner it is given.
func TestSimulatorUsesItsPlanner(t *testing.T) {
	calls := 0
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 2}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 2, "1-a", "", 0)}, rollouttest.NoFaults)
	sim.Planner = rollouttest.PlannerFunc(func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
		calls++
		return rollout.Plan(rs, s)
	})
	n, err := sim.Run(10)
	if err != nil || calls != n {
		t.Fatalf("%d reconciles, %d planner calls, err %v", n, calls, err)
	}
}
