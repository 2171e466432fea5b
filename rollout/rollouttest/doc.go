// Package rollouttest helps property-test rollout controllers and strategies
// against the rules package rollout keeps.
//
// # Overview
//
//   - Generators ([ScenarioOf], [Strategy], [State], [Budget]) draw valid
//     strategies and replicas for each mode with pgregory.net/rapid.
//   - [Simulator] applies steps like a cluster would (updates take a reconcile to
//     become available) and injects failures at [Faults] rates.
//   - [Check] verifies one step against the invariants (availability floor, surge
//     ceiling, whole gangs, group-mode monotone latest count, data moves);
//     [CheckRecover] verifies a recovery step; [Converged] verifies the end state.
//   - [Exhaustive] is the small-scope mode beside the random generators: it
//     enumerates every state of a [Scope] (replicas, revisions, data revisions,
//     states per replica or member, budgets, ratios, targets, with and without
//     History) and checks a [Planner] on each: the invariants, and progress
//     within [ProgressBound] in a world where replicas become ready.
//   - [Planner] is the planning side of a reconcile: rollout.Plan
//     ([DefaultPlanner]) or your controller's own. The Simulator and Exhaustive
//     take any Planner; the Simulator is the cluster side (it applies steps and
//     lets time pass).
//
// # Example
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
