package rollouttest_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// The main flow of a property test: draw scenarios of every mode, run each rollout
// to the end with a Driver against an Executor (here the Simulator without faults;
// a controller against a test API server is another Executor), checking every step
// against the invariants and the end state with Converged. In a test, the loop is a
// rapid.Check and the scenario is drawn with Draw(t, "scenario"), so rapid
// shrinks a failure to a minimal scenario.
func Example() {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	completed := 0
	for _, mode := range []rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group} {
		gen := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits)
		for seed := range 50 {
			sc := gen.Example(seed)
			d := &rollouttest.Driver{Executor: rollouttest.NewSimulator(sc, rollouttest.NoFaults),
				Strategy: sc.Strategy, Now: start}
			if _, err := d.Run(ctx, 0); err != nil { // 0: within ProgressBound
				fmt.Printf("%v\n%s\n", err, sc) // the scenario, readably
				return
			}
			completed++
		}
	}
	fmt.Println("rollouts completed within their bound, every step checked:", completed)
	// Output: rollouts completed within their bound, every step checked: 150
}

// Check rejects a step that takes availability below the floor: 4 replicas with
// maxUnavailable 1 may lose one at a time, not two.
func ExampleCheck() {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 4, MaxUnavailable: &one, MaxSurge: &zero}
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "1-a", State: available},
		{Name: "web-2", Revision: "1-a", State: available},
		{Name: "web-3", Revision: "1-a", State: available},
	}
	bad := rollout.Step{Update: []rollout.Update{
		{Replica: "web-0", From: "1-a", To: "2-b", Pods: []string{"web-0"}},
		{Replica: "web-1", From: "1-a", To: "2-b", Pods: []string{"web-1"}}}}
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
	two, zero := intstr.FromInt32(2), intstr.FromInt32(0)
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 6, MaxUnavailable: &two, MaxSurge: &zero}
	var replicas []rollout.Replica
	for i := range 6 {
		replicas = append(replicas, rollout.Replica{Name: fmt.Sprintf("web-%d", i), Revision: "1-a",
			State: rollout.State{Ready: true, Available: true, Healthy: true}})
	}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: replicas}, rollouttest.NoFaults)
	n, err := sim.Run(10)
	fmt.Println(n, err, rollouttest.Converged(sim.Replicas, s))
	// Output:
	// 4 <nil> <nil>
}

// CheckRecover rejects a recovery step that deletes a failed replica before its
// replacement is ready (under CreateThenDelete), and accepts what PlanRecover plans.
func ExampleCheckRecover() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "1-a", State: rollout.State{Failed: true, UnreadySince: now.Add(-time.Minute)}},
		{Name: "web-2", Revision: "1-a", State: available},
	}
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
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: rollout.State{Failed: true, UnreadySince: now.Add(-time.Minute)}},
		{Name: "web-1", Revision: "1-a", State: rollout.State{Ready: true, Available: true, Healthy: true}},
	}
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
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "1-a", State: available},
	}
	fmt.Println(rollouttest.Healthy(replicas, rollout.RecoverPolicy{}, now))
	replicas[1].State.Failed = true
	fmt.Println(rollouttest.Healthy(replicas, rollout.RecoverPolicy{}, now))
	// Output:
	// <nil>
	// replica web-1: ReplicaFailed
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

