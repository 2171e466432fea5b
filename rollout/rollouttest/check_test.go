package rollouttest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/proptest"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }

var good = rollout.State{Ready: true, Available: true, Healthy: true}

// fleet returns n available replicas r-0.. at rev with indexes 0.. (gangs of
// size members in columns "0".. when members > 0, in column col when not
// empty).
func fleet(prefix string, n int, rev, col string, members int) []rollout.Replica {
	var rs []rollout.Replica
	for i := range n {
		r := rollout.Replica{Name: fmt.Sprintf("%s-%d", prefix, i), Index: i, Revision: rev, Column: col, State: good}
		for m := range members {
			r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("%s-%d-%d", prefix, i, m), Column: strconv.Itoa(m), State: good})
		}
		rs = append(rs, r)
	}
	return rs
}

// indexOf is the index fleet gives the replica name.
func indexOf(name string) int {
	i, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
	return i
}

// TestCheckCatchesViolations feeds Check hand-made steps that break one rule
// each; every row must be rejected with the named rule, and the step Plan
// itself returns must pass.
func TestCheckCatchesViolations(t *testing.T) {
	// 10 replicas, maxUnavailable 2, maxSurge 1: floor 8, ceiling 11.
	rolling := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: 10,
		MaxUnavailable: ptr(intstr.FromInt32(2)), MaxSurge: ptr(intstr.FromInt32(1))}
	gang := rolling
	gang.Mode, gang.Replicas, gang.Columns = rollout.Gang, 3, []string{"0", "1"}
	group := rolling
	group.Mode, group.Replicas, group.Columns = rollout.Group, 4, []string{"a", "b"}
	group.MaxUnavailable = ptr(intstr.FromInt32(1))
	groupReplicas := append(append(fleet("a", 2, "1-a", "a", 0), fleet("a2", 2, "2-b", "a", 0)...),
		fleet("b", 4, "1-a", "b", 0)...)
	up := func(name, from, to string) rollout.Update {
		return rollout.Update{Replica: name, From: from, To: to, Index: indexOf(name), Pods: []string{name}}
	}
	upIn := func(col, name, from, to string) rollout.Update { u := up(name, from, to); u.Column = col; return u }
	del := func(names ...string) []rollout.Delete {
		var out []rollout.Delete
		for _, n := range names {
			out = append(out, rollout.Delete{Replica: n, Pods: []string{n}})
		}
		return out
	}
	// Three gangs of two at the target; g-0 lacks its second pod.
	short := fleet("g", 3, "2-b", "", 2)
	short[0].Members[1] = rollout.Member{Column: "1", Missing: true}
	repair := func(columns ...string) rollout.Step {
		return rollout.Step{Repair: []rollout.Repair{{Replica: "g-0", Revision: "2-b", Missing: columns}}}
	}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		step     rollout.Step
		want     string
	}{
		// 10 available - 3 updated = 7 < floor 10 - 2 = 8.
		{"three updates with maxUnavailable 2 break the floor", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{up("r-0", "1-a", "2-b"), up("r-1", "1-a", "2-b"), up("r-2", "1-a", "2-b")}},
			"below floor 8"},
		// 10 available - 2 deleted = 8 would be fine, but 10 - 3 = 7 is not.
		{"three deletes break the floor", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Delete: del("r-0", "r-1", "r-2")}, "below floor 8"},
		// 10 + 2 created = 12 > 10 + 1.
		{"creating two above maxSurge 1 breaks the ceiling", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Index: 10}, {Revision: "2-b", Index: 11}}}, "above 11"},
		{"a create in an index a replica holds is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Index: 3}}}, `index 3 in column "" is held by replica r-3`},
		{"two creates in one index are rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Index: 10}, {Revision: "2-b", Index: 10}}}, "is held by create 0"},
		{"a create at a negative index is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Index: -1}}}, "index -1 is negative"},
		{"a gang create without the strategy's columns is rejected", fleet("g", 2, "2-b", "", 2), gang,
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Index: 2, Members: []string{"0"}}}}, `members in columns ["0"], want ["0" "1"]`},
		{"updating an unknown replica is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{up("nope", "1-a", "2-b")}}, "not a counted replica"},
		{"acting twice on one replica is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{up("r-0", "1-a", "2-b")}, Delete: del("r-0")}, "acted on twice"},
		{"an update from the wrong revision is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{up("r-0", "3-c", "2-b")}}, "but it runs"},
		{"an update that names another replica's pod is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{{Replica: "r-0", From: "1-a", To: "2-b", Pods: []string{"r-1"}}}}, "but its pods are [r-0]"},
		{"an update at another index is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Update: []rollout.Update{{Replica: "r-0", From: "1-a", To: "2-b", Index: 4, Pods: []string{"r-0"}}}}, "index 4"},
		{"a delete that names no pod is rejected", fleet("r", 10, "1-a", "", 0), rolling,
			rollout.Step{Delete: []rollout.Delete{{Replica: "r-0"}}}, "deletes pods [], but its pods are [r-0]"},
		{"a gang update that leaves a member behind is rejected", fleet("g", 3, "1-a", "", 2), gang,
			rollout.Step{Update: []rollout.Update{{Replica: "g-0", From: "1-a", To: "2-b", Pods: []string{"g-0-0"}}}},
			"but its pods are [g-0-0 g-0-1]"},
		{"a gang update that does not create its missing member is rejected", short, gang,
			rollout.Step{Update: []rollout.Update{{Replica: "g-0", From: "2-b", To: "2-b", Pods: []string{"g-0-0"}}}},
			`its missing members are in ["1"]`},
		{"a gang delete that leaves a pod is rejected", fleet("g", 4, "2-b", "", 2), gang,
			rollout.Step{Delete: []rollout.Delete{{Replica: "g-3", Pods: []string{"g-3-1"}}}}, "but its pods are [g-3-0 g-3-1]"},
		{"a planner that forgets to repair a gang missing a member is caught", short, gang,
			rollout.Step{}, "neither updates, deletes nor repairs it"},
		{"a repair of a member that is present is rejected", short, gang,
			repair("0", "1"), `its missing members are in ["1"]`},
		{"a repair at another revision than the gang's is rejected", short, gang,
			rollout.Step{Repair: []rollout.Repair{{Replica: "g-0", Revision: "1-a", Missing: []string{"1"}}}}, "the gang runs"},
		{"a repair at another index than the gang's is rejected", short, gang,
			rollout.Step{Repair: []rollout.Repair{{Replica: "g-0", Revision: "2-b", Index: 2, Missing: []string{"1"}}}}, "index 2"},
		{"a repair of a replica that does not exist is rejected", short, gang,
			rollout.Step{Repair: []rollout.Repair{{Replica: "g-9", Revision: "2-b"}}}, "not a counted replica"},
		{"a repair of a single pod is rejected", fleet("r", 10, "2-b", "", 0), rolling,
			rollout.Step{Repair: []rollout.Repair{{Replica: "r-0", Revision: "2-b"}}}, "not a gang"},
		{"repairing a gang that is also updated is rejected", short, gang,
			rollout.Step{Update: []rollout.Update{{Replica: "g-0", From: "2-b", To: "2-b", Pods: []string{"g-0-0"}, Missing: []string{"1"}}},
				Repair: repair("1").Repair}, "acted on twice"},
		// column a runs 2 target replicas; moving one back lowers it while moving forward.
		{"group mode: the latest count never regresses while moving forward", groupReplicas, group,
			rollout.Step{Update: []rollout.Update{upIn("a", "a2-0", "2-b", "1-a")}}, "regress"},
		{"group mode: an update outside the replica's column is rejected", groupReplicas, group,
			rollout.Step{Update: []rollout.Update{upIn("b", "a-0", "1-a", "2-b")}}, `column "b", but the replica has 0, "a"`},
		// maxUnavailable 3, maxSurge 3, LatestRatio 50% of 4 = 2: column b goes
		// 0 -> 3 at the target (two updates, one create), 3 > max(0, 2).
		{"group mode: three at the target exceed a 50% ratio of 4", groupReplicas,
			func() rollout.Strategy {
				s := group
				s.LatestRatio = ptr(intstr.FromString("50%"))
				s.MaxUnavailable, s.MaxSurge = ptr(intstr.FromInt32(3)), ptr(intstr.FromInt32(3))
				return s
			}(),
			rollout.Step{Create: []rollout.Create{{Revision: "2-b", Column: "b", Index: 4}},
				Update: []rollout.Update{upIn("b", "b-0", "1-a", "2-b"), upIn("b", "b-1", "1-a", "2-b")}}, "exceed the requested 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rollouttest.Check(tt.replicas, tt.strategy, tt.step)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if err := rollouttest.Check(tt.replicas, tt.strategy, step); err != nil {
				t.Fatalf("Plan's own step rejected: %v", err)
			}
		})
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestCheckRecoverCatchesViolations feeds CheckRecover recovery steps that break
// one rule each.
func TestCheckRecoverCatchesViolations(t *testing.T) {
	failed := rollout.Replica{Name: "a", Revision: "1-a", State: rollout.State{Failed: true}}
	ok := rollout.Replica{Name: "b", Revision: "1-a", State: good}
	pending := rollout.Replica{Name: "rep", Revision: "1-a", ReplacementFor: "a", State: rollout.State{Healthy: true}}
	ready := pending
	ready.State = good
	swapped := rollout.Replica{Name: "old", Revision: "1-a", State: rollout.State{Failed: true}, SwappedAt: t0.Add(-time.Minute)}
	gangFailed := rollout.Replica{Name: "g", Revision: "1-a", Members: []rollout.Member{
		{Name: "g-0", State: good}, {Name: "g-1", State: rollout.State{Failed: true}}}}
	gangShort := rollout.Replica{Name: "g2", Revision: "1-a", ReplacementFor: "g", Members: []rollout.Member{{Name: "g2-0", State: good}}}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		policy   rollout.RecoverPolicy
		step     rollout.RecoverStep
		want     string
	}{
		{"releasing a failed replica before its replacement swaps in", []rollout.Replica{failed, pending}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Release: []string{"a"}}, "not swapped out"},
		// swapped out 1m ago, ReleaseDelay 2m: 1m < 2m.
		{"releasing before ReleaseDelay", []rollout.Replica{swapped}, rollout.RecoverPolicy{ReleaseDelay: 2 * time.Minute},
			rollout.RecoverStep{Release: []string{"old"}}, "before ReleaseDelay"},
		{"swapping in a replacement that is not ready", []rollout.Replica{failed, pending}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Swap: []rollout.Swap{{Old: "a", New: "rep"}}}, "not ready"},
		{"swapping in a gang with fewer members than the failed one", []rollout.Replica{gangFailed, gangShort}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Swap: []rollout.Swap{{Old: "g", New: "g2"}}}, "1 of 2 members"},
		{"replacing a replica that has not failed", []rollout.Replica{ok}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "b", Revision: "1-a"}}}, "has not failed"},
		{"replacing a replica twice", []rollout.Replica{failed, pending}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "a", Revision: "1-a"}}}, "already has a replacement"},
		{"a gang replacement without every member", []rollout.Replica{gangFailed}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "g", Revision: "1-a", Members: []string{"g-1"}}}}, "differs"},
		// one in flight + one new = 2 > MaxParallel 1.
		{"exceeding MaxParallel", []rollout.Replica{failed, pending, {Name: "c", Revision: "1-a", State: rollout.State{Failed: true}}},
			rollout.RecoverPolicy{MaxParallel: 1},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "c", Revision: "1-a", Index: 1}}}, "exceed MaxParallel 1"},
		// one started 30s ago within a 1m window + one new = 2 > MaxPerWindow 1.
		{"exceeding MaxPerWindow", []rollout.Replica{failed},
			rollout.RecoverPolicy{MaxPerWindow: 1, Window: time.Minute, Started: []time.Time{t0.Add(-30 * time.Second)}},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "a", Revision: "1-a", Index: 1}}}, "exceed MaxPerWindow 1"},
		{"a replacement in an index another replica holds", []rollout.Replica{failed, ok}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "a", Revision: "1-a"}}}, `index 0 in column "" is held by`},
		{"two replacements in one index", []rollout.Replica{failed, {Name: "c", Index: 1, Revision: "1-a", State: rollout.State{Failed: true}}},
			rollout.RecoverPolicy{},
			rollout.RecoverStep{Replace: []rollout.Replacement{{For: "a", Revision: "1-a", Index: 2}, {For: "c", Revision: "1-a", Index: 2}}},
			"is held by the replacement of a"},
		{"cancelling an ordinary replica", []rollout.Replica{ok}, rollout.RecoverPolicy{},
			rollout.RecoverStep{Cancel: []string{"b"}}, "not a replacement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rollouttest.CheckRecover(tt.replicas, tt.policy, t0, tt.step)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			step, err := rollout.PlanRecover(tt.replicas, tt.policy, t0)
			if err != nil {
				t.Fatal(err)
			}
			if err := rollouttest.CheckRecover(tt.replicas, tt.policy, t0, step); err != nil {
				t.Fatalf("PlanRecover's own step rejected: %v", err)
			}
		})
	}
}

