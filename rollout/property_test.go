package rollout_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var modes = []rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}

// progressBound is the documented bound on reconciles for a fault-free rollout
// from replicas when pods are updated in place (rollouttest's Simulator by
// default) and deleted pods are gone one Settle later.
func progressBound(s rollout.Strategy, replicas []rollout.Replica) int {
	b, _ := rollout.ResolveBudget(s.MaxUnavailable, s.MaxSurge, s.Replicas)
	step := max(b.Step(), 1)
	// ceil(n/step) reconciles that move a batch each, one that finds the last batch
	// available, one that reports Complete. Tight: -1 fails.
	bound := (s.Replicas+step-1)/step + 2
	if terminatingMembers(replicas) {
		// A gang member still terminating at the start is repaired only once it
		// is gone, a reconcile later than a missing one. Tight: -1 fails.
		bound++
	}
	if want, _ := rollout.ResolveRatio(s.LatestRatio, s.Replicas); s.Mode == rollout.Group && want < s.Replicas {
		// Old replicas stay: making their rows whole may take a surge and a
		// deletion more. Tight: -1 fails.
		bound += 2
	}
	return bound
}

// terminatingMembers reports whether some gang has a member whose pod is
// being deleted while others stay.
func terminatingMembers(replicas []rollout.Replica) bool {
	for _, r := range replicas {
		if r.Effective().Terminating {
			continue
		}
		for _, m := range r.Members {
			if !m.Missing && m.State.Terminating {
				return true
			}
		}
	}
	return false
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

// TestPlanCompletesWithinBoundWithoutFailures: with no failures, a rollout
// completes within the documented bound: progressBound (the in-place bound of
// the package doc) when updates are in place, and rollouttest.ProgressBound,
// the bound Driver.Run uses by default, for a controller that updates by
// deleting pods and creating them again once they are gone (the Simulator with
// Recreate).
func TestPlanCompletesWithinBoundWithoutFailures(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("mode %s, recreate %t, converges within the documented bound", mode, recreate), func(t *testing.T) {
				rapid.Check(t, func(t *rapid.T) {
					sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
					sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
					sim.Recreate = recreate
					d := &rollouttest.Driver{Executor: sim, Strategy: sc.Strategy}
					bound := rollouttest.ProgressBound(sc.Strategy)
					if !recreate {
						bound = progressBound(sc.Strategy, sc.Replicas)
					}
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
}

// TestPlanCompletesWithinBoundAfterMemberDeletions: gang members' pods are
// deleted under the planner (evictions); once that stops, the rollout
// completes within the bound from wherever it is, each deleted member going
// through terminating and missing and being repaired by the planner (the
// Simulator recreates nothing on its own).
func TestPlanCompletesWithinBoundAfterMemberDeletions(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreate %t", recreate), func(t *testing.T) {
			deleted, repaired := 0, 0
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(rollout.Gang, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.Faults{
					MemberDeleted: rapid.IntRange(1, 40).Draw(t, "memberDeleted"),
					Recovers:      100,
				})
				sim.Recreate = recreate
				d := &rollouttest.Driver{Executor: sim, Strategy: sc.Strategy, T: t}
				ctx := context.Background()
				for range rapid.IntRange(1, 6).Draw(t, "faulty") {
					step, err := d.Reconcile(ctx)
					if err != nil {
						t.Fatalf("%v\n%s", err, sc)
					}
					repaired += len(step.Repair)
					if err := d.Advance(ctx); err != nil {
						t.Fatal(err)
					}
					deleted += terminatingPods(sim.Replicas)
				}
				sim.Faults, d.T, d.Reconciles = rollouttest.NoFaults, nil, 0
				from := rollouttest.Clone(sim.Replicas)
				bound := rollouttest.ProgressBound(sc.Strategy)
				if !recreate {
					bound = progressBound(sc.Strategy, from)
				}
				if _, err := d.Run(ctx, bound); err != nil {
					t.Fatalf("bound %d: %v\nafter the deletions:\n%s", bound, err,
						rollouttest.Scenario{Strategy: sc.Strategy, Replicas: from, GangSize: sc.GangSize})
				}
			})
			if deleted == 0 || repaired == 0 {
				t.Fatalf("%d members deleted, %d repairs: the property exercised nothing", deleted, repaired)
			}
		})
	}
}

// terminatingPods counts the gang members whose pods are being deleted.
func terminatingPods(replicas []rollout.Replica) int {
	n := 0
	for _, r := range replicas {
		for _, m := range r.Members {
			if !m.Missing && m.State.Terminating {
				n++
			}
		}
	}
	return n
}

