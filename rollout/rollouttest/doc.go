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
//     ceiling, whole gangs, group-mode monotone latest count); [CheckRecover]
//     verifies a recovery step; [Converged] verifies the end state.
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