func TestConvergedAndHealthyReportWhatIsMissing(t *testing.T) {
	s := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: 3}
	if err := rollouttest.Converged(fleet("r", 3, "2-b", "", 0), s); err != nil {
		t.Fatalf("converged fleet rejected: %v", err)
	}
	for name, rs := range map[string][]rollout.Replica{
		"too few":       fleet("r", 2, "2-b", "", 0),
		"old revision":  fleet("r", 3, "1-a", "", 0),
		"not available": append(fleet("r", 2, "2-b", "", 0), rollout.Replica{Name: "x", Revision: "2-b"}),
		"one too many":  fleet("r", 4, "2-b", "", 1),
	} {
		if err := rollouttest.Converged(rs, s); err == nil {
			t.Errorf("%s: Converged accepted it", name)
		}
	}
	if err := rollouttest.Healthy(fleet("r", 3, "1-a", "", 2), rollout.RecoverPolicy{}, t0); err != nil {
		t.Fatalf("healthy fleet rejected: %v", err)
	}
	bad := fleet("r", 2, "1-a", "", 0)
	bad[0].State.Failed = true
	if err := rollouttest.Healthy(bad, rollout.RecoverPolicy{}, t0); err == nil || !strings.Contains(err.Error(), "r-0") {
		t.Fatalf("failed replica: got %v", err)
	}
	bad = fleet("r", 2, "1-a", "", 0)
	bad[1].SwappedAt = t0
	if err := rollouttest.Healthy(bad, rollout.RecoverPolicy{}, t0); err == nil || !strings.Contains(err.Error(), "r-1") {
		t.Fatalf("swapped-out replica: got %v", err)
	}
}

