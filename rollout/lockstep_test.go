package rollout_test

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

func atTarget(rs []rollout.Replica, target string) (have, old int) {
	for _, r := range rollouttest.Counted(rs) {
		if r.Revision == target {
			have++
		} else {
			old++
		}
	}
	return have, old
}

func TestPlanLockstepMovesRolesTogether(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 3).Draw(t, "roles")
		sims := make([]*rollouttest.Simulator, k)
		for i := range sims {
			sc := rollouttest.ScenarioOf(rollout.Rolling, rollouttest.Limits{MaxReplicas: 8, MaxColumns: 1}).Draw(t, "role")
			sims[i] = rollouttest.NewSimulator(sc, rollouttest.NoFaults)
		}
		roles := func() []rollout.Role {
			out := make([]rollout.Role, k)
			for i, s := range sims {
				out[i] = rollout.Role{Name: fmt.Sprintf("role-%d", i), Replicas: s.Replicas, Strategy: s.Strategy}
			}
			return out
		}
		for reconcile := range 40 {
			step, err := rollout.PlanLockstep(roles())
			if err != nil {
				t.Fatal(err)
			}
			if step.Complete {
				for i, s := range sims {
					if err := rollouttest.Converged(s.Replicas, s.Strategy); err != nil {
						t.Fatalf("role %d: %v", i, err)
					}
				}
				return
			}
			for i, s := range sims {
				rs := step.Roles[i]
				if err := rollouttest.Check(s.Replicas, s.Strategy, rs.Step); err != nil {
					t.Fatalf("reconcile %d: role %d: %v", reconcile, i, err)
				}
				haveBefore, oldBefore := atTarget(s.Replicas, s.Strategy.TargetRevision)
				s.Apply(rs.Step)
				_, oldAfter := atTarget(s.Replicas, s.Strategy.TargetRevision)
				want, _ := rollout.ResolveRatio(s.Strategy.LatestRatio, s.Strategy.Replicas)
				// A role that already had its final count at the target is exempt: it
				// was ahead before lockstep began and nothing regresses.
				if oldAfter == 0 && oldBefore > 0 && haveBefore < want && want == s.Strategy.Replicas && step.Index < step.Steps {
					t.Fatalf("reconcile %d: role %d drained its old replicas at step %d of %d", reconcile, i, step.Index, step.Steps)
				}
			}
			for _, s := range sims {
				s.Settle(nil)
			}
		}
		t.Fatal("lockstep rollout not complete after 40 reconciles")
	})
}

func TestPlanLockstepIsDeterministicAndDoesNotMutate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 3).Draw(t, "roles")
		roles := make([]rollout.Role, k)
		for i := range roles {
			sc := rollouttest.ScenarioOf(rollout.Rolling, rollouttest.Limits{MaxReplicas: 8, MaxColumns: 1}).Draw(t, "role")
			roles[i] = rollout.Role{Name: fmt.Sprintf("role-%d", i), Replicas: sc.Replicas, Strategy: sc.Strategy}
		}
		before := make([][]rollout.Replica, k)
		shuffled := make([]rollout.Role, k)
		for i, r := range roles {
			before[i] = rollouttest.Clone(r.Replicas)
			shuffled[i] = r
			shuffled[i].Replicas = rollouttest.Shuffled(t, r.Replicas)
		}
		want, err1 := rollout.PlanLockstep(roles)
		got, err2 := rollout.PlanLockstep(shuffled)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(want, got) {
			t.Fatalf("shuffled replicas give another step:\n%+v\n%+v", want, got)
		}
		for i := range roles {
			if !reflect.DeepEqual(before[i], roles[i].Replicas) {
				t.Fatalf("role %d: PlanLockstep modified its replicas", i)
			}
		}
	})
}
