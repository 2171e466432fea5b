package rollout_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// Member states for the gang tests below.
var (
	up      = rollout.Member{State: ready}
	missing = rollout.Member{Missing: true}
	// going is a member whose pod has a deletion timestamp but still runs (and
	// still reports ready, as a pod does until its containers stop).
	going = rollout.Member{State: rollout.State{Ready: true, Available: true, Healthy: true, Terminating: true}}
)

// gangOf is gang name at rev with the given members in columns 0, 1, ...,
// named name-0, name-1, ... (missing ones have no name).
func gangOf(name, rev string, members ...rollout.Member) rollout.Replica {
	r := rollout.Replica{Name: name, Revision: rev}
	for i, m := range members {
		m.Column = strconv.Itoa(i)
		if !m.Missing {
			m.Name = name + "-" + m.Column
		}
		r.Members = append(r.Members, m)
	}
	return r
}

// gangStrategy is gang mode toward 2-b with maxUnavailable 1, maxSurge 0.
func gangStrategy(n int) rollout.Strategy {
	return rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: n,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
}

// planText plans replicas, fails the test unless the step reads want (stepText)
// and keeps rollouttest.Check's invariants, and returns it.
func planText(t *testing.T, replicas []rollout.Replica, strategy rollout.Strategy, want string) rollout.Step {
	t.Helper()
	step, err := rollout.Plan(replicas, strategy)
	if err != nil {
		t.Fatal(err)
	}
	if got := stepText(step); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if err := rollouttest.Check(replicas, strategy, step); err != nil {
		t.Fatalf("the step breaks an invariant: %v", err)
	}
	return step
}

// stepText is a step's actions and waits as one line: an update's pods and
// +[the columns it creates], a create's revision@index (column/ first when
// set) and member columns, a delete's pods, a repair's +[columns].
func stepText(s rollout.Step) string {
	var parts []string
	for _, u := range s.Update {
		parts = append(parts, fmt.Sprintf("update %s %s->%s %v", u.Replica, u.From, u.To, u.Pods))
		if len(u.Missing) > 0 {
			parts[len(parts)-1] += fmt.Sprintf(" +%v", u.Missing)
		}
	}
	for _, c := range s.Create {
		col := ""
		if c.Column != "" {
			col = c.Column + "/"
		}
		parts = append(parts, fmt.Sprintf("create %s%s@%d", col, c.Revision, c.Index))
		if len(c.Members) > 0 {
			parts[len(parts)-1] += fmt.Sprintf(" %v", c.Members)
		}
	}
	for _, d := range s.Delete {
		parts = append(parts, fmt.Sprintf("delete %s %v", d.Replica, d.Pods))
	}
	for _, r := range s.Repair {
		parts = append(parts, fmt.Sprintf("repair %s at %s%s +%v", r.Replica, r.Revision, r.Column, r.Missing))
	}
	for _, w := range s.Waiting {
		parts = append(parts, fmt.Sprintf("%s waits: %s", w.Replica, w.Reason))
	}
	parts = append(parts, fmt.Sprintf("complete %t", s.Complete))
	return strings.Join(parts, "; ")
}

