package rollout_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func recoverPolicy(t *rapid.T) rollout.RecoverPolicy {
	return rollout.RecoverPolicy{
		Strategy:          rollout.RecoverStrategy(rapid.IntRange(0, 1).Draw(t, "strategy")),
		StartTimeout:      time.Duration(rapid.IntRange(0, 3).Draw(t, "startTimeout")) * time.Minute,
		GangMemberTimeout: time.Duration(rapid.IntRange(0, 3).Draw(t, "gangTimeout")) * time.Minute,
		ReleaseDelay:      time.Duration(rapid.IntRange(0, 3).Draw(t, "releaseDelay")) * time.Minute,
		MaxParallel:       rapid.IntRange(0, 3).Draw(t, "maxParallel"),
		MaxPerWindow:      rapid.IntRange(0, 3).Draw(t, "maxPerWindow"),
		Window:            time.Duration(rapid.IntRange(0, 3).Draw(t, "window")) * time.Minute,
	}
}

func TestRecoverKeepsInvariantsAndHeals(t *testing.T) {
	for _, mode := range []rollout.Mode{rollout.Rolling, rollout.Gang} {
		t.Run(fmt.Sprintf("mode %s replaces failed replicas within quota, never deleting before the replacement is ready", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.Limits{MaxReplicas: 6, MaxColumns: 3}).Draw(t, "scenario")
				sim := &rollouttest.RecoverSimulator{
					Policy:   recoverPolicy(t),
					Replicas: rollouttest.Clone(sc.Replicas),
					Now:      t0,
					Tick:     time.Minute,
					Faults: rollouttest.Faults{
						UpdateFails: rapid.IntRange(0, 30).Draw(t, "startFails"),
						Unready:     rapid.IntRange(0, 20).Draw(t, "fails"),
						Recovers:    rapid.IntRange(0, 30).Draw(t, "recovers"),
						Slow:        rapid.IntRange(0, 60).Draw(t, "slow"),
					},
				}
				strategy := sc.Strategy
				strategy.Replicas = len(sc.Replicas)
				check := func(phase string, i int) {
					if _, err := sim.Reconcile(); err != nil {
						t.Fatalf("%s %d: %v", phase, i, err)
					}
					// The rollout leaves recovery alone and keeps its own budget.
					step, err := rollout.Plan(sim.Replicas, strategy)
					if err != nil {
						t.Fatalf("%s %d: plan: %v", phase, i, err)
					}
					if err := rollouttest.Check(sim.Replicas, strategy, step); err != nil {
						t.Fatalf("%s %d: plan: %v", phase, i, err)
					}
					touched := map[string]bool{}
					for _, u := range step.Update {
						touched[u.Replica] = true
					}
					for _, d := range step.Delete {
						touched[d] = true
					}
					for _, r := range sim.Replicas {
						if touched[r.Name] && r.ReplacementFor != "" {
							t.Fatalf("%s %d: plan touches replacement %s", phase, i, r.Name)
						}
						if touched[r.ReplacementFor] && hasLive(sim.Replicas, r.ReplacementFor) {
							t.Fatalf("%s %d: plan touches %s while it is being replaced", phase, i, r.ReplacementFor)
						}
					}
					sim.Settle(t)
				}
				for i := range 6 {
					check("faults", i)
				}
				// Without new faults recovery finishes: one reconcile per start (quota),
				// plus the time to become ready, swap and release.
				sim.Faults = rollouttest.Faults{}
				if sim.Policy.StartTimeout == 0 && sim.Policy.GangMemberTimeout == 0 {
					// Nothing would notice a missing member: let members come back.
					sim.Faults.Recovers = 100
				}
				limit := 8 + 4*len(sim.Replicas) + 4*len(sim.Replicas)*int(sim.Policy.Window/time.Minute)
				for i := range limit {
					check("heal", i)
				}
				if err := rollouttest.Healthy(sim.Replicas, sim.Policy, sim.Now); err != nil {
					t.Fatalf("not healed after %d reconciles: %v", limit, err)
				}
			})
		})
	}
}

func hasLive(rs []rollout.Replica, name string) bool {
	for _, r := range rs {
		if r.Name == name && r.SwappedAt.IsZero() && !r.State.Terminating {
			return true
		}
	}
	return false
}

func TestPlanRecoverIsDeterministicAndDoesNotMutate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := rollouttest.ScenarioOf(rollout.Gang, rollouttest.DefaultLimits).Draw(t, "scenario")
		policy := recoverPolicy(t)
		before := rollouttest.Clone(sc.Replicas)
		want, err1 := rollout.PlanRecover(sc.Replicas, policy, t0)
		got, err2 := rollout.PlanRecover(rollouttest.Shuffled(t, sc.Replicas), policy, t0)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(want, got) {
			t.Fatalf("shuffled input gives another step:\n%+v\n%+v", want, got)
		}
		if !reflect.DeepEqual(before, sc.Replicas) {
			t.Fatal("PlanRecover modified its input")
		}
	})
}
