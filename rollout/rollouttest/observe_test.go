package rollouttest_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// TestCheckTransitionCatchesViolations: each row is one observed change that
// breaks one rule (the error must name it) or keeps them all (no error).
func TestCheckTransitionCatchesViolations(t *testing.T) {
	rolling := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt(1)), MaxSurge: ptr(intstr.FromInt(1))}
	gang := rolling
	gang.Mode = rollout.Gang
	gang.Replicas = 2
	partition := rolling
	partition.LatestRatio = ptr(intstr.FromInt(2))
	notReady := rollout.State{Healthy: true}

	withState := func(rs []rollout.Replica, i int, st rollout.State) []rollout.Replica {
		rs = rollouttest.Clone(rs)
		rs[i].State = st
		for m := range rs[i].Members {
			rs[i].Members[m].State = st
		}
		return rs
	}
	withRev := func(rs []rollout.Replica, i int, rev string, st rollout.State) []rollout.Replica {
		rs = withState(rs, i, st)
		rs[i].Revision = rev
		return rs
	}
	withData := func(rs []rollout.Replica, i int, data string) []rollout.Replica {
		rs = rollouttest.Clone(rs)
		rs[i].DataRevision = data
		return rs
	}
	without := func(rs []rollout.Replica, names ...string) []rollout.Replica {
		var out []rollout.Replica
		for _, r := range rollouttest.Clone(rs) {
			if !strings.Contains(strings.Join(names, ","), r.Name) {
				out = append(out, r)
			}
		}
		return out
	}
	plus := func(rs []rollout.Replica, more ...rollout.Replica) []rollout.Replica {
		return append(rollouttest.Clone(rs), more...)
	}
	old := fleet("r", 4, "1-a", "", 0)
	oneDown := withRev(old, 0, "2-b", notReady) // r-0 recreated, not ready
	gangs := fleet("g", 2, "1-a", "", 2)
	halfGang := rollouttest.Clone(gangs)
	halfGang[0].Members[0].Revision = "2-b"
	for _, tc := range []struct {
		name          string
		strategy      rollout.Strategy
		before, after []rollout.Replica
		want          string // "" means no violation
	}{
		{"one recreated within the budget", rolling, old, oneDown, ""},
		{"a second available one taken down", rolling, oneDown, withRev(oneDown, 1, "2-b", notReady), "below floor"},
		{"a second one deleted", rolling, oneDown, without(oneDown, "r-1"), "below floor"},
		{"the world takes a pod down", rolling, oneDown, withState(oneDown, 1, notReady), ""},
		{"the new pod becomes ready", rolling, oneDown, withState(oneDown, 0, good), ""},
		{"a second available one taken down for its data", rolling, oneDown, withData(withState(oneDown, 1, notReady), 1, "d2"), "below floor"},
		{"one taken down for its data within the budget", rolling, old, withData(withState(old, 1, notReady), 1, "d2"), ""},
		{"surge within maxSurge", rolling, old, plus(old, rollout.Replica{Name: "r-4", Revision: "2-b", State: notReady}), ""},
		{"surge beyond maxSurge", rolling, plus(old, rollout.Replica{Name: "r-4", Revision: "2-b", State: notReady}),
			plus(old, rollout.Replica{Name: "r-4", Revision: "2-b", State: notReady}, rollout.Replica{Name: "r-5", Revision: "2-b", State: notReady}), "above"},
		{"created on an old revision", rolling, without(old, "r-0"), old, "created at revision 1-a"},
		{"created on the stable revision under a partition", partition, without(old, "r-0"), old, ""},
		{"created on a revision older than stable", partition, without(withRev(old, 1, "2-b", good), "r-0"),
			withRev(withRev(old, 1, "2-b", good), 0, "0-z", notReady), "created at revision 0-z"},
		{"a pod of an old revision terminating", rolling, without(old, "r-0"),
			plus(without(old, "r-0"), rollout.Replica{Name: "r-0", Revision: "0-z", State: rollout.State{Terminating: true}}), ""},
		{"a recovery replacement at its failed replica's revision", rolling, withState(old, 1, rollout.State{Failed: true}),
			plus(withState(old, 1, rollout.State{Failed: true}), rollout.Replica{Name: "r-9", Revision: "1-a", ReplacementFor: "r-1", State: notReady}), ""},
		{"a replacement at another revision", rolling, withState(old, 1, rollout.State{Failed: true}),
			plus(withState(old, 1, rollout.State{Failed: true}), rollout.Replica{Name: "r-9", Revision: "0-z", ReplacementFor: "r-1", State: notReady}), "created at revision 0-z"},
		{"a gang half updated, not serving", gang, gangs, withState(halfGang, 0, notReady), ""},
		{"a gang serving on two revisions", gang, gangs, halfGang, "serves on two revisions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rollouttest.CheckTransition(tc.before, tc.after, tc.strategy)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected violation: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("violation %q, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestCheckTransitionAcceptsPlannedSteps: every reconcile of a simulated rollout
// (a step of rollout.Plan applied at once) and every fault-free settle is a
// transition CheckTransition accepts, in every mode.
func TestCheckTransitionAcceptsPlannedSteps(t *testing.T) {
	for _, mode := range []rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group} {
		t.Run(string(mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				for i := range rollouttest.ProgressBound(sc.Strategy) {
					before := rollouttest.Clone(sim.Replicas)
					step, err := sim.Reconcile()
					if err != nil {
						t.Fatal(err)
					}
					if err := rollouttest.CheckTransition(before, sim.Replicas, sc.Strategy); err != nil {
						t.Fatalf("reconcile %d: %v\nstep %+v\n%s", i+1, err, step, sc)
					}
					if step.Complete {
						return
					}
					settled := rollouttest.Clone(sim.Replicas)
					sim.Settle(nil)
					if mode == rollout.Gang {
						continue // the simulator recreates missing members at the gang's revision
					}
					if err := rollouttest.CheckTransition(settled, sim.Replicas, sc.Strategy); err != nil {
						t.Fatalf("settle after reconcile %d: %v\n%s", i+1, err, sc)
					}
				}
			})
		})
	}
}

// TestMonitorAcceptsThePreviousStrategyUntilTheNext: after a rollback the
// controller may still create on the old target once; the monitor accepts that
// under the previous strategy, and not after another change.
func TestMonitorAcceptsThePreviousStrategyUntilTheNext(t *testing.T) {
	forward := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: 2, MaxUnavailable: ptr(intstr.FromInt(1))}
	back := forward
	back.TargetRevision = "1-a"
	back.History = []string{"2-b", "1-a"}
	base := fleet("r", 1, "1-a", "", 0)
	late := plus1(base, rollout.Replica{Name: "r-1", Revision: "2-b", State: rollout.State{Healthy: true}})

	var m rollouttest.Monitor
	if err := m.Observe(base); err == nil {
		t.Fatal("Observe without a strategy: no error")
	}
	m.SetStrategy(forward)
	m.SetStrategy(back)
	if err := m.Observe(base); err != nil {
		t.Fatalf("first observation: %v", err)
	}
	if err := m.Observe(late); err != nil {
		t.Fatalf("a create at the previous target: %v", err)
	}
	m.SetStrategy(back)
	if err := m.Observe(base); err != nil {
		t.Fatal(err)
	}
	if err := m.Observe(late); err == nil {
		t.Fatal("a create at a target two changes old: no violation")
	}
	if m.Observations != 4 {
		t.Fatalf("Observations = %d, want 4", m.Observations)
	}
}

func plus1(rs []rollout.Replica, r rollout.Replica) []rollout.Replica {
	return append(rollouttest.Clone(rs), r)
}