// TestSimulatorRunsARollout checks the simulator and Run on a fault-free rollout
// of every generated scenario, and that an impossible limit reports failure.
func TestSimulatorRunsARollout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom([]rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		before := rollouttest.Clone(sc.Replicas)
		sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
		n, err := sim.Run(100)
		if err != nil {
			t.Fatal(err)
		}
		if err := rollouttest.Converged(sim.Replicas, sim.Strategy); err != nil {
			t.Fatalf("Run reported complete after %d reconciles, but: %v", n, err)
		}
		if mode == rollout.Gang {
			for _, r := range sim.Replicas {
				if len(r.Members) != sc.GangSize {
					t.Fatalf("gang %s has %d members, want %d", r.Name, len(r.Members), sc.GangSize)
				}
			}
		}
		if len(before) != len(sc.Replicas) {
			t.Fatal("NewSimulator shares the scenario's replicas")
		}
	})
	s := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 4, "1-a", "", 0)}, rollouttest.NoFaults)
	if _, err := sim.Run(2); err == nil {
		t.Fatal("4 replicas one at a time completed within 2 reconciles")
	}
}

// TestRecoverSimulatorHeals runs the recovery simulator on one failed replica and
// one failed gang: the replacements start, become ready, swap in, and the failed
// ones are released after ReleaseDelay.
func TestRecoverSimulatorHeals(t *testing.T) {
	rs := append(fleet("web", 2, "1-a", "", 0), fleet("gang", 1, "1-a", "", 2)...)
	rs[0].State = rollout.State{Failed: true}
	rs[2].Members[1].State = rollout.State{Failed: true}
	sim := &rollouttest.RecoverSimulator{Policy: rollout.RecoverPolicy{ReleaseDelay: time.Minute}, Replicas: rs,
		Now: t0, Tick: time.Minute}
	var log []string
	for i := range 4 {
		step, err := sim.Reconcile()
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, fmt.Sprintf("%d: replace %d swap %d release %d", i, len(step.Replace), len(step.Swap), len(step.Release)))
		sim.Settle(nil)
	}
	// 0: both replaced; 1: both replacements ready, swapped; 2: swapped out 1m ago,
	// ReleaseDelay 1m: released; 3: nothing left.
	want := []string{"0: replace 2 swap 0 release 0", "1: replace 0 swap 2 release 0", "2: replace 0 swap 0 release 2",
		"3: replace 0 swap 0 release 0"}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", log, want)
	}
	if err := rollouttest.Healthy(sim.Replicas, sim.Policy, sim.Now); err != nil {
		t.Fatal(err)
	}
	if len(sim.Replicas) != 3 || len(sim.Policy.Started) != 2 {
		t.Fatalf("%d replicas, %d starts recorded; want 3 and 2", len(sim.Replicas), len(sim.Policy.Started))
	}
}