// A Driver runs a controller's reconcile loop against an Executor: observe,
// plan, check the step, execute it, let time pass. Here the Executor is the
// built-in Simulator; a controller running against a test API server
// implements the same three methods and is driven, and checked, the same way.
func ExampleDriver() {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 3, MaxUnavailable: &one, MaxSurge: &zero}
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	sc := rollouttest.Scenario{Strategy: s, Replicas: []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "1-a", State: available},
		{Name: "web-2", Revision: "1-a", State: available},
	}}
	fmt.Println(sc)

	var ex rollouttest.Executor = rollouttest.NewSimulator(sc, rollouttest.NoFaults)
	d := &rollouttest.Driver{Executor: ex, Strategy: s,
		Now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Tick: 30 * time.Second}
	ctx := context.Background()
	bound := rollouttest.ProgressBound(s)
	for {
		step, err := d.Reconcile(ctx) // observe, plan, Check, execute
		if err != nil {
			fmt.Println(err)
			return
		}
		if step.Complete {
			fmt.Printf("%s reconcile %d: complete\n", d.Now.Format("15:04:05"), d.Reconciles)
			break
		}
		for _, u := range step.Update {
			fmt.Printf("%s reconcile %d: update %s %s -> %s\n", d.Now.Format("15:04:05"), d.Reconciles, u.Replica, u.From, u.To)
		}
		if d.Reconciles == bound {
			fmt.Println("stuck: not complete within", bound, "reconciles")
			return
		}
		if err := d.Advance(ctx); err != nil { // the updated replica becomes available
			fmt.Println(err)
			return
		}
	}
	replicas, _ := ex.Observe(ctx)
	fmt.Println("within bound", bound, "converged:", rollouttest.Converged(replicas, s))
	// Output:
	// Rolling to 2-b, 3 replicas, maxUnavailable 1, maxSurge 0, order LessFirst
	//   web-0 1-a available
	//   web-1 1-a available
	//   web-2 1-a available
	// 12:00:00 reconcile 1: update web-0 1-a -> 2-b
	// 12:00:30 reconcile 2: update web-1 1-a -> 2-b
	// 12:01:00 reconcile 3: update web-2 1-a -> 2-b
	// 12:01:30 reconcile 4: complete
	// within bound 8 converged: <nil>
}

// Scenario.Pods turns a scenario into pods that rollout.FromPods reads back, so
// a test can seed a cluster (here a gang of two with its decode member missing,
// at minReadySeconds 30: the prefill member ready for 30s, available).
func ExampleScenario_Pods() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	columns := []string{"prefill", "decode"}
	sc := rollouttest.Scenario{Strategy: rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1, Columns: columns},
		GangSize: 2, Replicas: []rollout.Replica{{Name: "g-0", Revision: "1-a", Members: []rollout.Member{
			{Name: "g-0-prefill", Column: "prefill", State: rollout.State{Ready: true, Available: true, Healthy: true}},
			{Column: "decode", Missing: true}}}}}
	opts := rollout.PodOptions{Labels: rollout.KthenaLabels, MinReadySeconds: 30, Now: now, Columns: columns}
	pods, err := sc.Pods(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range pods {
		fmt.Println(p.Name, p.Labels[rollout.KthenaLabels.Gang], p.Labels[rollout.KthenaLabels.Revision],
			p.Status.Conditions[0].Status, p.Status.Conditions[0].LastTransitionTime.Format("15:04:05"))
	}
	replicas, err := rollout.FromPods(pods, opts)
	fmt.Println(rollouttest.Scenario{Strategy: sc.Strategy, GangSize: 2, Replicas: replicas}, err)
	// Output:
	// g-0-prefill g-0 1-a True 11:59:30
	// Gang to 2-b, 1 gang of 2 members, maxUnavailable 25% (default), maxSurge 25% (default), order LessFirst
	//   g-0 1-a [g-0-prefill available, ready since 2026-01-01T11:59:30Z; (decode) missing] <nil>
}

// A Monitor checks every state a watch of the cluster reports against the one
// before: here a controller recreates web-0 on the new revision, then takes
// web-1 down as well while web-0 is not ready yet, below the floor of 3 of 4.
func ExampleMonitor() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	web := func(i int, rev string, s rollout.State) rollout.Replica {
		return rollout.Replica{Name: fmt.Sprintf("web-%d", i), Revision: rev, State: s}
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	var m rollouttest.Monitor
	m.SetStrategy(rollout.Strategy{TargetRevision: "2-b", Replicas: 4, MaxUnavailable: &one, MaxSurge: &zero})
	states := [][]rollout.Replica{
		// four available replicas on the old revision
		{web(0, "1-a", available), web(1, "1-a", available), web(2, "1-a", available), web(3, "1-a", available)},
		// web-0 recreated on the new revision, not ready yet
		{web(0, "2-b", rollout.State{Healthy: true}), web(1, "1-a", available), web(2, "1-a", available), web(3, "1-a", available)},
		// web-1 deleted as well
		{web(0, "2-b", rollout.State{Healthy: true}), web(2, "1-a", available), web(3, "1-a", available)},
	}
	for i, s := range states {
		fmt.Printf("state %d: %v\n", i, m.Observe(s))
	}
	// Output:
	// state 0: <nil>
	// state 1: <nil>
	// state 2: pool "": available 3 -> 2 (0 taken down by the world), below floor 3 (n=4, maxUnavailable=1)
}
