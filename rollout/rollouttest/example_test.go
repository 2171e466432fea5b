package rollouttest_test

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// Check rejects a step that takes availability below the floor: 4 replicas with
// maxUnavailable 1 may lose one at a time, not two.
func ExampleCheck() {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	replicas := fleet("web", 4, "1-a", "", 0)
	bad := rollout.Step{Update: []rollout.Update{
		{Replica: "web-0", From: "1-a", To: "2-b"}, {Replica: "web-1", From: "1-a", To: "2-b"}}}
	fmt.Println(rollouttest.Check(replicas, s, bad))
	step, _ := rollout.Plan(replicas, s)
	fmt.Println(rollouttest.Check(replicas, s, step))
	// Output:
	// column "": availability 4 -> 2, below floor 3 (n=4, maxUnavailable=1)
	// <nil>
}

// The simulator runs a rollout to the end, checking every step: 6 replicas, 2 at
// a time, take ceil(6/2) = 3 reconciles that update and a 4th that finds all
// available and reports Complete.
func ExampleSimulator_Run() {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 6,
		MaxUnavailable: ptr(intstr.FromInt32(2)), MaxSurge: ptr(intstr.FromInt32(0))}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("web", 6, "1-a", "", 0)},
		rollouttest.NoFaults)
	n, err := sim.Run(10)
	fmt.Println(n, err, rollouttest.Converged(sim.Replicas, s))
	// Output:
	// 4 <nil> <nil>
}

// CheckRecover rejects a recovery step that deletes a failed replica before its
// replacement is ready (under CreateThenDelete), and accepts what PlanRecover plans.
func ExampleCheckRecover() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := fleet("web", 3, "1-a", "", 0)
	replicas[1].State = rollout.State{Failed: true, UnreadySince: now.Add(-time.Minute)}
	policy := rollout.RecoverPolicy{Strategy: rollout.CreateThenDelete}
	bad := rollout.RecoverStep{Release: []string{"web-1"}}
	fmt.Println(rollouttest.CheckRecover(replicas, policy, now, bad))
	step, _ := rollout.PlanRecover(replicas, policy, now)
	fmt.Println(step.Replace[0].For, rollouttest.CheckRecover(replicas, policy, now, step))
	// Output:
	// release web-1: not swapped out for a ready replacement
	// web-1 <nil>
}

// The recovery simulator plays the controller: it creates the replacement PlanRecover
// asks for; once that is ready, a swap takes the failed replica out of service, and
// after ReleaseDelay it is deleted. Healthy says when recovery is over.
func ExampleRecoverSimulator() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := fleet("web", 2, "1-a", "", 0)
	replicas[0].State = rollout.State{Failed: true, UnreadySince: now.Add(-time.Minute)}
	sim := &rollouttest.RecoverSimulator{Policy: rollout.RecoverPolicy{Strategy: rollout.CreateThenDelete},
		Replicas: replicas, Now: now, Tick: time.Minute}
	for range 4 {
		step, err := sim.Reconcile()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("replace %d swap %d release %v\n", len(step.Replace), len(step.Swap), step.Release)
		// The replacement (the replica not named web-*) becomes ready and healthy.
		for i := range sim.Replicas {
			if r := &sim.Replicas[i]; r.ReplacementFor != "" {
				r.State = rollout.State{Ready: true, Available: true, Healthy: true}
			}
		}
	}
	fmt.Println(rollouttest.Healthy(sim.Replicas, sim.Policy, sim.Now))
	// Output:
	// replace 1 swap 0 release []
	// replace 0 swap 1 release []
	// replace 0 swap 0 release [web-0]
	// replace 0 swap 0 release []
	// <nil>
}

// Healthy is the end condition of recovery: a failed replica, or one being replaced,
// is not.
func ExampleHealthy() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := fleet("web", 2, "1-a", "", 0)
	fmt.Println(rollouttest.Healthy(replicas, rollout.RecoverPolicy{}, now))
	replicas[1].State.Failed = true
	fmt.Println(rollouttest.Healthy(replicas, rollout.RecoverPolicy{}, now))
	// Output:
	// <nil>
	// replica web-1: failed
}

// The generators draw valid scenarios for property tests. Outside a rapid.Check,
// Example draws one per seed; here every drawn scenario's first step passes Check.
func ExampleScenarioOf() {
	gen := rollouttest.ScenarioOf(rollout.Group, rollouttest.DefaultLimits)
	violations := 0
	for seed := range 100 {
		sc := gen.Example(seed)
		step, err := rollout.Plan(sc.Replicas, sc.Strategy)
		if err != nil || rollouttest.Check(sc.Replicas, sc.Strategy, step) != nil {
			violations++
		}
	}
	fmt.Println("scenarios: 100, violations:", violations)
	// Output: scenarios: 100, violations: 0
}

// Exhaustive runs a planner (here rollout.Plan) over every state of a small
// scope: up to 2 replicas, 2 revisions, each replica available, ready, not ready
// or failed, every budget, ratio and target, with and without History. Every
// first step keeps the invariants and every rollout completes within
// ProgressBound. A planner of your own plugs in as Planner.
func ExampleExhaustive() {
	e := rollouttest.Exhaustive{Scope: rollouttest.Scope{Mode: rollout.Rolling, Replicas: 2, Revisions: 2,
		VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}}
	rep, err := e.Run()
	fmt.Println(err)
	fmt.Printf("%d states x strategies = %d scenarios, at most %d reconciles each\n",
		rep.States, rep.Scenarios, rep.MaxReconciles)
	// Output:
	// <nil>
	// 44 states x strategies = 4896 scenarios, at most 4 reconciles each
}
