package rollout_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// TestPlanChoosesInCompareReplicasOrder checks Plan's internal sort (packed keys,
// natural name keys past the common prefix) against the exported
// CompareReplicas: with one old version, the updated replicas and the waiting
// ones each come in CompareReplicas order. Names are drawn from a small
// alphabet with digits and leading zeros ("a-01", "a-1", "a-001a") to hit the
// natural order's tie rules.
func TestPlanChoosesInCompareReplicasOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.StringOfN(rapid.SampledFrom([]rune("a-019")), 1, 6, -1), 1, 30,
			func(s string) string { return s }).Draw(t, "names")
		rs := make([]rollout.Replica, len(names))
		for i, n := range names {
			rs[i] = rollout.Replica{Name: n, Revision: "1-a", State: rollouttest.State().Draw(t, "state"),
				Priority: int32(rapid.IntRange(-2, 2).Draw(t, "priority")), DeletionCost: int64(rapid.IntRange(-2, 2).Draw(t, "cost"))}
		}
		u := intstr.FromInt32(int32(rapid.IntRange(0, 5).Draw(t, "maxUnavailable")))
		zero := intstr.FromInt32(0)
		s := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: len(rs), MaxUnavailable: &u, MaxSurge: &zero}
		if u.IntVal == 0 {
			s.MaxSurge = nil
		}
		step, err := rollout.Plan(rs, s)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*rollout.Replica{}
		for i := range rs {
			byName[rs[i].Name] = &rs[i]
		}
		inOrder := func(what string, list []string) {
			if !slices.IsSortedFunc(list, func(a, b string) int { return rollout.CompareReplicas(byName[a], byName[b]) }) {
				t.Fatalf("%s not in CompareReplicas order: %q", what, list)
			}
		}
		var updated, waiting []string
		for _, up := range step.Update {
			updated = append(updated, up.Replica)
		}
		for _, w := range step.Waiting {
			waiting = append(waiting, w.Replica)
		}
		inOrder("updates", updated)
		inOrder("waiting", waiting)
		if len(updated)+len(waiting) != len(rs) {
			t.Fatalf("%d updated + %d waiting, want every one of %d old replicas", len(updated), len(waiting), len(rs))
		}
	})
}