func TestPlanRepairsGangsMissingMembers(t *testing.T) {
	ratio1 := intstr.FromInt32(1)
	heldBack := gangStrategy(2)
	heldBack.LatestRatio = &ratio1
	replaced := gangOf("g-1", "2-b", up, missing)
	replacement := gangOf("g-9", "2-b", rollout.Member{State: rollout.State{Healthy: true}}, rollout.Member{State: rollout.State{Healthy: true}})
	replacement.ReplacementFor = "g-1"
	shortReplacement := gangOf("g-9", "2-b", rollout.Member{State: rollout.State{Healthy: true}}, missing)
	shortReplacement.ReplacementFor = "g-1"
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string
	}{
		{
			// g-0 runs the target but lacks a pod: it is not a candidate (it runs
			// the target), so only a Repair makes it whole. It is unavailable, so
			// the floor (2 - 1 = 1) is already reached by g-1 alone.
			name:     "a gang on the target with one missing member is repaired and the step is not complete",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, missing), gangOf("g-1", "2-b", up, up)},
			strategy: gangStrategy(2),
			want:     "repair g-0 at 2-b +[1]; complete false",
		},
		{
			// LatestRatio 1 of 2: g-0 already runs the target, so g-1 stays at 1-a;
			// it is repaired at its own revision, not moved.
			name:     "a gang on an old revision held back by LatestRatio is repaired at its own revision",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, up), gangOf("g-1", "1-a", up, missing)},
			strategy: heldBack,
			want:     "repair g-1 at 1-a +[1]; complete false",
		},
		{
			// An unavailable old gang is a free candidate: its Update lists the
			// missing member, which the caller creates at 2-b; no Repair.
			name:     "a gang that is updated gets no repair: its update lists the missing member",
			replicas: []rollout.Replica{gangOf("g-0", "1-a", up, missing), gangOf("g-1", "2-b", up, up)},
			strategy: gangStrategy(2),
			want:     "update g-0 1-a->2-b [g-0-0] +[1]; complete false",
		},
		{
			name:     "a gang whose members are all missing is repaired whole",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", missing, missing), gangOf("g-1", "2-b", up, up)},
			strategy: gangStrategy(2),
			want:     "repair g-0 at 2-b +[0 1]; complete false",
		},
		{
			// The terminating member's pod still exists: it cannot be created
			// again until it is gone, so the gang waits; the missing one is
			// created now.
			name:     "only missing members are repaired, not terminating ones",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, going, missing), gangOf("g-1", "2-b", up, up, up)},
			strategy: gangStrategy(2),
			want:     "repair g-0 at 2-b +[2]; complete false",
		},
		{
			name:     "a gang with a terminating member and none missing waits until the pod is gone",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, going), gangOf("g-1", "2-b", up, up)},
			strategy: gangStrategy(2),
			want:     "g-0 waits: WaitingForAvailable; complete false",
		},
		{
			// 3 gangs wanted, 4 present: the unavailable surplus gang goes first,
			// deleted rather than repaired.
			name: "a surplus gang missing a member is deleted, not repaired",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, missing), gangOf("g-1", "2-b", up, up),
				gangOf("g-2", "2-b", up, up), gangOf("g-3", "2-b", up, up)},
			strategy: gangStrategy(3),
			want:     "delete g-0 [g-0-0]; complete false",
		},
		{
			// g-1 is failed and being replaced by g-9: recovery owns both, and
			// Plan touches neither.
			name:     "a gang recovery is replacing is left to recovery",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, up), replaced, replacement},
			strategy: gangStrategy(2),
			want:     "g-1 waits: BeingReplaced; complete false",
		},
		{
			// A replacement that lost a member (its controller died between the
			// creates of its pods) is swapped in only whole, so it is repaired;
			// the failed gang it replaces is still left to recovery.
			name:     "a recovery replacement missing a member is repaired, the replaced gang is not",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, up), replaced, shortReplacement},
			strategy: gangStrategy(2),
			want:     "repair g-9 at 2-b +[1]; g-1 waits: BeingReplaced; complete false",
		},
		{
			// Once the failed gang is gone, the replacement is counted in its
			// place (and still left to recovery), and still repaired.
			name:     "a counted recovery replacement missing a member is repaired",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, up), shortReplacement},
			strategy: gangStrategy(2),
			want:     "repair g-9 at 2-b +[1]; g-9 waits: BeingReplaced; complete false",
		},
		{
			name: "a half-updated gang is finished by an update at its own revision, not repaired",
			replicas: []rollout.Replica{{Name: "g-0", Revision: "2-b", Members: []rollout.Member{{Name: "g-0-0", Column: "0", State: ready},
				{Name: "g-0-1", Column: "1", Revision: "1-a", State: ready}, {Column: "2", Missing: true}}}, gangOf("g-1", "2-b", up, up, up)},
			strategy: gangStrategy(2),
			want:     "update g-0 2-b->2-b [g-0-0 g-0-1] +[2]; complete false",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := planText(t, tt.replicas, tt.strategy, tt.want)
			if len(step.Repair) > 0 && step.Empty() {
				t.Fatal("a step with repairs is Empty")
			}
		})
	}
}