func TestShuffledKeepsEveryReplica(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := fleet("r", rapid.IntRange(0, 20).Draw(t, "n"), "1-a", "", 1)
		got := rollouttest.Shuffled(t, rs)
		seen := map[string]int{}
		for _, r := range got {
			seen[r.Name]++
		}
		for _, r := range rs {
			if seen[r.Name] != 1 {
				t.Fatalf("%s appears %d times", r.Name, seen[r.Name])
			}
		}
		if len(got) > 0 {
			got[0].Members[0].Name = "changed"
			if slices.ContainsFunc(rs, func(r rollout.Replica) bool { return r.Members[0].Name == "changed" }) {
				t.Fatal("Shuffled shares members with its input")
			}
		}
	})
}

// TestSimulatorLeavesMissingMembersToThePlanner: a gang whose members are
// missing (its only one, or one of two, at the target or an old revision) stays
// short through any number of Settles; the planner's Repair (or its Update)
// makes it whole, and the rollout completes within its bound. A planner that
// forgets the repair is caught by Check before anything is executed.
func TestSimulatorLeavesMissingMembersToThePlanner(t *testing.T) {
	tests := []struct {
		name    string
		members int
		missing []int
		rev     string
		repair  bool // the planner repairs it (an old gang is updated instead)
	}{
		{"a gang whose only member is missing, at the target", 1, []int{0}, "2-b", true},
		{"a gang with one of two members missing, at the target", 2, []int{1}, "2-b", true},
		{"a gang with both members missing, at an old revision", 2, []int{0, 1}, "1-a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := fleet("g", 2, tt.rev, "", tt.members)
			for _, m := range tt.missing {
				rs[0].Members[m] = rollout.Member{Column: rs[0].Members[m].Column, Missing: true}
			}
			s := rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 2,
				MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
			sc := rollouttest.Scenario{Strategy: s, Replicas: rs, GangSize: tt.members}
			idle := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
			for range 3 {
				idle.Settle(nil)
			}
			if !idle.Replicas[0].Members[tt.missing[0]].Missing {
				t.Fatal("Settle recreated a missing member: only a step may")
			}
			sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
			if _, err := sim.Run(0); err != nil {
				t.Fatal(err)
			}
			if err := rollouttest.Converged(sim.Replicas, s); err != nil {
				t.Fatal(err)
			}
			for _, m := range sim.Replicas[0].Members {
				if m.Missing {
					t.Fatalf("member %s still missing", m.Name)
				}
			}
			forgetful := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
			forgetful.Planner = rollouttest.PlannerFunc(func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
				st, err := rollout.Plan(rs, s)
				st.Repair = nil
				return st, err
			})
			_, err := forgetful.Run(0)
			if caught := err != nil && strings.Contains(err.Error(), "neither updates, deletes nor repairs"); caught != tt.repair {
				t.Fatalf("a planner without repairs: got %v", err)
			}
		})
	}
}

