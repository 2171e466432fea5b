package rollout_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// dsRole is a role as a DisaggregatedSet runs it: gangs of two pods, maxSurge
// 1 and maxUnavailable 0 (the controller's defaults), old gangs named
// <role>-a-<i> at 1-a and new ones <role>-b-<i> at 2-b, all available.
func dsRole(name string, replicas, old, new int) rollout.Role {
	var rs []rollout.Replica
	for i := range old {
		g := gangOf(fmt.Sprintf("%s-a-%d", name, i), "1-a", up, up)
		g.Index = i
		rs = append(rs, g)
	}
	for i := range new {
		g := gangOf(fmt.Sprintf("%s-b-%d", name, i), "2-b", up, up)
		g.Index = old + i
		rs = append(rs, g)
	}
	return rollout.Role{Name: name, Replicas: rs, Strategy: rollout.Strategy{
		Mode: rollout.Gang, TargetRevision: "2-b", Replicas: replicas, Columns: []string{"0", "1"},
		History:        []string{"1-a", "2-b"},
		MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1)),
	}}
}

// rollingRole is a role of single replicas, old ones <name>-<i> at 1-a, then
// new ones at 2-b, all available.
func rollingRole(name string, replicas, old, new int, maxUnavailable, maxSurge int32) rollout.Role {
	rs := replicasAt(name, old+new, "1-a", ready)
	for i := old; i < old+new; i++ {
		rs[i].Revision = "2-b"
	}
	return rollout.Role{Name: name, Replicas: rs, Strategy: rollout.Strategy{
		TargetRevision: "2-b", Replicas: replicas, History: []string{"1-a", "2-b"},
		MaxUnavailable: ptr(intstr.FromInt32(maxUnavailable)), MaxSurge: ptr(intstr.FromInt32(maxSurge)),
	}}
}