func TestPlanRepairsInGroupModeWhileTheWindowHoldsTheGang(t *testing.T) {
	// Two columns of 2 rows toward 2-b, maxUnavailable 1: column b's target
	// replica b-0 is not available yet, so the window is 0 + 1 = 1 and column b
	// (already 1 at the target) moves nothing. b-1 is a gang (a row's member
	// pods) missing a pod: it waits for the window and is repaired at 1-a
	// meanwhile.
	notYet := rollout.State{Ready: true, Healthy: true}
	b1 := gangOf("b-1", "1-a", up, missing)
	b1.Column = "b"
	replicas := []rollout.Replica{
		{Name: "a-0", Revision: "2-b", Column: "a", State: ready}, {Name: "a-1", Revision: "1-a", Column: "a", State: ready},
		{Name: "b-0", Revision: "2-b", Column: "b", State: notYet}, b1,
	}
	s := rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 2,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	step, err := rollout.Plan(replicas, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "repair b-1 at 1-ab +[1]; a-1 waits: GroupWindow; b-1 waits: GroupWindow; b-0 waits: WaitingForAvailable; complete false"
	if got := stepText(step); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if err := rollouttest.Check(replicas, s, step); err != nil {
		t.Fatal(err)
	}
}

func TestPlanTerminatingGangMembers(t *testing.T) {
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string
	}{
		{
			// g-0 is being deleted (every pod has a deletion timestamp): Plan
			// counts 1 of 2 gangs and creates one at the target. Updating g-0
			// would update pods that are going away.
			name:     "a gang whose members are all terminating is ignored: a new gang is created instead of updating it",
			replicas: []rollout.Replica{gangOf("g-0", "1-a", going, going), gangOf("g-1", "1-a", up, up)},
			strategy: gangStrategy(2),
			want:     "create 2-b@1; g-1 waits: MaxUnavailableReached; complete false",
		},
		{
			// Missing members do not count as present: the pods g-0 still has are
			// all going away.
			name:     "a gang whose present members are all terminating and the rest missing is ignored",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", going, missing), gangOf("g-1", "2-b", up, up)},
			strategy: gangStrategy(2),
			want:     "create 2-b@1; complete false",
		},
		{
			// 3 gangs, floor 3 - 1 = 2. g-0's terminating member makes it
			// unavailable, so g-1 and g-2 are exactly the floor: neither can be
			// taken down. Counting g-0 available would update g-1.
			name:     "a gang with one terminating member is not available, and the budget counts it",
			replicas: []rollout.Replica{gangOf("g-0", "2-b", up, going), gangOf("g-1", "1-a", up, up), gangOf("g-2", "1-a", up, up)},
			strategy: gangStrategy(3),
			want:     "g-0 waits: WaitingForAvailable; g-1 waits: MaxUnavailableReached; g-2 waits: MaxUnavailableReached; complete false",
		},
		{
			// Floor 2 - 1 = 1. g-1 is unavailable, so it moves first and at no
			// cost, and g-0 then keeps the floor. Counting g-1 available would
			// move g-0 (first by name) instead.
			name:     "an old gang with a terminating member is updated first, at no cost",
			replicas: []rollout.Replica{gangOf("g-0", "1-a", up, up), gangOf("g-1", "1-a", up, going)},
			strategy: gangStrategy(2),
			want:     "update g-1 1-a->2-b [g-1-0]; g-0 waits: MaxUnavailableReached; complete false",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planText(t, tt.replicas, tt.strategy, tt.want)
		})
	}
}