// TestSimulatorDeletesGracefully: a deleted replica, and a deleted gang's
// pods, are terminating (and ignored by the planner) until the next Settle,
// or TerminatingSettles of them, and then gone; a gang member deleted alone
// is then missing, and a gang whose last pod went is gone.
func TestSimulatorDeletesGracefully(t *testing.T) {
	s := rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 2}
	rs := append(fleet("g", 2, "2-b", "", 2), fleet("r", 1, "2-b", "", 0)...)
	for _, grace := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("TerminatingSettles %d", grace), func(t *testing.T) {
			sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: rs, GangSize: 2}, rollouttest.NoFaults)
			sim.TerminatingSettles = grace
			sim.Apply(rollout.Step{Delete: []rollout.Delete{{Replica: "g-0", Pods: []string{"g-0-0", "g-0-1"}}, {Replica: "r-0", Pods: []string{"r-0"}}}})
			sim.Replicas[1].Members[1].State.Terminating = true // g-1-1's pod is evicted
			if got := describe(sim.Replicas); got != "g-0 [terminating terminating] g-1 [available terminating] r-0 terminating" {
				t.Fatalf("after the deletes: %s", got)
			}
			for range max(grace, 1) - 1 {
				sim.Settle(nil)
				if got := describe(sim.Replicas); got != "g-0 [terminating terminating] g-1 [available terminating] r-0 terminating" {
					t.Fatalf("before TerminatingSettles Settles: %s", got)
				}
			}
			sim.Settle(nil)
			if got := describe(sim.Replicas); got != "g-1 [available missing]" {
				t.Fatalf("after the pods are gone: %s", got)
			}
		})
	}
}

