package rollout_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// The order VersionOrder documents, checked in every mode: which old replicas
// move first toward 3-c with room for one move per column.
func TestVersionOrderIsTheDocumentedOrderInEveryMode(t *testing.T) {
	// pool builds replicas named <column><i> running revs, as single replicas
	// (rolling, group) or gangs of two (gang).
	pool := func(mode rollout.Mode, column string, revs ...string) []rollout.Replica {
		out := make([]rollout.Replica, len(revs))
		for i, rev := range revs {
			r := rollout.Replica{Name: fmt.Sprintf("%s%d", column, i), Revision: rev, State: ready}
			if mode == rollout.Group {
				r.Column = column
			}
			if mode == rollout.Gang {
				r.State = rollout.State{}
				for m := range 2 {
					r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("%s-%d", r.Name, m), State: ready})
				}
			}
			out[i] = r
		}
		return out
	}
	type fixture struct {
		mode     rollout.Mode
		name     string
		replicas []rollout.Replica
		want     map[rollout.VersionOrder]string // replicas updated, sorted
	}
	var fixtures []fixture
	for _, mode := range []rollout.Mode{rollout.Rolling, rollout.Gang} {
		fixtures = append(fixtures,
			// 1-a has 1 available replica, 2-b has 2.
			fixture{mode, "the least available version, the second-newest or the oldest",
				pool(mode, "x", "1-a", "2-b", "2-b"),
				map[rollout.VersionOrder]string{rollout.LessFirst: "x0", rollout.LatestFirst: "x1", rollout.OldFirst: "x0"}},
			// 2-b has 1 available replica, 1-a has 2: LessFirst takes the newer.
			fixture{mode, "the least available version even when it is newer",
				pool(mode, "x", "1-a", "1-a", "2-b"),
				map[rollout.VersionOrder]string{rollout.LessFirst: "x2", rollout.LatestFirst: "x2", rollout.OldFirst: "x0"}})
	}
	group := func(name string, a, b []string, want map[rollout.VersionOrder]string) {
		fixtures = append(fixtures, fixture{rollout.Group, name,
			append(pool(rollout.Group, "a", a...), pool(rollout.Group, "b", b...)...), want})
	}
	// Whole rows: 1-a has 1 available row, 2-b has 2.
	group("whole rows: the least available version, the second-newest or the oldest",
		[]string{"1-a", "2-b", "2-b"}, []string{"1-a", "2-b", "2-b"},
		map[rollout.VersionOrder]string{rollout.LessFirst: "a0 b0", rollout.LatestFirst: "a1 b1", rollout.OldFirst: "a0 b0"})
	// 1-a and 2-b both have 1 available whole row (LessFirst's tie goes to the
	// older, 1-a), but A's second 2-b and B's second 1-a serve in no row: they go
	// first under every order.
	group("replicas beyond their version's whole rows go first under every order",
		[]string{"1-a", "2-b", "2-b"}, []string{"1-a", "1-a", "2-b"},
		map[rollout.VersionOrder]string{rollout.LessFirst: "a1 b0", rollout.LatestFirst: "a1 b0", rollout.OldFirst: "a1 b0"})

	for _, f := range fixtures {
		for _, order := range []rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst} {
			t.Run(fmt.Sprintf("%s %s: %s", f.mode, order, f.name), func(t *testing.T) {
				step, err := rollout.Plan(f.replicas, rollout.Strategy{Mode: f.mode, TargetRevision: "3-c", Replicas: 3,
					VersionOrder: order, History: []string{"1-a", "2-b", "3-c"},
					MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, u := range step.Update {
					got = append(got, u.Replica)
				}
				slices.Sort(got)
				if strings.Join(got, " ") != f.want[order] {
					t.Errorf("updates %v, want %s", got, f.want[order])
				}
			})
		}
	}
}