func TestEffectiveStateOfGangsWithTerminatingMembers(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	goingUnready := rollout.Member{State: rollout.State{Healthy: true, Terminating: true, UnreadySince: since}}
	goingFailed := rollout.Member{State: rollout.State{Failed: true, Terminating: true}}
	tests := []struct {
		name string
		gang rollout.Replica
		want rollout.State
	}{
		{"a gang with every member up is available", gangOf("g", "2-b", up, up), ready},
		{"one terminating member makes the gang not ready, not available, not healthy",
			gangOf("g", "2-b", up, going), rollout.State{}},
		{"a gang whose members are all terminating is terminating",
			gangOf("g", "2-b", going, going), rollout.State{Terminating: true}},
		{"a gang whose present members are all terminating, the others missing, is terminating",
			gangOf("g", "2-b", going, missing), rollout.State{Terminating: true}},
		{"a gang whose members are all missing is not terminating (nothing is being deleted)",
			gangOf("g", "2-b", missing, missing), rollout.State{}},
		{"a terminating member's unready time is the gang's",
			gangOf("g", "2-b", up, goingUnready), rollout.State{UnreadySince: since}},
		{"a terminating member that failed still fails its gang",
			gangOf("g", "2-b", up, goingFailed), rollout.State{Failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.gang.Effective()); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanRecoverIgnoresGangsWhoseMembersAreAllTerminating(t *testing.T) {
	// Both pods of g-0 failed and are being deleted: the gang is going away, so
	// recovery starts no replacement for it (as for a terminating pod).
	failedGoing := rollout.Member{State: rollout.State{Failed: true, Terminating: true}}
	rs := []rollout.Replica{gangOf("g-0", "1-a", failedGoing, failedGoing), gangOf("g-1", "1-a", up, up)}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step, err := rollout.PlanRecover(rs, rollout.RecoverPolicy{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Replace)+len(step.Failed) != 0 {
		t.Fatalf("replace %v, failed %v: want nothing for a gang being deleted", step.Replace, step.Failed)
	}
	if _, failed := rollout.FailureReason(&rs[0], rollout.RecoverPolicy{}, now); failed {
		t.Fatal("FailureReason: a terminating gang is failed")
	}
	// With one failed member still present and not terminating, the gang is failed.
	rs[0].Members[1].State.Terminating = false
	if step, err = rollout.PlanRecover(rs, rollout.RecoverPolicy{}, now); err != nil || len(step.Replace) != 1 {
		t.Fatalf("replace %v (%v), want g-0 replaced", step.Replace, err)
	}
}

func TestPlanLockstepPassesRepairsThrough(t *testing.T) {
	decode := gangStrategy(2)
	decode.Mode = rollout.Rolling
	prefill := gangStrategy(1)
	prefill.Mode = rollout.Gang
	out, err := rollout.PlanLockstep([]rollout.Role{
		{Name: "prefill", Replicas: []rollout.Replica{gangOf("p-0", "2-b", up, missing)}, Strategy: prefill},
		{Name: "decode", Replicas: replicasAt("d", 2, "2-b", ready), Strategy: decode},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Roles[0].Step.Repair
	want := []rollout.Repair{{Replica: "p-0", Revision: "2-b", Missing: []string{"1"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("prefill's repairs (-want +got):\n%s", diff)
	}
	if out.Complete || out.Roles[0].Step.Complete {
		t.Fatal("complete while a gang lacks a member")
	}
}

// TestPlanRepairsEveryGangMissingMembers: in every mode, each counted gang with
// missing members that the step neither updates nor deletes is repaired
// exactly once, with its missing members at its own revision (Check holds
// every planner to this), and shuffled input gives the same Repair list.
func TestPlanRepairsEveryGangMissingMembers(t *testing.T) {
	for _, mode := range []rollout.Mode{rollout.Gang, rollout.Group} {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			repairs := 0
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				if mode == rollout.Group {
					// Group rows as gangs: give some replicas members, some missing.
					for i := range sc.Replicas {
						if rapid.Bool().Draw(t, "gang") {
							r := &sc.Replicas[i]
							for m := range rapid.IntRange(1, 3).Draw(t, "members") {
								r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("%s-%d", r.Name, m), Column: strconv.Itoa(m),
									State: rollouttest.States().Draw(t, "member"), Missing: rapid.IntRange(0, 3).Draw(t, "missing") == 0})
							}
						}
					}
				}
				step, err := rollout.Plan(sc.Replicas, sc.Strategy)
				if err != nil {
					t.Fatal(err)
				}
				if err := rollouttest.Check(sc.Replicas, sc.Strategy, step); err != nil {
					t.Fatalf("%v\n%s", err, sc)
				}
				again, err := rollout.Plan(rollouttest.Shuffled(t, sc.Replicas), sc.Strategy)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(step, again); diff != "" {
					t.Fatalf("shuffled input gives another step (-want +got):\n%s", diff)
				}
				repairs += len(step.Repair)
			})
			if repairs == 0 {
				t.Fatal("no step repaired anything: the property checked nothing")
			}
		})
	}
}