// TestPlanLockstepDrainsOldReplicasInLockstep: every role keeps its share of
// the old revision, D - floor(k*F/S) at step k, where its surge leaves room,
// so no role's old replicas are gone while another role's still serve.
func TestPlanLockstepDrainsOldReplicasInLockstep(t *testing.T) {
	partition := func(r rollout.Role, latest int32) rollout.Role {
		r.Strategy.LatestRatio = ptr(intstr.FromInt32(latest))
		return r
	}
	tests := []struct {
		name  string
		roles []rollout.Role
		want  []string // per role: its actions and the old replicas it keeps for the others
	}{
		{
			// The state recorded from the DisaggregatedSet controller (LWS.md,
			// OldKeptForOtherRoles): S = 2, both roles reached step 1 (one new
			// gang each, available). Old shares at step 1: decode 1 - floor(1/2)
			// = 1, prefill 2 - floor(2/2) = 1. Decode keeps its old gang; prefill
			// drains one and surges its second new gang (its other old gang
			// waits for the floor: maxUnavailable 0).
			name:  "the recorded DisaggregatedSet state: decode keeps its old gang while prefill drains",
			roles: []rollout.Role{dsRole("decode", 1, 1, 1), dsRole("prefill", 2, 2, 1)},
			want: []string{
				"update [] create [] delete [] kept [decode-a-0]",
				"update [] create [2-b@3] delete [prefill-a-0] kept []",
			},
		},
		{
			// Step 2 of 2 reached: every role runs its final count available.
			name:  "at the last step every role drains its old replicas",
			roles: []rollout.Role{dsRole("decode", 1, 1, 1), dsRole("prefill", 2, 1, 2)},
			want: []string{
				"update [] create [] delete [decode-a-0] kept []",
				"update [] create [] delete [prefill-a-0] kept []",
			},
		},
		{
			// A fresh update: step 0, every old replica is the role's share.
			name:  "the first step surges every role and deletes nothing",
			roles: []rollout.Role{dsRole("decode", 1, 1, 0), dsRole("prefill", 2, 2, 0)},
			want: []string{
				"update [] create [2-b@1] delete [] kept []",
				"update [] create [2-b@2] delete [] kept []",
			},
		},
		{
			// S = 4; at step 0 every old replica is its role's share, so the
			// roles reach step 1 by surge where maxUnavailable 1 would allow an
			// update in place: the decode role of 1 runs 1 new from step 1 and
			// keeps its old replica until step 4, prefill keeps 4 - k.
			name:  "roles with surge surge to the next step and keep their old share",
			roles: []rollout.Role{rollingRole("decode", 1, 1, 0, 1, 1), rollingRole("prefill", 4, 4, 0, 1, 1)},
			want: []string{
				"update [] create [2-b@1] delete [] kept [decode-0]",
				"update [] create [2-b@4] delete [] kept [prefill-0]",
			},
		},
		{
			// Without surge there is no room to keep it: its only replica is
			// updated in place (the lockstep of the target counts wins).
			name:  "a role of one without surge updates its old replica in place",
			roles: []rollout.Role{rollingRole("decode", 1, 1, 0, 1, 0), rollingRole("prefill", 4, 4, 0, 1, 0)},
			want: []string{
				"update [decode-0->2-b] create [] delete [] kept []",
				"update [prefill-0->2-b] create [] delete [] kept []",
			},
		},
		{
			// Step 2 of 4 reached (prefill 2 new, decode 1): decode's share is
			// 1 - floor(2/4) = 1 old, its surge replica stays; prefill's is 4 -
			// 2 = 2, so it surges its third new replica.
			name:  "a role at its final count keeps its old share until the last step",
			roles: []rollout.Role{rollingRole("decode", 1, 1, 1, 1, 1), rollingRole("prefill", 4, 2, 2, 1, 1)},
			want: []string{
				"update [] create [] delete [] kept [decode-0]",
				"update [] create [2-b@4] delete [] kept [prefill-0]",
			},
		},
		{
			// A partition: prefill stops at 2 of 4 at the target (F = 2, S = 2),
			// keeping 4 - 2 = 2 old for good, and 4 - floor(1*2/2) = 3 at step 1;
			// decode (F = 2, one surge replica) keeps 2 - floor(1*2/2) = 1.
			name: "a partitioned role drains to its share, not its final count",
			roles: []rollout.Role{rollingRole("decode", 2, 2, 1, 1, 1),
				partition(rollingRole("prefill", 4, 3, 1, 1, 1), 2)},
			want: []string{
				"update [] create [2-b@3] delete [decode-0] kept [decode-1]",
				"update [] create [2-b@4] delete [] kept [prefill-0]",
			},
		},
		{
			// Decode runs more target replicas than its ratio asks (1 of 2):
			// it rolls back on its own, without keeping anything for prefill.
			name: "a role rolling back is planned on its own",
			roles: []rollout.Role{partition(rollingRole("decode", 2, 0, 2, 1, 1), 1),
				rollingRole("prefill", 2, 2, 0, 1, 1)},
			want: []string{
				"update [decode-0->1-a] create [] delete [] kept []",
				"update [] create [2-b@2] delete [] kept [prefill-0]",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.PlanLockstep(tt.roles)
			if err != nil {
				t.Fatalf("PlanLockstep: %v", err)
			}
			for i, rs := range step.Roles {
				if got := actions(rs.Step) + " kept " + fmt.Sprint(kept(rs.Step)); got != tt.want[i] {
					t.Errorf("role %s:\ngot  %s\nwant %s", rs.Name, got, tt.want[i])
				}
				if err := rollouttest.Check(tt.roles[i].Replicas, tt.roles[i].Strategy, rs.Step); err != nil {
					t.Errorf("role %s: %v", rs.Name, err)
				}
			}
		})
	}
}

// kept lists the replicas a step keeps for the other roles (its
// ReasonLockstep waits).
func kept(step rollout.Step) []string {
	out := []string{}
	for _, w := range step.Waiting {
		if w.Reason == rollout.ReasonLockstep {
			out = append(out, w.Replica)
		}
	}
	return out
}

