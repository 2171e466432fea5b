package rollout_test

import (
	"fmt"
	"math/rand/v2"
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
			rs[i] = rollout.Replica{Name: n, Revision: "1-a", State: rollouttest.States().Draw(t, "state"),
				Priority: int32(rapid.IntRange(-2, 2).Draw(t, "priority")), DeletionCost: int64(rapid.IntRange(-2, 2).Draw(t, "cost"))}
		}
		u := intstr.FromInt32(int32(rapid.IntRange(0, 5).Draw(t, "maxUnavailable")))
		zero := intstr.FromInt32(0)
		s := rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: len(rs), MaxUnavailable: &u, MaxSurge: &zero}
		if u.IntVal == 0 {
			s.MaxSurge = nil
		}
		checkChoosesInOrder(t, rs, s)
	})
}

// TestPlanChoosesInCompareReplicasOrderLarge is the same check with pools of
// 256 to 1000 replicas, whose packed sort records often tie: names share long prefixes ("replica-set-0001-"), differ in leading zeros and
// beyond their first 8 key bytes, and health, priority and cost take few values,
// so that many replicas tie on everything but the name.
func TestPlanChoosesInCompareReplicasOrderLarge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(256, 1000).Draw(t, "n")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0))
		prefixes := []string{"replica-set-0001-", "replica-set-1-", "replica-set-01-x"}
		seen := map[string]bool{}
		var rs []rollout.Replica
		for len(rs) < n {
			name := fmt.Sprintf("%s%0*d", prefixes[rng.IntN(len(prefixes))], rng.IntN(4), rng.IntN(2*n))
			if rng.IntN(4) == 0 {
				name += "-tail"
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			st := rollout.State{Ready: true, Available: true, Healthy: true}
			switch rng.IntN(8) {
			case 0:
				st.Available = false
			case 1:
				st.Failed = true
			}
			rs = append(rs, rollout.Replica{Name: name, Revision: "1-a", State: st,
				Priority: int32(rng.IntN(3) - 1), DeletionCost: int64(rng.IntN(3) - 1)})
		}
		u := intstr.FromInt32(int32(rapid.IntRange(1, n).Draw(t, "maxUnavailable")))
		zero := intstr.FromInt32(0)
		checkChoosesInOrder(t, rs, rollout.Strategy{Mode: rollout.Rolling, TargetRevision: "2-b", Replicas: len(rs),
			MaxUnavailable: &u, MaxSurge: &zero})
	})
}

// checkChoosesInOrder checks that Plan updates or explains every replica of rs
// (all at an old revision), both lists in CompareReplicas order.
func checkChoosesInOrder(t *rapid.T, rs []rollout.Replica, s rollout.Strategy) {
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
}
