// Package rollouttest helps property-test rollout controllers and strategies
// against the rules package rollout keeps.
//
// # Overview
//
//   - Generators ([ScenarioOf], [StrategyOf], [States], [Budgets]) draw valid
//     strategies and replicas for each mode with pgregory.net/rapid. A
//     [Scenario] prints itself readably ([Scenario.String]) and becomes pods
//     ([Scenario.Pods]) that [rollout.FromPods] reads back, to seed a cluster.
//   - [Check] verifies one step against the invariants (availability floor, surge
//     ceiling, whole gangs, repairs of gangs missing members, group-mode
//     monotone latest count, data moves); [CheckRecover] verifies a recovery
//     step; [Converged] verifies the end state; [ProgressBound] is how many
//     reconciles a rollout may take without faults.
//   - [CheckTransition] verifies a change as an observer outside the controller
//     sees it (consecutive states of a pod watch): the availability floor with
//     the world's own failures set aside, the surge ceiling, no gang serving on
//     two revisions, nothing created on an older revision than planned.
//     [Monitor] applies it to every state it is fed.
//   - [Planner] is the planning side of a reconcile: rollout.Plan
//     ([DefaultPlanner]) or your controller's own.
//   - [Executor] is the cluster side: it executes steps, reports the replicas
//     and lets time pass. [Simulator] is one (updates take a reconcile to become
//     available, deleted pods terminate for a reconcile before they are gone,
//     updates move pods in place or delete and recreate them, failures are
//     injected at [Faults] rates, and nothing recreates a missing gang member
//     but the planner's repair); your controller running against a test API
//     server can be another.
//   - [Driver] runs the reconcile loop of a Planner against an Executor and
//     checks every step, so the same scenarios and checks run against the
//     simulator and against your controller.
//   - [Exhaustive] is the small-scope mode beside the random generators: it
//     enumerates every state of a [Scope] (replicas, revisions, data revisions,
//     states per replica or member, budgets, ratios, targets, with and without
//     History) and drives each through an Executor (the Simulator by default):
//     the invariants, and progress within [ProgressBound] in a world where
//     replicas become ready.
//
// # Testing your controller through the Executor interface
//
// Implement [Executor] over your controller's execution half and a test
// cluster:
//
//   - Observe lists your pods and converts them the way your controller does
//     (for example with [rollout.FromPods]). It may read from a cache that lags.
//   - Execute performs a step (create, delete, update pods) with your
//     controller's code. It gets the replicas the step was planned from, so
//     it maps the step's names and slots onto pods without observing again.
//     It may stop part-way and return the error (a conflict); the driver
//     counts it and plans again from the next observation, so your
//     expectations must keep a lagging cache from creating or deleting twice.
//   - Advance plays the kubelet up to the time it is given: it marks pods
//     ready, leaves them pending or fails them, drawing its choices from the
//     *rapid.T it gets (nil: no faults) so that rapid shrinks them.
//
// Seed the cluster from a generated scenario with [Scenario.Pods], then drive:
//
//	rapid.Check(t, func(t *rapid.T) {
//		sc := rollouttest.ScenarioOf(rollout.Rolling, rollouttest.DefaultLimits).Draw(t, "scenario")
//		ex := newClusterExecutor(t, sc) // creates sc.Pods(opts) on the test cluster
//		d := &rollouttest.Driver{Executor: ex, Strategy: sc.Strategy, Now: start}
//		if _, err := d.Run(ctx, 0); err != nil { // 0: within ProgressBound
//			t.Fatalf("%v\n%s", err, sc)
//		}
//	})
//
// The driver checks each step against the replicas it was planned from; it
// cannot see what happens between two observations, so check the cluster's
// own history (every pod event) too when your executor lags. Exhaustive takes
// an executor per scenario through its Executor field.
//
// The simulator alone, with faults drawn by rapid:
//
//	rapid.Check(t, func(t *rapid.T) {
//		sc := rollouttest.ScenarioOf(rollout.Rolling, rollouttest.DefaultLimits).Draw(t, "scenario")
//		sim := rollouttest.NewSimulator(sc, rollouttest.Faults{UpdateFails: 10})
//		for range 20 {
//			if _, err := sim.Reconcile(); err != nil {
//				t.Fatal(err)
//			}
//			sim.Settle(t)
//		}
//	})
package rollouttest
