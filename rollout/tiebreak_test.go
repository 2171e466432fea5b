package rollout_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
)

// withRevisions builds available replicas r-0, r-1, ... running the given
// revisions in order, in column col.
func withRevisions(col string, first int, revs ...string) []rollout.Replica {
	out := make([]rollout.Replica, len(revs))
	for i, rev := range revs {
		out[i] = rollout.Replica{Name: fmt.Sprintf("r-%d", first+i), Revision: rev, State: ready, Column: col}
	}
	return out
}

func gangsOf(rs []rollout.Replica) []rollout.Replica {
	for i := range rs {
		rs[i].Members = []rollout.Member{{Name: rs[i].Name + "-0", State: ready}, {Name: rs[i].Name + "-1", State: ready}}
	}
	return rs
}

// TestVersionOrderTies checks which old version loses a replica first when old
// versions are otherwise equal: LessFirst takes the newest of the equally
// available old versions (the second-newest revision overall), as the design's
// "on equal terms, update the second-newest first" says.
func TestVersionOrderTies(t *testing.T) {
	one, zero := ptr(intstr.FromInt32(1)), ptr(intstr.FromInt32(0))
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     []string
	}{
		{
			name:     "LessFirst with two old versions equally available updates the second-newest first",
			replicas: withRevisions("", 0, "1-a", "1-a", "2-b", "2-b"),
			strategy: rollout.Strategy{TargetRevision: "3-c", Replicas: 4, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-2->3-c"},
		},
		{
			name:     "LessFirst with three old versions equally available updates the newest old one first",
			replicas: withRevisions("", 0, "1-a", "2-b", "3-c"),
			strategy: rollout.Strategy{TargetRevision: "4-d", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-2->4-d"},
		},
		{
			name:     "LessFirst with a tie between the two newest old versions skips the less available oldest",
			replicas: withRevisions("", 0, "1-a", "1-a", "1-a", "2-b", "2-b", "3-c", "3-c"),
			strategy: rollout.Strategy{TargetRevision: "4-d", Replicas: 7, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-5->4-d"},
		},
		{
			name:     "LessFirst without a tie still takes the least available version, even the oldest",
			replicas: withRevisions("", 0, "1-a", "2-b", "2-b"),
			strategy: rollout.Strategy{TargetRevision: "3-c", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-0->3-c"},
		},
		{
			name:     "LessFirst tie in a rollback takes the newest version other than the target",
			replicas: withRevisions("", 0, "2-b", "2-b", "3-c", "3-c"),
			strategy: rollout.Strategy{TargetRevision: "1-a", Replicas: 4, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-2->1-a"},
		},
		{
			name:     "OldFirst on the same tie still takes the oldest",
			replicas: withRevisions("", 0, "1-a", "1-a", "2-b", "2-b"),
			strategy: rollout.Strategy{TargetRevision: "3-c", Replicas: 4, MaxUnavailable: one, MaxSurge: zero, VersionOrder: rollout.OldFirst},
			want:     []string{"r-0->3-c"},
		},
		{
			name:     "LatestFirst on the same tie takes the second-newest",
			replicas: withRevisions("", 0, "1-a", "1-a", "2-b", "2-b"),
			strategy: rollout.Strategy{TargetRevision: "3-c", Replicas: 4, MaxUnavailable: one, MaxSurge: zero, VersionOrder: rollout.LatestFirst},
			want:     []string{"r-2->3-c"},
		},
		{
			name:     "gang mode LessFirst tie updates the second-newest gang first",
			replicas: gangsOf(withRevisions("", 0, "1-a", "2-b")),
			strategy: rollout.Strategy{Mode: rollout.Gang, TargetRevision: "3-c", Replicas: 2, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-1->3-c"},
		},
		{
			name: "group mode LessFirst tie updates the second-newest first in every column",
			replicas: append(withRevisions("a", 0, "1-a", "2-b", "3-c"),
				withRevisions("b", 3, "1-a", "2-b", "3-c")...),
			strategy: rollout.Strategy{Mode: rollout.Group, TargetRevision: "3-c", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			want:     []string{"r-1->3-c", "r-4->3-c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if got := updated(step); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("updates %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLessFirstTieBreakProperty draws rolling fleets of available replicas over
// up to four old versions and checks that, with one replica moving per step,
// LessFirst moves a replica of the least available old version and, among
// equally available ones, of the newest.
func TestLessFirstTieBreakProperty(t *testing.T) {
	revs := []string{"1-a", "2-b", "3-c", "4-d"}
	rapid.Check(t, func(t *rapid.T) {
		count := map[string]int{}
		var rs []rollout.Replica
		for _, rev := range revs {
			k := rapid.IntRange(0, 3).Draw(t, rev)
			count[rev] = k
			rs = append(rs, withRevisions("", len(rs), repeat(rev, k)...)...)
		}
		if len(rs) == 0 {
			t.Skip("no old replica")
		}
		s := rollout.Strategy{TargetRevision: "5-e", Replicas: len(rs),
			MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
		step, err := rollout.Plan(rs, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(step.Update) != 1 {
			t.Fatalf("updates %v, want one", updated(step))
		}
		want := ""
		for _, rev := range revs { // oldest to newest: a later equal count wins
			if k := count[rev]; k > 0 && (want == "" || k <= count[want]) {
				want = rev
			}
		}
		if got := step.Update[0].From; got != want {
			t.Fatalf("moved a replica of %s, want %s (counts %v)", got, want, count)
		}
	})
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