// describe lists replicas with their state (a gang: each member's) as a line.
func describe(rs []rollout.Replica) string {
	state := func(missing bool, st rollout.State) string {
		switch {
		case missing:
			return "missing"
		case st.Terminating:
			return "terminating"
		case st.Ready && st.Available:
			return "available"
		}
		return "pending"
	}
	var parts []string
	for _, r := range rs {
		if len(r.Members) == 0 {
			parts = append(parts, r.Name+" "+state(false, r.State))
			continue
		}
		var ms []string
		for _, m := range r.Members {
			ms = append(ms, state(m.Missing, m.State))
		}
		parts = append(parts, fmt.Sprintf("%s [%s]", r.Name, strings.Join(ms, " ")))
	}
	return strings.Join(parts, " ")
}

// TestSimulatorFaultsDeleteMembers: MemberDeleted deletes gang members' pods
// (terminating at once, gone at the next Settle); Repair creates them again,
// pending until the next Settle.
func TestSimulatorFaultsDeleteMembers(t *testing.T) {
	s := rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("g", 1, "2-b", "", 2), GangSize: 2},
		rollouttest.Faults{MemberDeleted: 100})
	sim.Settle(nil)
	if got := describe(sim.Replicas); got != "g-0 [terminating terminating]" {
		t.Fatalf("after a Settle deleting every member: %s", got)
	}
	sim.Faults = rollouttest.NoFaults
	sim.Replicas[0].Members[0].State.Terminating = false // one pod survives after all
	sim.Settle(nil)
	if got := describe(sim.Replicas); got != "g-0 [available missing]" {
		t.Fatalf("after the deleted pod is gone: %s", got)
	}
	step, err := sim.Reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Repair) != 1 || describe(sim.Replicas) != "g-0 [available pending]" {
		t.Fatalf("repair %+v: %s", step.Repair, describe(sim.Replicas))
	}
	if err := sim.Execute(context.Background(), nil, s, step); err == nil || err.Error() != "members already exist: g-0-1" {
		t.Fatalf("repeating the repair: got %v, want members already exist: g-0-1", err)
	}
	sim.Settle(nil)
	sim.Reconciles = 0
	if n, err := sim.Run(0); err != nil || n != 1 {
		t.Fatalf("after the repair: %d reconciles, %v; want complete at once", n, err)
	}
}