// TestProgressBoundsAreReached pins, for each part of the documented bounds
// that graceful deletion and delete-then-create updates add, a rollout that
// takes exactly that many reconciles, so the bounds are tight (a reconcile
// less fails). The scenarios were found by rapid.
func TestProgressBoundsAreReached(t *testing.T) {
	avail := rollout.State{Ready: true, Available: true, Healthy: true}
	notReady := rollout.State{Healthy: true}
	budget := func(s rollout.Strategy, u, surge intstr.IntOrString) rollout.Strategy {
		s.MaxUnavailable, s.MaxSurge, s.History = &u, &surge, rollouttest.Revisions
		return s
	}
	member := func(name string, st rollout.State, missing bool) rollout.Member {
		column := name[strings.LastIndex(name, "-")+1:]
		if missing {
			return rollout.Member{Column: column, Missing: true}
		}
		return rollout.Member{Name: name, Column: column, State: st}
	}
	ratio30 := intstr.FromString("30%")
	group := budget(rollout.Strategy{Mode: rollout.Group, TargetRevision: "3-c", Replicas: 4, Columns: []string{"col-0", "col-1"},
		LatestRatio: &ratio30}, intstr.FromInt32(0), intstr.FromString("80%"))
	tests := []struct {
		name     string
		recreate bool
		sc       rollouttest.Scenario
		want     int
	}{
		{
			// k = ceil(2/2) = 1; in place the bound is k + 2 + 1 = 4. Reconcile
			// 1 updates r-3 (its terminating pod is left to go), deletes the
			// empty r-0 and r-1 and creates a gang; reconcile 2 repairs r-3 once
			// that pod is gone; reconcile 3 deletes the surplus r-2 and
			// reconcile 4 reports Complete. Were r-3-0 missing instead, the
			// update would have created it a reconcile sooner.
			name: "in place, a gang member terminating at the start: ceil(n/step) + 3",
			sc: rollouttest.Scenario{GangSize: 2, Strategy: budget(rollout.Strategy{Mode: rollout.Gang, TargetRevision: "3-c", Replicas: 2},
				intstr.FromInt32(0), intstr.FromInt32(2)),
				Replicas: []rollout.Replica{
					{Name: "r-0", Revision: "1-a", Members: []rollout.Member{member("r-0-0", rollout.State{}, true), member("r-0-1", rollout.State{}, true)}},
					{Name: "r-1", Revision: "1-a", Members: []rollout.Member{member("r-1-0", rollout.State{}, true), member("r-1-1", rollout.State{}, true)}},
					{Name: "r-2", Revision: "1-a", Members: []rollout.Member{member("r-2-0", avail, false), member("r-2-1", avail, false)}},
					{Name: "r-3", Revision: "1-a", Members: []rollout.Member{
						member("r-3-0", rollout.State{Healthy: true, Terminating: true}, false), member("r-3-1", notReady, false)}},
				}},
			want: 4,
		},
		{
			// k = 1; 2k + 2 = 4. Reconcile 1 updates the failed r-0, which
			// deletes it, and surges one at 3-c; reconcile 2 creates r-0's
			// successor once it is gone (in place, r-0 would be available by
			// then); reconcile 3 deletes r-1 and reconcile 4 reports Complete.
			name:     "recreating, rolling: 2 ceil(n/step) + 2",
			recreate: true,
			sc: rollouttest.Scenario{Strategy: budget(rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "3-c", Replicas: 2},
				intstr.FromInt32(0), intstr.FromInt32(2)),
				Replicas: []rollout.Replica{{Name: "r-0", Revision: "1-a", State: rollout.State{Failed: true}}, {Name: "r-1", Revision: "1-a", State: avail}}},
			want: 4,
		},
		{
			// n = 4, step = 80% of 4 rounded up = 4, k = 1; L = 30% of 4
			// rounded up = 2 < 4: 2k + 2 + 1 = 5. Reconcile 1 deletes col-1's
			// surplus r-2, updates (deletes) the failed r-3 and creates col-0's
			// missing two; reconcile 2 creates r-3's successor; reconcile 3
			// makes col-1's old rows whole (a 2-b surge, r-4 deleted), reconcile
			// 4 deletes r-5 and reconcile 5 reports Complete.
			name:     "recreating, group mode keeping old replicas: 2 ceil(n/step) + 3",
			recreate: true,
			sc: rollouttest.Scenario{Strategy: group, Replicas: []rollout.Replica{
				{Name: "r-0", Revision: "1-a", Column: "col-0", State: rollout.State{Failed: true}},
				{Name: "r-1", Revision: "2-b", Column: "col-0", State: rollout.State{Failed: true}},
				{Name: "r-2", Revision: "1-a", Column: "col-1", State: rollout.State{Failed: true}},
				{Name: "r-3", Revision: "1-a", Column: "col-1", State: rollout.State{Failed: true}},
				{Name: "r-4", Revision: "1-a", Column: "col-1", State: avail},
				{Name: "r-5", Revision: "1-a", Column: "col-1", State: avail},
				{Name: "r-6", Revision: "1-a", Column: "col-1", State: avail},
			}},
			want: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bound := progressBound(tt.sc.Strategy, tt.sc.Replicas)
			if tt.recreate {
				bound = rollouttest.ProgressBound(tt.sc.Strategy)
			}
			if bound != tt.want {
				t.Fatalf("bound %d, want %d", bound, tt.want)
			}
			sim := rollouttest.NewSimulator(tt.sc, rollouttest.NoFaults)
			sim.Recreate = tt.recreate
			n, err := sim.Run(bound)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Fatalf("complete after %d reconciles, want exactly %d (the bound)", n, tt.want)
			}
		})
	}
}

func TestRollbackConverges(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s rolls back to the old revision or a lower ratio", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				if _, err := sim.Run(progressBound(sim.Strategy, sim.Replicas)); err != nil {
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
				if _, err := sim.Run(progressBound(sim.Strategy, sim.Replicas)); err != nil {
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