// TestPlanLockstepKeepsOldGangUntilEveryRoleDrains drives the DisaggregatedSet
// update LWS.md records (prefill 2 gangs, decode 1) to the end: each role's
// old and new gangs per reconcile. The DisaggregatedSet controller goes
// decode 1+0, 1+1, 1+1, 0+1 and prefill 2+0, 2+1, 1+1, 1+2, 0+2; kplan takes
// the prefill drain and its surge in one step, and decode's old gang goes
// only with prefill's last.
func TestPlanLockstepKeepsOldGangUntilEveryRoleDrains(t *testing.T) {
	roles := []rollout.Role{dsRole("decode", 1, 1, 0), dsRole("prefill", 2, 2, 0)}
	sims := make([]*rollouttest.Simulator, len(roles))
	for i, r := range roles {
		sims[i] = rollouttest.NewSimulator(rollouttest.Scenario{Replicas: r.Replicas, Strategy: r.Strategy}, rollouttest.NoFaults)
	}
	var trace []string
	for range 10 {
		var counts []string
		for i, s := range sims {
			have, old := atTarget(s.Replicas, s.Strategy.TargetRevision)
			counts = append(counts, fmt.Sprintf("%s %d+%d", roles[i].Name, old, have))
		}
		trace = append(trace, strings.Join(counts, " "))
		step, err := rollout.PlanLockstep(lockstepOf(sims))
		if err != nil {
			t.Fatal(err)
		}
		if step.Complete {
			break
		}
		for i, s := range sims {
			s.Apply(step.Roles[i].Step)
		}
		for _, s := range sims {
			s.Settle(nil)
		}
	}
	want := []string{"decode 1+0 prefill 2+0", "decode 1+1 prefill 2+1", "decode 1+1 prefill 1+2", "decode 0+1 prefill 0+2"}
	if got := strings.Join(trace, ", "); got != strings.Join(want, ", ") {
		t.Fatalf("old+new per reconcile:\ngot  %s\nwant %s", got, strings.Join(want, ", "))
	}
}

// poolKey is a replica's pool: its column in group mode, else "".
func poolKey(s rollout.Strategy, column string) string {
	if s.Mode == rollout.Group {
		return column
	}
	return ""
}

// oldCounts returns, per pool, how many counted replicas do not run the
// target before step and after its actions: deleted ones gone, updated ones
// at their new revision, created ones added.
func oldCounts(rs []rollout.Replica, s rollout.Strategy, step rollout.Step) (before, after map[string]int) {
	before, after = map[string]int{}, map[string]int{}
	if s.Mode == rollout.Group {
		for _, c := range s.Columns {
			before[c], after[c] = 0, 0
		}
	} else {
		before[""], after[""] = 0, 0
	}
	gone := map[string]string{} // replica -> its revision after the step, "" deleted
	for _, d := range step.Delete {
		gone[d.Replica] = ""
	}
	for _, u := range step.Update {
		gone[u.Replica] = u.To
	}
	for _, r := range rollouttest.Counted(rs) {
		c := poolKey(s, r.Column)
		if r.Revision != s.TargetRevision {
			before[c]++
		}
		rev, changed := gone[r.Name]
		if !changed {
			rev = r.Revision
		}
		if rev != "" && rev != s.TargetRevision {
			after[c]++
		}
	}
	for _, cr := range step.Create {
		if cr.Revision != s.TargetRevision {
			after[poolKey(s, cr.Column)]++
		}
	}
	return before, after
}

// reachedStep is the lockstep step the roles are at, out of steps: the
// largest k at which every role has ceil(k*F/S) available target replicas
// (its fewest in any column, in group mode).
func reachedStep(sims []*rollouttest.Simulator, steps int) int {
	k := steps
	for _, s := range sims {
		final, _ := rollout.ResolveRatio(s.Strategy.LatestRatio, s.Strategy.Replicas)
		avail := map[string]int{}
		if s.Strategy.Mode == rollout.Group {
			for _, c := range s.Strategy.Columns {
				avail[c] = 0
			}
		} else {
			avail[""] = 0
		}
		for _, r := range rollouttest.Counted(s.Replicas) {
			c := poolKey(s.Strategy, r.Column)
			if _, ok := avail[c]; !ok {
				avail[c] = 0
			}
			if r.Revision == s.Strategy.TargetRevision && rollouttest.Available(r) {
				avail[c]++
			}
		}
		least := -1
		for _, n := range avail {
			if least < 0 || n < least {
				least = n
			}
		}
		kr := 0
		for kr < steps && least >= ((kr+1)*final+steps-1)/steps {
			kr++
		}
		k = min(k, kr)
	}
	return k
}

