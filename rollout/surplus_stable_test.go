package rollout_test

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// TestGroupSurplusKeepsTheStableRevisionInEveryColumn: with LatestRatio holding one
// old row back, each column has one replica too many, and its old replicas are the
// stable revision (2-b) and an older one (1-a) equally available. Cutting by
// availability alone kept 1-a in col-0 and 2-b in col-1, so no old row was whole and
// the next reconciles had to create a 2-b and delete a 1-a again (found by the
// convergence-bound property with a recreating executor). The stable revision's
// replicas go last in every column, so the kept old row is 2-b in both.
func TestGroupSurplusKeepsTheStableRevisionInEveryColumn(t *testing.T) {
	ready := rollout.State{Ready: true, Available: true, Healthy: true}
	var rs []rollout.Replica
	add := func(col, name, rev string, idx int) {
		rs = append(rs, rollout.Replica{Name: name, Column: col, Index: idx, Revision: rev, State: ready})
	}
	for i := range 10 {
		add("col-0", fmt.Sprintf("a-%d", i), "3-c", i)
		add("col-1", fmt.Sprintf("b-%d", i), "3-c", i)
	}
	add("col-0", "r-7", "2-b", 10)
	add("col-0", "r-8", "1-a", 11)
	add("col-1", "r-15", "1-a", 10)
	add("col-1", "r-16", "1-a", 11)
	add("col-1", "r-17", "2-b", 12)
	ratio, one := intstr.FromString("90%"), intstr.FromInt32(1) // L = ceil(0.9*11) = 10
	s := rollout.Strategy{
		Mode: rollout.Group, TargetRevision: "3-c", Replicas: 11, Columns: []string{"col-0", "col-1"},
		MaxUnavailable: &one, MaxSurge: &one, LatestRatio: &ratio, History: []string{"1-a", "2-b", "3-c"},
	}
	step, err := rollout.Plan(rs, s)
	if err != nil {
		t.Fatal(err)
	}
	got := deleted(step)
	slices.Sort(got)
	if want := []string{"r-15", "r-16", "r-8"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v (the 1-a replicas; each column keeps its 2-b)", got, want)
	}
	if len(step.Create) != 0 || len(step.Update) != 0 {
		t.Errorf("creates %v, updates %v; want none: one 2-b row is whole once the 1-a replicas go", created(step), updated(step))
	}
}