// TestSimulatorRecreatesOnUpdate: with Recreate, an update deletes the pods
// that change instead of moving them. A whole gang's pods all go, so the gang
// is terminating and then gone; a half-updated gang loses only its pod on the
// other revision, and a missing member is created at once.
func TestSimulatorRecreatesOnUpdate(t *testing.T) {
	s := rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 2}
	rs := fleet("g", 2, "1-a", "", 3)
	rs[1].Revision = "2-b"
	rs[1].Members[1].Revision = "1-a"
	rs[1].Members[2] = rollout.Member{Column: "2", Missing: true}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: rs, GangSize: 3}, rollouttest.NoFaults)
	sim.Recreate = true
	sim.Apply(rollout.Step{Update: []rollout.Update{
		{Replica: "g-0", From: "1-a", To: "2-b", Pods: []string{"g-0-0", "g-0-1", "g-0-2"}},
		{Replica: "g-1", Index: 1, From: "2-b", To: "2-b", Pods: []string{"g-1-0", "g-1-1"}, Missing: []string{"2"}},
	}})
	if got := describe(sim.Replicas); got != "g-0 [terminating terminating terminating] g-1 [available terminating pending]" {
		t.Fatalf("after the updates: %s", got)
	}
	if !sim.Replicas[0].Effective().Terminating || len(rollouttest.Counted(sim.Replicas)) != 1 {
		t.Fatal("a gang whose pods are all being deleted is counted")
	}
	sim.Settle(nil)
	if got := describe(sim.Replicas); got != "g-1 [available missing available]" {
		t.Fatalf("after the pods are gone: %s", got)
	}
	if n, err := sim.Run(0); err != nil {
		t.Fatalf("after %d reconciles: %v", n, err)
	}
}

// TestScenarioOfDrawsMissingGangMembers: the generator meets users' tests with
// missing and terminating members, so a simulator or controller that ignores
// them is caught.
func TestScenarioOfDrawsMissingGangMembers(t *testing.T) {
	gen := rollouttest.ScenarioOf(rollout.Gang, rollouttest.DefaultLimits)
	missing, terminating := 0, 0
	for seed := range 200 {
		for _, r := range gen.Example(seed).Replicas {
			for _, m := range r.Members {
				if m.Missing {
					missing++
				}
				if m.State.Terminating {
					terminating++
				}
			}
		}
	}
	if missing == 0 || terminating == 0 {
		t.Fatalf("200 gang scenarios with %d missing and %d terminating members", missing, terminating)
	}
}
