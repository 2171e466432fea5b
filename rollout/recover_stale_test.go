package rollout_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var strategies = []rollout.RecoverStrategy{rollout.CreateThenDelete, rollout.DeleteThenCreate, rollout.NoRecover}

// TestPlanRecoverNeverSwapsAReplicaThatIsNotFailed: r-9 is healthy but not ready
// since 11:50; with StartTimeout 0 that is not a failure. Its replacement r-9-x
// (started while r-9 counted as failed) is available. r-9 must not be swapped
// out: the replacement is cancelled, and NoRecover does nothing at all.
func TestPlanRecoverNeverSwapsAReplicaThatIsNotFailed(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := []rollout.Replica{
		{Name: "r-9", Revision: "1-a", State: rollout.State{Healthy: true, UnreadySince: now.Add(-10 * time.Minute)}},
		{Name: "r-9-x", Revision: "1-a", ReplacementFor: "r-9", State: ready},
	}
	want := map[rollout.RecoverStrategy]string{
		rollout.CreateThenDelete: "cancel r-9-x;",
		rollout.DeleteThenCreate: "cancel r-9-x;",
		rollout.NoRecover:        "wait r-9-x (RecoveryDisabled);",
	}
	for _, st := range strategies {
		t.Run(string(st), func(t *testing.T) {
			policy := rollout.RecoverPolicy{Strategy: st}
			step, err := rollout.PlanRecover(replicas, policy, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(step); got != want[st] {
				t.Fatalf("got %q, want %q", got, want[st])
			}
			if err := rollouttest.CheckRecover(replicas, policy, now, step); err != nil {
				t.Fatal(err)
			}
			// The checker rejects what PlanRecover used to plan here.
			bad := rollout.RecoverStep{Swap: []rollout.Swap{{Old: "r-9", New: "r-9-x"}}}
			if err := rollouttest.CheckRecover(replicas, policy, now, bad); err == nil {
				t.Fatal("CheckRecover accepts swapping out a replica that is not failed")
			}
		})
	}
}

// TestPlanRecoverOneReplicaAndItsReplacementInEveryState enumerates a replica F
// and its replacement R in every combination of states, under every strategy,
// with and without StartTimeout and ReleaseDelay, and checks each step with
// CheckRecover and the rules the documentation states: F is swapped out only
// when it is failed, R only when it serves; a replacement is cancelled exactly
// when it failed or F is no longer failed; NoRecover acts on nothing.
func TestPlanRecoverOneReplicaAndItsReplacementInEveryState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	since := now.Add(-10 * time.Minute)
	states := map[string]rollout.State{
		"available":     ready,
		"ready":         {Ready: true, Healthy: true, UnreadySince: since},
		"unready":       {Healthy: true, UnreadySince: since},
		"unhealthy":     {Ready: true, UnreadySince: since},
		"failed":        {Failed: true, UnreadySince: since},
		"lost":          {Lost: true, Failed: true, UnreadySince: since},
		"terminating":   {Terminating: true, Failed: true},
		"never-started": {Healthy: true},
	}
	combos := 0
	for fName, fState := range states {
		for _, fSwapped := range []bool{false, true} {
			for rName, rState := range states {
				for _, hasR := range []bool{false, true} {
					for _, st := range strategies {
						for _, timeout := range []time.Duration{0, 5 * time.Minute} {
							for _, delay := range []time.Duration{0, 15 * time.Minute} {
								f := rollout.Replica{Name: "f", Revision: "1-a", State: fState}
								if fSwapped {
									f.SwappedAt = now.Add(-10 * time.Minute)
								}
								replicas := []rollout.Replica{f}
								if hasR {
									replicas = append(replicas, rollout.Replica{Name: "r", Revision: "1-a", ReplacementFor: "f", State: rState})
								}
								policy := rollout.RecoverPolicy{Strategy: st, StartTimeout: timeout, ReleaseDelay: delay}
								name := fmt.Sprintf("f %s swapped=%v, r %s present=%v, %s, timeout %s, delay %s",
									fName, fSwapped, rName, hasR, st, timeout, delay)
								checkOneRecovery(t, name, replicas, policy, now)
								combos++
							}
						}
					}
				}
			}
		}
	}
	if want := 8 * 2 * 8 * 2 * 3 * 2 * 2; combos != want {
		t.Fatalf("%d combinations, want %d", combos, want)
	}
}

func checkOneRecovery(t *testing.T, name string, replicas []rollout.Replica, policy rollout.RecoverPolicy, now time.Time) {
	t.Helper()
	step, err := rollout.PlanRecover(replicas, policy, now)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := rollouttest.CheckRecover(replicas, policy, now, step); err != nil {
		t.Fatalf("%s: %v\nstep: %s", name, err, summary(step))
	}
	f := replicas[0]
	_, fFailed := rollout.FailureReason(&f, policy, now)
	fLive := !f.State.Terminating && f.SwappedAt.IsZero()
	if policy.Strategy == rollout.NoRecover && len(step.Replace)+len(step.Swap)+len(step.Release)+len(step.Cancel) > 0 {
		t.Fatalf("%s: NoRecover acts: %s", name, summary(step))
	}
	for _, sw := range step.Swap {
		if sw.Old == "f" && !fFailed {
			t.Fatalf("%s: swaps out f, which is not failed: %s", name, summary(step))
		}
	}
	if len(replicas) < 2 || policy.Strategy == rollout.NoRecover || replicas[1].State.Terminating {
		return
	}
	r := replicas[1]
	_, rFailed := rollout.FailureReason(&r, policy, now)
	wantCancel := rFailed || (fLive && !fFailed)
	if gotCancel := len(step.Cancel) == 1; gotCancel != wantCancel {
		t.Fatalf("%s: cancel %v, want %v: %s", name, gotCancel, wantCancel, summary(step))
	}
}
