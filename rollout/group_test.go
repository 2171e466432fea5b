package rollout_test

import (
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
