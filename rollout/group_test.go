package rollout_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// After LatestRatio is lowered from 3 to 2 rows of 3, with every column at or
// above 2 and one column's target replicas not available yet, Step.Latest is 2:
// every column is planned toward 2.
func TestPlanGroupLatestIsTheLoweredRatioOnceNoColumnIsBelowIt(t *testing.T) {
	notYet := rollout.State{Ready: true, Healthy: true}
	rs := []rollout.Replica{
		{Name: "a-0", Column: "a", Revision: "2-b", State: ready},
		{Name: "a-1", Column: "a", Revision: "2-b", State: ready},
		{Name: "a-2", Column: "a", Revision: "2-b", State: ready},
		{Name: "b-0", Column: "b", Revision: "2-b", State: notYet},
		{Name: "b-1", Column: "b", Revision: "2-b", State: notYet},
		{Name: "b-2", Column: "b", Revision: "1-a", State: ready},
	}
	step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 3,
		LatestRatio: ptr(intstr.FromInt32(2)), History: []string{"1-a", "2-b"},
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
	if err != nil {
		t.Fatal(err)
	}
	if step.Latest != 2 {
		t.Errorf("Latest = %d, want 2", step.Latest)
	}
	if got := actions(step); got != "update [a-0->1-a] create [] delete []" {
		t.Errorf("got %s", got)
	}
}

// In group mode, once no column runs fewer target replicas than the resolved
// LatestRatio, Step.Latest is that count, in any state and after any change of
// course.
func TestPlanGroupLatestIsTheTargetOnceNoColumnIsBelowIt(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := rollouttest.ScenarioOf(rollout.Group, rollouttest.DefaultLimits).Draw(t, "scenario")
		sim := rollouttest.NewSimulator(sc, rollouttest.Faults{
			UpdateFails: rapid.IntRange(0, 30).Draw(t, "updateFails"),
			Recovers:    rapid.IntRange(0, 50).Draw(t, "recovers"),
			Slow:        rapid.IntRange(0, 60).Draw(t, "slow"),
		})
		for range 8 {
			if rapid.IntRange(0, 3).Draw(t, "change") == 0 {
				sim.Strategy = changeCourse(t, sim.Strategy)
			}
			want, err := rollout.ResolveRatio(sim.Strategy.LatestRatio, sim.Strategy.Replicas)
			if err != nil {
				t.Fatal(err)
			}
			perColumn := map[string]int{}
			for _, c := range sim.Strategy.Columns {
				perColumn[c] = 0
			}
			for _, r := range rollouttest.Counted(sim.Replicas) {
				if _, ok := perColumn[r.Column]; !ok {
					perColumn[r.Column] = 0
				}
				if r.Revision == sim.Strategy.TargetRevision {
					perColumn[r.Column]++
				}
			}
			below := false
			for _, n := range perColumn {
				below = below || n < want
			}
			step, err := sim.Reconcile()
			if err != nil {
				t.Fatal(err)
			}
			if !below && step.Latest != want {
				t.Fatalf("no column below %d at the target (%v), but Latest = %d", want, perColumn, step.Latest)
			}
			sim.Settle(t)
		}
	})
}

