package clustertest_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/rollout"
)

// parseGroups reads the state notation of lwsState.groupsKey back ('x' is a
// terminating pod of the old template).
func parseGroups(t *testing.T, s string) lwsState {
	t.Helper()
	st := lwsState{groups: map[int]map[int]lwsMember{}}
	for _, word := range strings.Fields(s) {
		idx, pods, ok := strings.Cut(word, ":")
		g, err := strconv.Atoi(idx)
		if !ok || err != nil {
			t.Fatalf("bad group %q", word)
		}
		st.groups[g] = map[int]lwsMember{}
		for w, c := range []byte(pods) {
			name := fmt.Sprintf("serve-%d-%d", g, w)
			switch c {
			case '-':
			case 'x':
				st.groups[g][w] = lwsMember{name: name, rev: 'a', terminating: true}
			case 'A', 'B':
				st.groups[g][w] = lwsMember{name: name, rev: c - 'A' + 'a', ready: true}
			case 'a', 'b':
				st.groups[g][w] = lwsMember{name: name, rev: c}
			default:
				t.Fatalf("bad pod %q in %q", c, word)
			}
		}
	}
	return st
}

func TestGroupsKeyRoundTrip(t *testing.T) {
	for _, s := range []string{"0:AA 1:AA", "0:xA 1:b- 2:Bb 3:BB", "0:-x 4:BB"} {
		st := parseGroups(t, s)
		if got := st.groupsKey(2); got != s {
			t.Errorf("groupsKey(parse(%q)) = %q", s, got)
		}
	}
}

// TestKplanDecision checks the model of LWS groups as gangs and the counting of
// kplan's step on states the cluster tests record.
func TestKplanDecision(t *testing.T) {
	byName := map[string]lwsCase{}
	for _, c := range lwsCases {
		byName[c.name] = c
	}
	for _, c := range []struct {
		lwsCase, state string
		want           lwsDecision
		actions        string
	}{
		{"maxUnavailable 1, maxSurge 0", "0:AA 1:AA 2:AA 3:AA", lwsDecision{total: 4, updated: 1}, "(update serve-3)"},
		{"maxUnavailable 1, maxSurge 0", "0:AA 1:AA 2:AA 3:bx", lwsDecision{total: 4, updated: 1}, "(MaxUnavailableReached)"},
		{"maxUnavailable 1, maxSurge 0", "0:AA 1:AA 2:AA 3:b-", lwsDecision{total: 4, updated: 1}, "(repair serve-3)"},
		{"maxUnavailable 1, maxSurge 1", "0:AA 1:AA 2:AA 3:AA", lwsDecision{total: 5, updated: 2}, "(update serve-3, create 4)"},
		{"maxUnavailable 1, maxSurge 1", "0:AA 1:bx 2:BB 3:BB 4:BB", lwsDecision{total: 4, updated: 4}, "(delete serve-0)"},
		{"partition 1", "0:AA 1:BB 2:BB", lwsDecision{total: 3, updated: 2}, "(RolloutComplete)"},
		{"partition 1", "0:AA 1:AA 2:AA", lwsDecision{total: 3, updated: 1}, "(update serve-2)"},
	} {
		t.Run(c.lwsCase+": "+c.state, func(t *testing.T) {
			lc := byName[c.lwsCase]
			replicas := kplanReplicas("serve", parseGroups(t, c.state), lc.size)
			step, err := rollout.Plan(replicas, kplanStrategy(lc, lc.size))
			if err != nil {
				t.Fatal(err)
			}
			if got := kplanDecision(replicas, step); got != c.want || stepSummary(step) != c.actions {
				t.Errorf("kplan: %s %s, want %s %s", got, stepSummary(step), c.want, c.actions)
			}
		})
	}
}

// parseDSGroups parses a DisaggregatedSet state as dsState.groupsKey renders
// it: "decode a0:AA b0:BB | prefill a0:AA a1:AA b0:BB".
func parseDSGroups(t *testing.T, s string) dsState {
	t.Helper()
	st := dsState{groups: map[dsGroupKey]map[int]lwsMember{}}
	for _, role := range strings.Split(s, " | ") {
		words := strings.Fields(role)
		if len(words) < 2 {
			t.Fatalf("bad role %q", role)
		}
		for _, word := range words[1:] {
			one := parseGroups(t, word[1:])
			for g, members := range one.groups {
				st.groups[dsGroupKey{role: words[0], rev: word[0], index: g}] = members
			}
		}
	}
	return st
}

// TestKplanDecisionDisaggregatedSet: PlanLockstep's decision per role in
// DisaggregatedSet states (prefill 2 groups of 2, decode 1), including the one
// where it once deleted decode's old group while prefill's old groups still
// ran (OldKeptForOtherRoles in LWS.md): decode now keeps it, as the
// controller does.
func TestKplanDecisionDisaggregatedSet(t *testing.T) {
	roles := []dsRole{{"prefill", 2, 2}, {"decode", 1, 2}}
	for _, c := range []struct {
		state string
		want  map[string]string // role -> decision and actions
	}{
		{"decode a0:AA | prefill a0:AA a1:AA", map[string]string{
			"prefill": "groups 3, new 1 (create 2)", "decode": "groups 2, new 1 (create 1)"}},
		{"decode a0:AA b0:BB | prefill a0:AA a1:AA b0:BB", map[string]string{
			"prefill": "groups 3, new 2 (delete prefill-a-1, create 2)", "decode": "groups 2, new 1 (WaitingForOtherRoles)"}},
		{"decode a0:AA b0:BB | prefill a1:AA b0:BB b1:BB", map[string]string{
			"prefill": "groups 2, new 2 (delete prefill-a-1)", "decode": "groups 1, new 1 (delete decode-a-0)"}},
	} {
		t.Run(c.state, func(t *testing.T) {
			lr := dsLockstepRoles(parseDSGroups(t, c.state), roles)
			ls, err := rollout.PlanLockstep(lr)
			if err != nil {
				t.Fatal(err)
			}
			for i, role := range roles {
				got := kplanDecision(lr[i].Replicas, ls.Roles[i].Step).String() + " " + stepSummary(ls.Roles[i].Step)
				if got != c.want[role.name] {
					t.Errorf("%s: got %s, want %s", role.name, got, c.want[role.name])
				}
			}
		})
	}
}

