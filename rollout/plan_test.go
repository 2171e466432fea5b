package rollout_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

func replicasAt(prefix string, n int, rev string, st rollout.State) []rollout.Replica {
	out := make([]rollout.Replica, n)
	for i := range out {
		out[i] = rollout.Replica{Name: fmt.Sprintf("%s-%d", prefix, i), Index: i, Revision: rev, State: st}
	}
	return out
}

func updated(step rollout.Step) []string {
	var out []string
	for _, u := range step.Update {
		out = append(out, u.Replica+"->"+u.To)
	}
	return out
}

// created lists a step's creates as revision@index (column/ when set).
func created(step rollout.Step) []string {
	var out []string
	for _, c := range step.Create {
		col := ""
		if c.Column != "" {
			col = c.Column + "/"
		}
		out = append(out, fmt.Sprintf("%s%s@%d", col, c.Revision, c.Index))
	}
	return out
}

// deleted lists the names of a step's deletes.
func deleted(step rollout.Step) []string {
	var out []string
	for _, d := range step.Delete {
		out = append(out, d.Replica)
	}
	return out
}

func TestPlanStallCases(t *testing.T) {
	unready := rollout.State{Healthy: true}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string // updates, creates and deletes, as text
	}{
		{
			// 20% of 3 = 0.6 -> 0 -> floored to 1: one replica moves per step.
			name:     "twenty percent of three replicas moves one replica",
			replicas: replicasAt("r", 3, "1-a", ready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 3, MaxUnavailable: ptr(intstr.FromString("20%")), MaxSurge: ptr(intstr.FromInt32(0))},
			want:     "update [r-0->2-b] create [] delete []",
		},
		{
			// 4 unready > maxUnavailable 1, but updating an unavailable replica costs
			// nothing: all four move at once instead of deadlocking.
			name:     "all old replicas unready are all updated at once",
			replicas: replicasAt("r", 4, "1-a", unready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 4, MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))},
			want:     "update [r-0->2-b r-1->2-b r-2->2-b r-3->2-b] create [] delete []",
		},
		{
			// n=1, maxUnavailable 0, surge 1: floor 1 forbids updating the only
			// replica; surge room is 1 + 1 - 1 = 1: create one new replica.
			name:     "maxUnavailable zero with surge one and one replica creates first",
			replicas: replicasAt("r", 1, "1-a", ready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 1, MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))},
			want:     "update [] create [2-b@1] delete []",
		},
		{
			// 2 replicas present, 1 wanted at 2-b and available: 2 available - 1 = 1 >=
			// floor 1, so the old one is deleted.
			name: "maxUnavailable zero deletes the old replica once the new one is available",
			replicas: []rollout.Replica{
				{Name: "r-0", Revision: "1-a", State: ready}, {Name: "r-1", Revision: "2-b", State: ready}},
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 1, MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))},
			want:     "update [] create [] delete [r-0]",
		},
		{
			// 5 replicas, 3 wanted, floor 3 - 1 = 2, 4 available: delete the unavailable
			// r-2 first (free), then r-0 (4 - 1 = 3 >= 2).
			name: "scaling down deletes unavailable replicas first",
			replicas: []rollout.Replica{
				{Name: "r-0", Revision: "2-b", State: ready}, {Name: "r-1", Revision: "2-b", State: ready},
				{Name: "r-2", Revision: "2-b", State: unready}, {Name: "r-3", Revision: "2-b", State: ready},
				{Name: "r-4", Revision: "2-b", State: ready}},
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 3, MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))},
			want:     "update [] create [] delete [r-2 r-0]",
		},
		{
			// Missing replicas are created at the target without budget.
			name:     "scaling up creates at the target",
			replicas: replicasAt("r", 1, "2-b", ready),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 3},
			want:     "update [] create [2-b@1 2-b@2] delete []",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("update %v create %v delete %v", updated(step), created(step), deleted(step))
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPlanVersionOrder(t *testing.T) {
	// Three versions: 1-a has 1 replica, 2-b has 2 (all available); target 3-c,
	// maxUnavailable 1: exactly one old replica moves, chosen by version order.
	replicas := []rollout.Replica{
		{Name: "a-0", Revision: "1-a", State: ready},
		{Name: "b-0", Revision: "2-b", State: ready},
		{Name: "b-1", Revision: "2-b", State: ready},
	}
	tests := []struct {
		order rollout.VersionOrder
		want  string
	}{
		{rollout.LessFirst, "a-0"},   // 1-a has the least availability (1 < 2)
		{rollout.LatestFirst, "b-0"}, // second-newest first
		{rollout.OldFirst, "a-0"},    // oldest first
	}
	for _, tt := range tests {
		t.Run(string(tt.order)+" picks "+tt.want, func(t *testing.T) {
			step, err := rollout.Plan(replicas, rollout.Strategy{TargetRevision: "3-c", Replicas: 3, VersionOrder: tt.order,
				MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
			if err != nil {
				t.Fatal(err)
			}
			if len(step.Update) != 1 || step.Update[0].Replica != tt.want {
				t.Fatalf("updates %v, want only %s", updated(step), tt.want)
			}
		})
	}
	t.Run("LessFirst prefers the emptier version even when it is newer", func(t *testing.T) {
		rs := []rollout.Replica{
			{Name: "a-0", Revision: "1-a", State: ready}, {Name: "a-1", Revision: "1-a", State: ready},
			{Name: "b-0", Revision: "2-b", State: ready},
		}
		step, err := rollout.Plan(rs, rollout.Strategy{TargetRevision: "3-c", Replicas: 3,
			MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
		if err != nil || len(step.Update) != 1 || step.Update[0].Replica != "b-0" {
			t.Fatalf("updates %v (%v), want b-0", updated(step), err)
		}
	})
}

func TestPlanGangsMoveWhole(t *testing.T) {
	t.Run("a half-updated gang is finished at its own revision first", func(t *testing.T) {
		rs := []rollout.Replica{{Name: "g-0", Revision: "2-b", Members: []rollout.Member{
			{Name: "g-0-0", Revision: "2-b", State: ready}, {Name: "g-0-1", Revision: "1-a", State: ready}}}}
		step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(step.Update) != 1 || step.Update[0].To != "2-b" || len(step.Update[0].Pods) != 2 {
			t.Fatalf("got %+v", step.Update)
		}
	})
	t.Run("a complete gang rollout reports complete", func(t *testing.T) {
		rs := []rollout.Replica{{Name: "g-0", Revision: "2-b", Members: []rollout.Member{
			{Name: "g-0-0", State: ready}, {Name: "g-0-1", State: ready}}}}
		step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1})
		if err != nil || !step.Complete || !step.Empty() {
			t.Fatalf("got %+v, %v", step, err)
		}
	})
}

func TestPlanGroupWindowSlidesBack(t *testing.T) {
	// Two columns of 2, all at 2-b; the ratio drops to 50% = 1 per column: each
	// column moves one replica back to 1-a (window slides backward).
	var rs []rollout.Replica
	for _, c := range []string{"a", "b"} {
		for i := range 2 {
			rs = append(rs, rollout.Replica{Name: fmt.Sprintf("%s-%d", c, i), Column: c, Revision: "2-b", State: ready})
		}
	}
	step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 2,
		LatestRatio: ptr(intstr.FromString("50%")), History: []string{"1-a", "2-b"},
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(updated(step), " "); got != "a-0->1-a b-0->1-a" {
		t.Fatalf("got %s", got)
	}
}

func TestPlanRejectsBadInput(t *testing.T) {
	ok := rollout.Strategy{TargetRevision: "2-b", Replicas: 1}
	with := func(f func(*rollout.Strategy)) rollout.Strategy { s := ok; f(&s); return s }
	one := []rollout.Replica{{Name: "r-0", Revision: "1-a", State: ready}}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string
	}{
		{"empty names are counted", []rollout.Replica{{Revision: "1-a"}, {Name: "r-1"}, {Revision: "1-a"}}, ok, "replicas: 2 without a name: name: must not be empty"},
		// r-2 is fine; r-9 (before r-10 in natural order) has three problems, the
		// first by message is reported.
		{"of several problems the first replica by name is reported", []rollout.Replica{{Name: "r-10"}, {Name: "r-9", Revision: "1-a"}, {Name: "r-9"}, {Name: "r-2", Revision: "1-a", Column: "c"}},
			with(func(s *rollout.Strategy) { s.Mode = rollout.Group }), "replica r-9: column: group mode needs a column"},
		{"a repeated name is named", append(one, one[0]), ok, "replica r-0: name: repeated"},
		{"an empty revision is named", []rollout.Replica{{Name: "r-0"}}, ok, "replica r-0: revision"},
		{"a gang without members is rejected", one, with(func(s *rollout.Strategy) { s.Mode = rollout.Gang }), "replica r-0: members"},
		{"a member without a name is rejected", []rollout.Replica{{Name: "g", Revision: "1-a", Members: []rollout.Member{{}}}},
			with(func(s *rollout.Strategy) { s.Mode = rollout.Gang }), "replica g: members[0].name"},
		{"a missing member without a column is rejected", []rollout.Replica{{Name: "g", Revision: "1-a", Members: []rollout.Member{
			{Name: "g-0", Column: "0"}, {Name: "g-1", Missing: true}}}},
			with(func(s *rollout.Strategy) { s.Mode = rollout.Gang }), "replica g: members[1].column: must not be empty for a missing member"},
		{"a missing member in another member's column is rejected", []rollout.Replica{{Name: "g", Revision: "1-a", Members: []rollout.Member{
			{Name: "g-0", Column: "0"}, {Column: "0", Missing: true}}}},
			with(func(s *rollout.Strategy) { s.Mode = rollout.Gang }), `replica g: members[1].column: "0" is repeated in the gang`},
		{"a negative index is rejected", []rollout.Replica{{Name: "r-0", Revision: "1-a", Index: -1}}, ok, "replica r-0: index: -1 is negative"},
		{"a repeated column is rejected", one, with(func(s *rollout.Strategy) { s.Columns = []string{"a", "b", "a"} }),
			`strategy: columns[2]: "a" is empty or repeated`},
		{"an empty column is rejected", one, with(func(s *rollout.Strategy) { s.Mode, s.Columns = rollout.Gang, []string{""} }),
			`strategy: columns[0]: "" is empty or repeated`},
		{"a group replica without a column is rejected", one, with(func(s *rollout.Strategy) { s.Mode = rollout.Group }), "replica r-0: column"},
		{"an unknown mode is rejected", one, with(func(s *rollout.Strategy) { s.Mode = "rolling" }), `strategy: mode: "rolling" is not Rolling, Gang or Group`},
		{"an empty target is rejected", one, with(func(s *rollout.Strategy) { s.TargetRevision = "" }), "strategy: targetRevision"},
		{"a name longer than MaxNameLength is rejected", []rollout.Replica{{Name: strings.Repeat("r", rollout.MaxNameLength+1), Revision: "1-a"}},
			ok, "…: name: 254 bytes, longer than MaxNameLength 253"},
		{"more replicas than MaxReplicas are rejected", one, with(func(s *rollout.Strategy) { s.Replicas = rollout.MaxReplicas + 1 }), "strategy: replicas: 1048577"},
		{"a history longer than MaxReplicas is rejected", one, with(func(s *rollout.Strategy) { s.History = make([]string, rollout.MaxReplicas+1) }),
			"strategy: history: 1048577 entries"},
		{"negative replicas are rejected", one, with(func(s *rollout.Strategy) { s.Replicas = -1 }), "strategy: replicas"},
		{"an unknown version order is rejected", one, with(func(s *rollout.Strategy) { s.VersionOrder = "Newest" }), "strategy: versionOrder"},
		{"a repeated history entry is rejected", one, with(func(s *rollout.Strategy) { s.History = []string{"1-a", "1-a"} }), "strategy: history[1]"},
		{"a percent with an exponent is rejected", one, with(func(s *rollout.Strategy) { s.MaxUnavailable = ptr(intstr.FromString("2e1%")) }), "strategy: maxUnavailable"},
		{"explicit zero budgets are rejected", one, with(func(s *rollout.Strategy) {
			s.MaxUnavailable, s.MaxSurge = ptr(intstr.FromInt32(0)), ptr(intstr.FromInt32(0))
		}), "both are 0"},
		{"a malformed ratio is rejected", one, with(func(s *rollout.Strategy) { s.LatestRatio = ptr(intstr.FromString("half")) }), "strategy: latestRatio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rollout.Plan(tt.replicas, tt.strategy)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPlanLeavesRecoveryAlone(t *testing.T) {
	// r-1 failed and is being replaced by r-2: the rollout neither updates r-1 nor
	// r-2, counts r-1 (unavailable) in place of r-2, and explains why.
	rs := []rollout.Replica{
		{Name: "r-0", Revision: "1-a", State: ready},
		{Name: "r-1", Revision: "1-a", State: rollout.State{Failed: true}},
		{Name: "r-2", Revision: "1-a", State: ready, ReplacementFor: "r-1"},
	}
	step, err := rollout.Plan(rs, rollout.Strategy{TargetRevision: "2-b", Replicas: 2,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
	if err != nil {
		t.Fatal(err)
	}
	// r-1 uses up maxUnavailable 1 (2 - 1 = 1 available floor), so r-0 waits too.
	if len(step.Update) != 0 || len(step.Delete) != 0 || len(step.Create) != 0 {
		t.Fatalf("got actions %+v", step)
	}
	want := "[{r-1 BeingReplaced being replaced by recovery} {r-0 MaxUnavailableReached maxUnavailable budget exhausted}]"
	if got := fmt.Sprint(step.Waiting); got != want {
		t.Fatalf("waiting %s, want %s", got, want)
	}
}
