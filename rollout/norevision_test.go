package rollout_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// actions renders a step's updates, creates and deletes as text.
func actions(step rollout.Step) string {
	return fmt.Sprintf("update %v create %v delete %v", updated(step), created(step), deleted(step))
}

func TestPlanWithoutAnOlderRevisionKeepsEveryReplicaOnTheTarget(t *testing.T) {
	half := ptr(intstr.FromString("50%"))
	one := ptr(intstr.FromInt32(1))
	column := func(c string, n int) []rollout.Replica {
		rs := replicasAt(c, n, "2-b", ready)
		for i := range rs {
			rs[i].Column = c
		}
		return rs
	}
	tests := []struct {
		name         string
		replicas     []rollout.Replica
		strategy     rollout.Strategy
		want         string
		wantComplete bool
	}{
		{
			// A workload held at a partition: nothing older to hold replicas on.
			name:         "a pool on the target held at a partition is a no-op and complete",
			replicas:     replicasAt("r", 4, "2-b", ready),
			strategy:     rollout.Strategy{TargetRevision: "2-b", Replicas: 4, LatestRatio: half},
			want:         "update [] create [] delete []",
			wantComplete: true,
		},
		{
			name:     "a fresh pool created with a partition is created on the target",
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 4, LatestRatio: half},
			want:     "update [] create [2-b@0 2-b@1 2-b@2 2-b@3] delete []",
		},
		{
			name:     "a scale-up under a partition creates on the target",
			replicas: replicasAt("r", 2, "2-b", ready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 5, LatestRatio: ptr(intstr.FromString("20%"))},
			want:     "update [] create [2-b@2 2-b@3 2-b@4] delete []",
		},
		{
			name:     "a ratio of zero without history creates on the target",
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 2, LatestRatio: ptr(intstr.FromInt32(0)), History: []string{"2-b"}},
			want:     "update [] create [2-b@0 2-b@1] delete []",
		},
		{
			name:     "a fresh gang pool created with a partition is created on the target",
			strategy: rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 3, LatestRatio: half},
			want:     "update [] create [2-b@0 2-b@1 2-b@2] delete []",
		},
		{
			name:     "a fresh group created with a partition is created on the target in every column",
			strategy: rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 2, Columns: []string{"a", "b"}, LatestRatio: half},
			want:     "update [] create [a/2-b@0 a/2-b@1 b/2-b@0 b/2-b@1] delete []",
		},
		{
			name:         "a group on the target held at a partition is a no-op and complete",
			replicas:     append(column("a", 2), column("b", 2)...),
			strategy:     rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 2, LatestRatio: half},
			want:         "update [] create [] delete []",
			wantComplete: true,
		},
		{
			// The rule above applies only when nothing older is known: with History,
			// lowering the ratio rolls back as documented.
			name:     "with history a partition still rolls replicas back",
			replicas: replicasAt("r", 4, "2-b", ready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 4, LatestRatio: half, History: []string{"1-a", "2-b"}, MaxUnavailable: one, MaxSurge: ptr(intstr.FromInt32(0))},
			want:     "update [r-0->1-a] create [] delete []",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := actions(step); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if step.Complete != tt.wantComplete {
				t.Errorf("Complete = %v, want %v", step.Complete, tt.wantComplete)
			}
		})
	}
}

// With no revision older than the target known, any partition, in any mode,
// gives a plan (never an error) that only ever runs the target, and converges
// with every replica on it.
func TestPlanWithoutAnOlderRevisionConvergesOnTheTarget(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				target := sc.Strategy.TargetRevision
				sc.Strategy.History = nil
				if rapid.Bool().Draw(t, "historyOfTarget") {
					sc.Strategy.History = []string{target}
				}
				r := intstr.FromString(fmt.Sprintf("%d%%", rapid.IntRange(0, 99).Draw(t, "ratio")))
				sc.Strategy.LatestRatio = &r
				for i := range sc.Replicas {
					sc.Replicas[i].Revision = target
					for j := range sc.Replicas[i].Members {
						sc.Replicas[i].Members[j].Revision = ""
					}
				}
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				bound := progressBound(sc.Strategy, sc.Replicas)
				for range bound {
					step, err := sim.Reconcile()
					if err != nil {
						t.Fatal(err)
					}
					for _, u := range step.Update {
						t.Fatalf("update %s -> %s: nothing should move", u.Replica, u.To)
					}
					for _, c := range step.Create {
						if c.Revision != target {
							t.Fatalf("create index %d at %s, not the target %s", c.Index, c.Revision, target)
						}
					}
					if step.Complete {
						if err := rollouttest.Converged(sim.Replicas, sim.Strategy); err != nil {
							t.Fatal(err)
						}
						for _, r := range sim.Replicas {
							if r.Revision != target {
								t.Fatalf("%s runs %s", r.Name, r.Revision)
							}
						}
						return
					}
					sim.Settle(nil)
				}
				t.Fatalf("not complete after %d reconciles", bound)
			})
		})
	}
}
