package rollout_test

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// TestPlanStateMachine drives a simulated cluster with rapid's state machine:
// reconciles interleave with the cluster settling, replicas failing, becoming
// unready or recovering, and the operator rolling back, changing the ratio or
// scaling. After every action the plan for the current state must keep the
// invariants (rollouttest.Check), explain every replica it leaves behind, and
// report Complete only when the replicas have converged.
func TestPlanStateMachine(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s keeps its invariants through any sequence of events", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				pick := func(t *rapid.T) *rollout.State {
					if len(sim.Replicas) == 0 {
						t.Skip("no replicas")
					}
					r := &sim.Replicas[rapid.IntRange(0, len(sim.Replicas)-1).Draw(t, "replica")]
					if len(r.Members) > 0 {
						return &r.Members[rapid.IntRange(0, len(r.Members)-1).Draw(t, "member")].State
					}
					return &r.State
				}
				t.Repeat(map[string]func(*rapid.T){
					"reconcile": func(t *rapid.T) {
						if _, err := sim.Reconcile(); err != nil {
							t.Fatal(err)
						}
					},
					"settle":   func(t *rapid.T) { sim.Settle(nil) },
					"fail":     func(t *rapid.T) { *pick(t) = rollout.State{Failed: true} },
					"unready":  func(t *rapid.T) { *pick(t) = rollout.State{Healthy: true} },
					"recover":  func(t *rapid.T) { *pick(t) = rollout.State{Ready: true, Available: true, Healthy: true} },
					"rollback": func(t *rapid.T) { sim.Strategy = changeCourse(t, sim.Strategy) },
					"scale": func(t *rapid.T) {
						sim.Strategy.Replicas = rapid.IntRange(0, rollouttest.DefaultLimits.MaxReplicas).Draw(t, "replicas")
					},
					"": func(t *rapid.T) {
						step, err := rollout.Plan(sim.Replicas, sim.Strategy)
						if err != nil {
							t.Fatal(err)
						}
						if err := rollouttest.Check(sim.Replicas, sim.Strategy, step); err != nil {
							t.Fatal(err)
						}
						if step.Complete {
							if err := rollouttest.Converged(sim.Replicas, sim.Strategy); err != nil {
								t.Fatalf("Complete, but: %v", err)
							}
						}
						explained := map[string]bool{}
						for _, w := range step.Waiting {
							explained[w.Replica] = true
						}
						for _, u := range step.Update {
							explained[u.Replica] = true
						}
						for _, d := range step.Delete {
							explained[d.Replica] = true
						}
						for _, r := range step.Repair {
							explained[r.Replica] = true
						}
						for _, r := range rollouttest.Counted(sim.Replicas) {
							wrongRevision := r.Revision != sim.Strategy.TargetRevision && latestWanted(sim.Strategy) == sim.Strategy.Replicas
							if (wrongRevision || !rollouttest.Available(r)) && !explained[r.Name] {
								t.Fatalf("replica %s still has to change or become available, but the step neither acts on nor explains it: %+v", r.Name, step)
							}
						}
					},
				})
			})
		})
	}
}

func latestWanted(s rollout.Strategy) int {
	n, _ := rollout.ResolveRatio(s.LatestRatio, s.Replicas)
	return n
}
