package rollout_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
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
				haveBefore, _ := atTarget(s.Replicas, s.Strategy.TargetRevision)
				moved := 0
				for _, u := range rs.Step.Update {
					if u.To == s.Strategy.TargetRevision {
						moved++
					}
				}
				// In-place moves never take a role past its share of the step,
				// ceil(Index * F / Steps) (it may already be past it).
				final, _ := rollout.ResolveRatio(s.Strategy.LatestRatio, s.Strategy.Replicas)
				share := (step.Index*final + step.Steps - 1) / step.Steps
				if moved > 0 && haveBefore+moved > max(share, haveBefore) {
					t.Fatalf("reconcile %d: role %d moves %d to the target beside %d, past its share %d at step %d of %d",
						reconcile, i, moved, haveBefore, share, step.Index, step.Steps)
				}
				s.Apply(rs.Step)
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
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("shuffled replicas give another error: %v vs %v", err1, err2)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("shuffled replicas give another step (-want +got):\n%s", diff)
		}
		for i := range roles {
			if diff := cmp.Diff(before[i], roles[i].Replicas, strictTime); diff != "" {
				t.Fatalf("role %d: PlanLockstep modified its replicas (-before +after):\n%s", i, diff)
			}
		}
	})
}

// lockstepRoles draws 1-3 roles of any mode: fresh (no replicas), scaled up
// (more replicas wanted than exist), or mid-rollout, with a small role beside a
// large one often.
func lockstepRoles(t *rapid.T) []*rollouttest.Simulator {
	k := rapid.IntRange(1, 3).Draw(t, "roles")
	sims := make([]*rollouttest.Simulator, k)
	for i := range sims {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.Limits{MaxReplicas: 12, MaxColumns: 2}).Draw(t, "role")
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			sc.Replicas = nil
		case 1:
			sc.Strategy.Replicas += rapid.IntRange(1, 6).Draw(t, "scaleUp")
		}
		if rapid.Bool().Draw(t, "noHistory") {
			sc.Strategy.History = nil
		}
		sims[i] = rollouttest.NewSimulator(sc, rollouttest.NoFaults)
	}
	return sims
}

func lockstepOf(sims []*rollouttest.Simulator) []rollout.Role {
	out := make([]rollout.Role, len(sims))
	for i, s := range sims {
		out[i] = rollout.Role{Name: fmt.Sprintf("role-%d", i), Replicas: s.Replicas, Strategy: s.Strategy}
	}
	return out
}

// A lockstep rollout of any roles (any mode, fresh, scaled up, a small role beside
// a large one) completes without failures within 3 reconciles per step plus 3,
// and every role has reached its final count; replicas a role lacks are created
// on the update revision.
func TestPlanLockstepAlwaysCompletes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sims := lockstepRoles(t)
		driveLockstep(t, sims, func(reconcile int, step rollout.LockstepStep) {
			for i, s := range sims {
				rs := step.Roles[i].Step
				// Every role asks for its share of the step, rounded up, so a
				// small role advances beside a large one.
				final, _ := rollout.ResolveRatio(s.Strategy.LatestRatio, s.Strategy.Replicas)
				if share := (step.Index*final + step.Steps - 1) / step.Steps; s.Strategy.Mode != rollout.Group && rs.Latest < share {
					t.Fatalf("reconcile %d: role %d asks for %d at the target, below its share %d at step %d of %d",
						reconcile, i, rs.Latest, share, step.Index, step.Steps)
				}
				// Replicas a role lacks are created on the update revision, up to
				// its final count (per column in group mode).
				for c, lack := range lacking(s.Replicas, s.Strategy) {
					created := 0
					for _, cr := range rs.Create {
						if cr.Column == c && cr.Revision == s.Strategy.TargetRevision {
							created++
						}
					}
					if created < lack {
						t.Fatalf("reconcile %d: role %d column %q creates %d on the update revision %s, want at least %d: %v",
							reconcile, i, c, created, s.Strategy.TargetRevision, lack, rs.Create)
					}
				}
			}
		})
		for i, s := range sims {
			if err := rollouttest.Converged(s.Replicas, s.Strategy); err != nil {
				t.Fatalf("role %d: %v", i, err)
			}
		}
	})
}