// TestPlanLockstepDrainsInLockstepAndCompletes drives lockstep rollouts of any
// roles (any mode, fresh, scaled up, a small role beside a large one) to the
// end and checks, at every reconcile, with k the step every role has reached
// and, per role, D its Replicas, F its final target count and S the steps:
//
//   - old share: a role moving forward (no more target replicas than F), in
//     rolling and gang mode, keeps min(its old replicas before, D -
//     floor(k*F/S) (D - F once k = S), D + maxSurge - Latest) old replicas
//     after the step's actions;
//   - no orphan: a pool's last old replica is planned away only when no other
//     role keeps old replicas after the step, or k = S (every role runs F
//     available target replicas: the last step), or the role has no surge to
//     keep it beside its target count (maxSurge 0 and F = D), or D = 0, or the
//     role rolls back;
//   - completion: the rollout completes within 3 reconciles per step plus 3.
func TestPlanLockstepDrainsInLockstepAndCompletes(t *testing.T) {
	heldSteps := 0
	excuses := map[string]int{} // why a pool drained to 0 before the last step beside others' old replicas
	rapid.Check(t, func(t *rapid.T) {
		sims := lockstepRoles(t)
		driveLockstep(t, sims, func(reconcile int, step rollout.LockstepStep) {
			k := reachedStep(sims, step.Steps)
			before := make([]map[string]int, len(sims))
			after := make([]map[string]int, len(sims))
			othersOld := make([]bool, len(sims)) // another role keeps old replicas after the step
			for i, s := range sims {
				before[i], after[i] = oldCounts(s.Replicas, s.Strategy, step.Roles[i].Step)
			}
			for i := range sims {
				for j := range sims {
					for _, n := range after[j] {
						othersOld[i] = othersOld[i] || (j != i && n > 0)
					}
				}
			}
			for i, s := range sims {
				rs := step.Roles[i].Step
				if len(kept(rs)) > 0 {
					heldSteps++
				}
				d := s.Strategy.Replicas
				final, _ := rollout.ResolveRatio(s.Strategy.LatestRatio, d)
				b, _ := rollout.ResolveBudget(s.Strategy.MaxUnavailable, s.Strategy.MaxSurge, d)
				have, _ := atTarget(s.Replicas, s.Strategy.TargetRevision)
				back := have > final
				share := d - final
				if k < step.Steps {
					share = d - k*final/step.Steps
				}
				for c, n := range after[i] {
					if s.Strategy.Mode != rollout.Group && !back {
						if want := min(before[i][c], share, max(0, d+b.MaxSurge-rs.Latest)); n < want {
							t.Fatalf("reconcile %d: role %d at step %d of %d keeps %d old replicas, want at least %d (before %d, share %d, Latest %d, maxSurge %d)",
								reconcile, i, k, step.Steps, n, want, before[i][c], share, rs.Latest, b.MaxSurge)
						}
					}
					if before[i][c] == 0 || n > 0 {
						continue
					}
					excused := !othersOld[i] || k == step.Steps || (b.MaxSurge == 0 && final == d) || d == 0 || back
					if !excused {
						t.Fatalf("reconcile %d: role %d pool %q plans its last old replica away at step %d of %d while another role keeps old replicas",
							reconcile, i, c, k, step.Steps)
					}
					if othersOld[i] && k < step.Steps {
						switch {
						case back:
							excuses["rolls back"]++
						case d == 0:
							excuses["scaled to 0"]++
						default:
							excuses["maxSurge 0"]++
						}
					}
				}
			}
		})
	})
	t.Logf("%d role steps kept old replicas for the other roles; pools drained to 0 before the last step beside others' old replicas: %v", heldSteps, excuses)
	if heldSteps == 0 {
		t.Fatal("no role ever kept an old replica for the others: the property checked nothing")
	}
}
