package rollout_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func recoverPolicy(t *rapid.T) rollout.RecoverPolicy {
	perWindow := rapid.IntRange(0, 3).Draw(t, "maxPerWindow")
	minWindow := 0
	if perWindow > 0 {
		minWindow = 1 // a cap needs a window (PlanRecover rejects it without)
	}
	return rollout.RecoverPolicy{
		Strategy:          rapid.SampledFrom([]rollout.RecoverStrategy{rollout.CreateThenDelete, rollout.DeleteThenCreate, rollout.NoRecover}).Draw(t, "strategy"),
		StartTimeout:      time.Duration(rapid.IntRange(0, 3).Draw(t, "startTimeout")) * time.Minute,
		GangMemberTimeout: time.Duration(rapid.IntRange(0, 3).Draw(t, "gangTimeout")) * time.Minute,
		ReleaseDelay:      time.Duration(rapid.IntRange(0, 3).Draw(t, "releaseDelay")) * time.Minute,
		MaxParallel:       rapid.IntRange(0, 3).Draw(t, "maxParallel"),
		MaxPerWindow:      perWindow,
		Window:            time.Duration(rapid.IntRange(minWindow, 3).Draw(t, "window")) * time.Minute,
	}
}

func TestRecoverKeepsInvariantsAndHeals(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s replaces failed replicas within quota, never deleting before the replacement is ready", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.Limits{MaxReplicas: 6, MaxColumns: 3}).Draw(t, "scenario")
				// Members missing from the start were observed missing at t0: a
				// missing member of unknown age never times out.
				for i := range sc.Replicas {
					for j := range sc.Replicas[i].Members {
						if m := &sc.Replicas[i].Members[j]; m.Missing {
							m.State.UnreadySince = t0
						}
					}
				}
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
				swappedReady := map[string]bool{} // failed replicas swapped out for a ready, whole replacement
				check := func(phase string, i int) {
					before := rollouttest.Clone(sim.Replicas)
					rstep, err := sim.Reconcile()
					if err != nil {
						t.Fatalf("%s %d: %v", phase, i, err)
					}
					checkRecoverHistory(t, fmt.Sprintf("%s %d", phase, i), before, sim, rstep, swappedReady)
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
						touched[d.Replica] = true
					}
					// A replacement may be repaired (it is swapped in only whole),
					// never updated or deleted; the replica it replaces is not
					// touched at all.
					repaired := map[string]bool{}
					for _, rp := range step.Repair {
						repaired[rp.Replica] = true
					}
					for _, r := range sim.Replicas {
						if touched[r.Name] && r.ReplacementFor != "" {
							t.Fatalf("%s %d: plan touches replacement %s", phase, i, r.Name)
						}
						if (touched[r.ReplacementFor] || repaired[r.ReplacementFor]) && hasLive(sim.Replicas, r.ReplacementFor) {
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
				if sim.Policy.Strategy == rollout.NoRecover {
					return // nothing heals failed replicas; checkRecoverHistory saw no action
				}
				if err := rollouttest.Healthy(sim.Replicas, sim.Policy, sim.Now); err != nil {
					t.Fatalf("not healed after %d reconciles: %v", limit, err)
				}
			})
		})
	}
}

// checkRecoverHistory checks recovery over the whole simulation, independently of
// rollouttest.CheckRecover: a swap brings in a replacement whose every member is
// present and serving, as many as the failed gang had; under CreateThenDelete a
// failed replica is released only after such a swap; replacements in flight
// never exceed MaxParallel; and no Window ever holds more than MaxPerWindow starts.
func checkRecoverHistory(t *rapid.T, at string, before []rollout.Replica, sim *rollouttest.RecoverSimulator,
	step rollout.RecoverStep, swappedReady map[string]bool) {
	byName := map[string]rollout.Replica{}
	for _, r := range before {
		byName[r.Name] = r
	}
	for _, sw := range step.Swap {
		rep := byName[sw.New]
		old, hadOld := byName[sw.Old]
		ready := rep.State.Ready && rep.State.Healthy && !rep.State.Failed
		if len(rep.Members) > 0 {
			ready = !hadOld || len(rep.Members) == len(old.Members)
			for _, m := range rep.Members {
				ready = ready && !m.Missing && m.State.Ready && m.State.Healthy && !m.State.Failed && !m.State.Lost
			}
		}
		if !ready {
			t.Fatalf("%s: swap %s>%s: the replacement is not whole and serving: %+v", at, sw.Old, sw.New, rep)
		}
		if hadOld {
			swappedReady[sw.Old] = true
		}
	}
	if sim.Policy.Strategy == rollout.NoRecover && (len(step.Replace) > 0 || len(step.Swap) > 0 || len(step.Release) > 0) {
		t.Fatalf("%s: NoRecover acted: %+v", at, step)
	}
	if sim.Policy.Strategy == rollout.CreateThenDelete {
		for _, name := range step.Release {
			if !swappedReady[name] {
				t.Fatalf("%s: %s released before a ready replacement was swapped in", at, name)
			}
		}
	}
	if p := sim.Policy.MaxParallel; p > 0 {
		inFlight := 0
		for _, r := range sim.Replicas {
			if r.ReplacementFor != "" && r.SwappedAt.IsZero() && !r.State.Terminating {
				inFlight++
			}
		}
		if inFlight > p {
			t.Fatalf("%s: %d replacements in flight, MaxParallel %d", at, inFlight, p)
		}
	}
	if w, limit := sim.Policy.Window, sim.Policy.MaxPerWindow; w > 0 && limit > 0 {
		for _, end := range sim.Policy.Started {
			n := 0
			for _, s := range sim.Policy.Started {
				if !s.After(end) && end.Sub(s) < w {
					n++
				}
			}
			if n > limit {
				t.Fatalf("%s: %d replacements started in the %s window ending %s, MaxPerWindow %d", at, n, w, end, limit)
			}
		}
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
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		policy := recoverPolicy(t)
		before := rollouttest.Clone(sc.Replicas)
		want, err1 := rollout.PlanRecover(sc.Replicas, policy, t0)
		got, err2 := rollout.PlanRecover(rollouttest.Shuffled(t, sc.Replicas), policy, t0)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("shuffled input gives another error: %v vs %v", err1, err2)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("shuffled input gives another step (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, sc.Replicas, strictTime); diff != "" {
			t.Fatalf("PlanRecover modified its input (-before +after):\n%s", diff)
		}
	})
}