func TestLWSDecisionOf(t *testing.T) {
	for _, c := range []struct {
		state               string
		replicas, partition int32
		want                lwsDecision
	}{
		{"0:AA 1:AA 2:AA 3:AA", 4, 3, lwsDecision{total: 4, updated: 1}},
		{"0:AA 1:AA 2:AA 3:AA", 5, 4, lwsDecision{total: 5, updated: 1}},
		{"0:AA 1:BB 2:BB", 3, 1, lwsDecision{total: 3, updated: 2}},
		// A group below the partition that already runs the new template keeps it.
		{"0:AA 1:BB 2:BB", 3, 2, lwsDecision{total: 3, updated: 2}},
		{"0:BB 1:BB 2:BB 3:BB 4:-x", 4, 0, lwsDecision{total: 4, updated: 4}},
	} {
		t.Run(fmt.Sprintf("%s r=%d p=%d", c.state, c.replicas, c.partition), func(t *testing.T) {
			s := parseGroups(t, c.state)
			s.replicas, s.partition = c.replicas, c.partition
			if got := lwsDecisionOf(s); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	d := func(total, updated int) lwsDecision { return lwsDecision{total: total, updated: updated} }
	for _, c := range []struct {
		name         string
		lws, kplan   lwsDecision
		want         diffKind
		wantPrefix   bool
		dsKindCheck  bool
		otherDrained bool
		notStable    bool
	}{
		{name: "equal decisions are no difference", lws: d(4, 2), kplan: d(4, 2), want: ""},
		{name: "LWS keeping more groups is SurgeKept", lws: d(5, 5), kplan: d(4, 4), want: kindSurgeKept},
		{name: "LWS moving fewer groups is LWSBehind", lws: d(5, 2), kplan: d(5, 3), want: kindLWSBehind},
		{name: "LWS moving more groups is unexplained", lws: d(4, 3), kplan: d(4, 2), want: "unexplained", wantPrefix: true},
		{name: "LWS with fewer groups, none more new, is SurgeLater", lws: d(4, 1), kplan: d(5, 2), want: kindSurgeLater},
		{name: "LWS with fewer groups but more new is unexplained", lws: d(4, 3), kplan: d(5, 2), want: "unexplained", wantPrefix: true},
		{name: "DS keeping old groups is OldKeptForOtherRoles", lws: d(2, 1), kplan: d(1, 1), want: kindOldKeptForOtherRoles, dsKindCheck: true},
		{name: "DS keeping old groups after draining another role is DrainInFlight", lws: d(2, 1), kplan: d(1, 1), want: kindDrainInFlight,
			dsKindCheck: true, otherDrained: true},
		{name: "DS keeping old groups kplan keeps some of is OldKeptForOtherRoles", lws: d(3, 1), kplan: d(2, 1), want: kindOldKeptForOtherRoles,
			dsKindCheck: true, otherDrained: true},
		{name: "DS keeping old groups before its new revision is stable is NotStable", lws: d(2, 1), kplan: d(1, 1), want: kindNotStable,
			dsKindCheck: true, notStable: true},
		{name: "DS draining before scaling up is DrainThenScaleUp", lws: d(2, 1), kplan: d(3, 2), want: kindDrainThenScaleUp, dsKindCheck: true},
		{name: "DS ahead of kplan is unexplained", lws: d(3, 2), kplan: d(3, 1), want: "unexplained", wantPrefix: true, dsKindCheck: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got diffKind
			if c.dsKindCheck {
				got = dsKind(c.lws, c.kplan, c.otherDrained, !c.notStable)
			} else {
				got = lwsKind(lwsComparison{lws: c.lws, kplan: c.kplan})
			}
			if c.wantPrefix && !strings.HasPrefix(string(got), string(c.want)) || !c.wantPrefix && got != c.want {
				t.Errorf("kind %q, want %q", got, c.want)
			}
		})
	}
}

func TestCheckKinds(t *testing.T) {
	for _, c := range []struct {
		name              string
		observed          map[diffKind]int
		required, allowed []diffKind
		fails             bool
	}{
		{"required and allowed seen", map[diffKind]int{kindSurgeKept: 3, kindLWSBehind: 1}, []diffKind{kindSurgeKept}, []diffKind{kindLWSBehind}, false},
		{"allowed not seen", map[diffKind]int{kindSurgeKept: 3}, []diffKind{kindSurgeKept}, []diffKind{kindLWSBehind}, false},
		{"required not seen", map[diffKind]int{}, []diffKind{kindSurgeKept}, nil, true},
		{"unexpected seen", map[diffKind]int{kindSurgeKept: 1}, nil, []diffKind{kindLWSBehind}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			problems := kindProblems(c.observed, c.required, c.allowed)
			if (len(problems) > 0) != c.fails {
				t.Errorf("problems %q, want failing %t", problems, c.fails)
			}
		})
	}
}