// The case: three revisions, columns A = {3-c, 1-a} and B = {3-c, 2-b} at
// LatestRatio 1 of 2. The second row mixes 1-a and 2-b and cannot serve: the
// plan is not complete, says no old revision has a whole row, and moves A's 1-a
// to the stable revision 2-b.
func TestPlanGroupIsNotCompleteWhileARowMixesRevisions(t *testing.T) {
	rs := []rollout.Replica{
		{Name: "a-0", Column: "a", Revision: "3-c", State: ready},
		{Name: "a-1", Column: "a", Revision: "1-a", State: ready},
		{Name: "b-0", Column: "b", Revision: "3-c", State: ready},
		{Name: "b-1", Column: "b", Revision: "2-b", State: ready},
	}
	s := rollout.Strategy{Mode: rollout.Group, TargetRevision: "3-c", Replicas: 2,
		LatestRatio: ptr(intstr.FromInt32(1)), History: []string{"1-a", "2-b", "3-c"},
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	step, err := rollout.Plan(rs, s)
	if err != nil {
		t.Fatal(err)
	}
	if step.Complete {
		t.Error("Complete with a row that mixes 1-a and 2-b")
	}
	if got, want := fmt.Sprint(step.Rows), "[{1-a 0 0} {2-b 0 0} {3-c 1 1}]"; got != want {
		t.Errorf("Rows = %s, want %s", got, want)
	}
	if got := actions(step); got != "update [a-1->2-b] create [] delete []" {
		t.Errorf("got %s", got)
	}
	// Once applied and available, the rows are whole and the plan complete.
	rs[1].Revision = "2-b"
	step, err = rollout.Plan(rs, s)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Complete || fmt.Sprint(step.Rows) != "[{2-b 1 1} {3-c 1 1}]" {
		t.Errorf("after the repair: Complete %v, Rows %v", step.Complete, step.Rows)
	}
}

// With maxUnavailable 0 the repair surges at the stable revision and then
// deletes the replica that served in no row, never the new one.
func TestPlanGroupMakesRowsWholeBySurgeWithoutUnavailableBudget(t *testing.T) {
	rs := []rollout.Replica{
		{Name: "a-0", Column: "a", Revision: "3-c", State: ready},
		{Name: "a-1", Column: "a", Revision: "1-a", State: ready},
		{Name: "b-0", Column: "b", Revision: "3-c", State: ready},
		{Name: "b-1", Column: "b", Revision: "2-b", State: ready},
	}
	s := rollout.Strategy{Mode: rollout.Group, TargetRevision: "3-c", Replicas: 2,
		LatestRatio: ptr(intstr.FromInt32(1)), History: []string{"1-a", "2-b", "3-c"},
		MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
	want := []string{
		"update [] create [a/2-b@1] delete []",
		"update [] create [] delete []", // the new replica is not available yet
		"update [] create [] delete [a-1]",
	}
	for i, w := range want {
		step, err := rollout.Plan(rs, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := actions(step); got != w {
			t.Fatalf("reconcile %d: got %s, want %s", i, got, w)
		}
		switch i {
		case 0:
			rs = append(rs, rollout.Replica{Name: "a-2", Column: "a", Revision: "2-b", State: rollout.State{Healthy: true}})
		case 1:
			rs[4].State = ready
		}
	}
}

// In group mode, whatever the failures and changes of course, a Complete step has
// whole rows, and Step.Rows is every revision's fewest replicas over the columns.
func TestPlanGroupCompleteImpliesWholeRows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := rollouttest.ScenarioOf(rollout.Group, rollouttest.DefaultLimits).Draw(t, "scenario")
		sim := rollouttest.NewSimulator(sc, rollouttest.Faults{
			UpdateFails: rapid.IntRange(0, 20).Draw(t, "updateFails"),
			Recovers:    rapid.IntRange(0, 100).Draw(t, "recovers"),
			Slow:        rapid.IntRange(0, 40).Draw(t, "slow"),
		})
		for range 12 {
			if rapid.IntRange(0, 5).Draw(t, "change") == 0 {
				sim.Strategy = changeCourse(t, sim.Strategy)
			}
			before := rollouttest.Clone(sim.Replicas)
			step, err := sim.Reconcile()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(step.Rows), fmt.Sprint(rowsOf(before, sim.Strategy)); got != want {
				t.Fatalf("Rows = %s, want %s", got, want)
			}
			if step.Complete {
				if err := rollouttest.WholeRows(before, sim.Strategy); err != nil {
					t.Fatalf("Complete, but %v", err)
				}
				sum := 0
				for _, r := range step.Rows {
					sum += r.Rows
				}
				if sum != sim.Strategy.Replicas {
					t.Fatalf("Complete, but whole rows %v add up to %d, not %d", step.Rows, sum, sim.Strategy.Replicas)
				}
			}
			sim.Settle(t)
		}
	})
}

// rowsOf recounts whole rows: per revision some counted replica runs (oldest
// first), the fewest replicas and available replicas in any column.
func rowsOf(rs []rollout.Replica, s rollout.Strategy) []rollout.RevisionRows {
	type key struct{ col, rev string }
	count, avail := map[key]int{}, map[key]int{}
	cols := map[string]bool{}
	for _, c := range s.Columns {
		cols[c] = true
	}
	revs := map[string]bool{}
	for _, r := range rollouttest.Counted(rs) {
		cols[r.Column], revs[r.Revision] = true, true
		count[key{r.Column, r.Revision}]++
		if rollouttest.Available(r) {
			avail[key{r.Column, r.Revision}]++
		}
	}
	var out []rollout.RevisionRows
	for _, rev := range rollout.SortRevisions(slices.Collect(maps.Keys(revs)), s.History) {
		row := rollout.RevisionRows{Revision: rev, Rows: -1, AvailableRows: -1}
		for c := range cols {
			if n := count[key{c, rev}]; row.Rows < 0 || n < row.Rows {
				row.Rows = n
			}
			if n := avail[key{c, rev}]; row.AvailableRows < 0 || n < row.AvailableRows {
				row.AvailableRows = n
			}
		}
		out = append(out, row)
	}
	return out
}