// driveLockstep runs the lockstep rollout of sims to completion: at each reconcile
// it plans, checks each role's step with rollouttest.Check, calls check (which may
// fail the test) before anything is applied, applies each role's step and lets
// the replicas settle. It fails the test when the rollout is not complete within 3
// reconciles per step plus 3.
func driveLockstep(t *rapid.T, sims []*rollouttest.Simulator, check func(reconcile int, step rollout.LockstepStep)) {
	bound := -1
	for reconcile := 0; bound < 0 || reconcile < bound; reconcile++ {
		step, err := rollout.PlanLockstep(lockstepOf(sims))
		if err != nil {
			t.Fatalf("reconcile %d: %v", reconcile, err)
		}
		if bound < 0 {
			bound = 3*step.Steps + 3
		}
		if step.Complete {
			return
		}
		for i, s := range sims {
			if err := rollouttest.Check(s.Replicas, s.Strategy, step.Roles[i].Step); err != nil {
				t.Fatalf("reconcile %d: role %d: %v", reconcile, i, err)
			}
		}
		check(reconcile, step)
		for i, s := range sims {
			s.Apply(step.Roles[i].Step)
		}
		for _, s := range sims {
			s.Settle(nil)
		}
	}
	t.Fatalf("lockstep rollout not complete after %d reconciles", bound)
}

func TestPlanLockstepCreatesOnTheUpdateRevision(t *testing.T) {
	role := func(name string, have, want int, history []string) rollout.Role {
		return rollout.Role{Name: name, Replicas: replicasAt(name, have, "1-a", ready), Strategy: rollout.Strategy{
			TargetRevision: "2-b", Replicas: want, History: history,
			MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0)),
		}}
	}
	history := []string{"1-a", "2-b"}
	tests := []struct {
		name  string
		roles []rollout.Role
		want  []string // per role: its actions
	}{
		{
			name:  "a fresh deploy without history creates every replica on the update revision in one step",
			roles: []rollout.Role{role("prefill", 0, 4, nil), role("decode", 0, 2, nil)},
			want:  []string{"update [] create [2-b@0 2-b@1 2-b@2 2-b@3] delete []", "update [] create [2-b@0 2-b@1] delete []"},
		},
		{
			name:  "a fresh deploy with history creates every replica on the update revision in one step",
			roles: []rollout.Role{role("prefill", 0, 4, history), role("decode", 0, 2, history)},
			want:  []string{"update [] create [2-b@0 2-b@1 2-b@2 2-b@3] delete []", "update [] create [2-b@0 2-b@1] delete []"},
		},
		{
			// S = 6 steps; step 1: prefill ceil(6/6) = 1 at the target, but the two
			// replicas it lacks are created there at once; decode updates 1.
			name:  "a scale-up creates the new replicas on the update revision",
			roles: []rollout.Role{role("prefill", 4, 6, history), role("decode", 2, 2, history)},
			want:  []string{"update [] create [2-b@4 2-b@5] delete []", "update [decode-0->2-b] create [] delete []"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.PlanLockstep(tt.roles)
			if err != nil {
				t.Fatalf("PlanLockstep: %v", err)
			}
			for i, rs := range step.Roles {
				if got := actions(rs.Step); got != tt.want[i] {
					t.Errorf("role %s: got %s, want %s", rs.Name, got, tt.want[i])
				}
			}
		})
	}
}

// A role of 1 or 2 replicas beside one of 10 moves at the first step (LWS rounds
// each role's share up), instead of waiting for the last.
func TestPlanLockstepSmallRoleAdvancesAtTheFirstStep(t *testing.T) {
	for _, small := range []int{1, 2} {
		t.Run(fmt.Sprintf("a role of %d beside a role of 10", small), func(t *testing.T) {
			role := func(name string, n int) rollout.Role {
				return rollout.Role{Name: name, Replicas: replicasAt(name, n, "1-a", ready), Strategy: rollout.Strategy{
					TargetRevision: "2-b", Replicas: n, History: []string{"1-a", "2-b"},
					MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0)),
				}}
			}
			step, err := rollout.PlanLockstep([]rollout.Role{role("decode", 10), role("prefill", small)})
			if err != nil {
				t.Fatal(err)
			}
			if step.Index != 1 || step.Steps != 10 {
				t.Fatalf("step %d of %d, want 1 of 10", step.Index, step.Steps)
			}
			for _, rs := range step.Roles {
				if len(rs.Step.Update) != 1 || rs.Step.Latest != 1 {
					t.Errorf("role %s: %s with latest %d, want one update", rs.Name, actions(rs.Step), rs.Step.Latest)
				}
			}
		})
	}
}

// lacking returns, per column ("" outside group mode), how many replicas a role
// lacks that its final count at the target still needs: min(missing, F - have).
func lacking(rs []rollout.Replica, s rollout.Strategy) map[string]int {
	final, _ := rollout.ResolveRatio(s.LatestRatio, s.Replicas)
	total, have := map[string]int{}, map[string]int{}
	if s.Mode == rollout.Group {
		for _, c := range s.Columns {
			total[c] = 0
		}
	} else {
		total[""] = 0
	}
	for _, r := range rollouttest.Counted(rs) {
		c := ""
		if s.Mode == rollout.Group {
			c = r.Column
		}
		total[c]++
		if r.Revision == s.TargetRevision {
			have[c]++
		}
	}
	out := map[string]int{}
	for c, n := range total {
		out[c] = max(0, min(s.Replicas-n, final-have[c]))
	}
	return out
}
