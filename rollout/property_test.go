package rollout_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var modes = []rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}

// progressBound is the documented bound on reconciles for a fault-free rollout.
func progressBound(s rollout.Strategy) int {
	b, _ := rollout.ResolveBudget(s.MaxUnavailable, s.MaxSurge, s.Replicas)
	step := max(b.Step(), 1)
	// ceil(n/step) reconciles that move a batch each, one that finds the last batch
	// available, one that reports Complete. Tight: +1 fails.
	bound := (s.Replicas+step-1)/step + 2
	if want, _ := rollout.ResolveRatio(s.LatestRatio, s.Replicas); s.Mode == rollout.Group && want < s.Replicas {
		// Old replicas stay: making their rows whole may take a surge and a
		// deletion more. Tight: +1 fails.
		bound += 2
	}
	return bound
}

func TestPlanKeepsInvariantsUnderFailures(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s never breaks a floor or ceiling while replicas fail", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				faults := rollouttest.Faults{
					UpdateFails: rapid.IntRange(0, 30).Draw(t, "updateFails"),
					Unready:     rapid.IntRange(0, 20).Draw(t, "unready"),
					Recovers:    rapid.IntRange(0, 50).Draw(t, "recovers"),
					Slow:        rapid.IntRange(0, 60).Draw(t, "slow"),
				}
				// Through the Executor interface, as a controller under test would be.
				d := &rollouttest.Driver{Executor: rollouttest.NewSimulator(sc, faults), Strategy: sc.Strategy, T: t}
				ctx := context.Background()
				for range 8 {
					if rapid.IntRange(0, 9).Draw(t, "change") == 0 {
						// The operator changes course mid-rollout: rollback or a new ratio.
						d.Strategy = changeCourse(t, d.Strategy)
					}
					if _, err := d.Reconcile(ctx); err != nil {
						t.Fatal(err)
					}
					if err := d.Advance(ctx); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}

func changeCourse(t *rapid.T, s rollout.Strategy) rollout.Strategy {
	if rapid.Bool().Draw(t, "rollback") {
		s.TargetRevision = rapid.SampledFrom(rollouttest.Revisions).Draw(t, "target")
		s.LatestRatio = nil
		return s
	}
	r := intstr.FromString(fmt.Sprintf("%d%%", 10*rapid.IntRange(1, 10).Draw(t, "ratio")))
	s.LatestRatio = &r
	return s
}

func TestPlanCompletesWithinBoundWithoutFailures(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s converges within the documented bound", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				d := &rollouttest.Driver{Executor: sim, Strategy: sc.Strategy}
				bound := progressBound(sc.Strategy)
				if _, err := d.Run(context.Background(), bound); err != nil {
					t.Fatalf("bound %d: %v", bound, err)
				}
				if err := rollouttest.Converged(sim.Replicas, sc.Strategy); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestRollbackConverges(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s rolls back to the old revision or a lower ratio", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				if _, err := sim.Run(progressBound(sim.Strategy)); err != nil {
					t.Fatalf("forward: %v", err)
				}
				if rapid.Bool().Draw(t, "byRevision") {
					sim.Strategy.TargetRevision = rollouttest.Revisions[0]
					sim.Strategy.LatestRatio = nil
				} else {
					r := intstr.FromString(fmt.Sprintf("%d%%", 10*rapid.IntRange(0, 9).Draw(t, "ratio")))
					sim.Strategy.LatestRatio = &r
					sim.Strategy.History = rollouttest.Revisions
				}
				sim.Reconciles = 0
				if _, err := sim.Run(progressBound(sim.Strategy)); err != nil {
					t.Fatalf("rollback: %v", err)
				}
				if err := rollouttest.Converged(sim.Replicas, sim.Strategy); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestPlanIsDeterministicAndDoesNotMutate(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s gives the same step for shuffled input and leaves it alone", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				before := rollouttest.Clone(sc.Replicas)
				want, err1 := rollout.Plan(sc.Replicas, sc.Strategy)
				shuffled := rollouttest.Shuffled(t, sc.Replicas)
				got, err2 := rollout.Plan(shuffled, sc.Strategy)
				if fmt.Sprint(err1) != fmt.Sprint(err2) {
					t.Fatalf("errors differ: %v vs %v", err1, err2)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("shuffled input gives another step (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(before, sc.Replicas, strictTime); diff != "" {
					t.Fatalf("Plan modified its input (-before +after):\n%s", diff)
				}
			})
		})
	}
}
