package rollout_test

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// TestGroupSurplusKeepsTheSameOldRowsInEveryColumn: each column has 10 replicas at
// the target plus old ones, one or two too many, with LatestRatio keeping old rows
// back (History 1-a, 2-b, target 3-c: 2-b is the stable revision). Every old replica
// is available, so availability does not choose; cutting by version order alone
// kept 2-b in one column and 1-a in the next, no old row was whole, and the rollout
// took extra reconciles to create a replica and delete another (found by the
// convergence-bound property with a recreating executor). Old replicas beyond their
// version's whole rows go first, then other versions' whole rows, then the stable
// revision's, so every column keeps the same old rows.
func TestGroupSurplusKeepsTheSameOldRowsInEveryColumn(t *testing.T) {
	tests := []struct {
		name    string
		n       int    // replicas per column; 10 are at the target
		ratio   string // LatestRatio
		col0    []string
		col1    []string
		deletes []string // old replicas deleted, as column/revision
	}{
		{
			// n=11, L=ceil(0.9*11)=10: one old row. Both a 2-b row and a 1-a row are
			// whole; the stable one is kept.
			name: "two whole old rows for one slot keep the stable row",
			n:    11, ratio: "90%",
			col0:    []string{"2-b", "1-a"},
			col1:    []string{"1-a", "1-a", "2-b"},
			deletes: []string{"col-0/1-a", "col-1/1-a", "col-1/1-a"},
		},
		{
			// n=11, L=10: one old row. Only 1-a's row is whole (no 2-b in col-1), so
			// it is kept and col-0's 2-b goes.
			name: "a whole row of another old version is kept over a broken stable row",
			n:    11, ratio: "90%",
			col0:    []string{"1-a", "2-b"},
			col1:    []string{"1-a"},
			deletes: []string{"col-0/2-b"},
		},
		{
			// n=13, L=ceil(0.7*13)=10: three old rows. 1-a has 2 whole rows (3 in
			// col-0, 2 in col-1), 2-b one (1 in col-0, 2 in col-1): each column cuts
			// the replica beyond its rows, 1-a in col-0 and 2-b in col-1.
			name: "replicas beyond their version's rows go first",
			n:    13, ratio: "70%",
			col0:    []string{"1-a", "1-a", "1-a", "2-b"},
			col1:    []string{"1-a", "1-a", "2-b", "2-b"},
			deletes: []string{"col-0/1-a", "col-1/2-b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := rollout.State{Ready: true, Available: true, Healthy: true}
			var rs []rollout.Replica
			rev := map[string]string{}
			for c, old := range [][]string{tt.col0, tt.col1} {
				col := fmt.Sprintf("col-%d", c)
				for i := range 10 + len(old) {
					r := rollout.Replica{Name: fmt.Sprintf("%s-%d", col, i), Column: col, Index: i, Revision: "3-c", State: ready}
					if i >= 10 {
						r.Revision = old[i-10]
					}
					rev[r.Name] = col + "/" + r.Revision
					rs = append(rs, r)
				}
			}
			ratio, one := intstr.FromString(tt.ratio), intstr.FromInt32(1)
			s := rollout.Strategy{
				Mode: rollout.Group, TargetRevision: "3-c", Replicas: tt.n, Columns: []string{"col-0", "col-1"},
				MaxUnavailable: &one, MaxSurge: &one, LatestRatio: &ratio, History: []string{"1-a", "2-b", "3-c"},
			}
			step, err := rollout.Plan(rs, s)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, name := range deleted(step) {
				got = append(got, rev[name])
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.deletes) {
				t.Errorf("deleted %v, want %v", got, tt.deletes)
			}
			if len(step.Create) != 0 || len(step.Update) != 0 {
				t.Errorf("creates %v, updates %v; want none: the old rows are whole once the deletes are done", created(step), updated(step))
			}
		})
	}
}
