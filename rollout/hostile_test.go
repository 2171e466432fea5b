package rollout_test

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// TestPlanManyRevisionsAndColumnsAllocatesLinearly plans a hostile group-mode
// input: thousands of columns, each with one replica of its own revision. Plan
// must allocate in proportion to the input (replicas, columns, revisions), not to
// revisions times columns, which would be tens of millions of counters here.
func TestPlanManyRevisionsAndColumnsAllocatesLinearly(t *testing.T) {
	const n = 3000
	zero := intstr.FromString("0%")
	for _, tt := range []struct {
		name  string
		ratio *intstr.IntOrString
	}{
		{"every replica to the target", nil},
		{"every replica to the newest old revision", &zero},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := rollout.Strategy{Mode: rollout.Group, TargetRevision: fmt.Sprintf("%d-t", n+1), Replicas: 1,
				LatestRatio: tt.ratio}
			var rs []rollout.Replica
			for i := range n {
				col := fmt.Sprintf("c%d", i)
				s.Columns = append(s.Columns, col)
				rs = append(rs, rollout.Replica{Name: col + "-0", Column: col, Revision: fmt.Sprintf("%d-r", i+1),
					State: rollout.State{Ready: true, Available: true, Healthy: true}})
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			step, err := rollout.Plan(rs, s)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if len(step.Rows) != n {
				t.Fatalf("%d revisions in Rows, want %d", len(step.Rows), n)
			}
			// 4 KiB per replica leaves room for the pools, the maps and the
			// step (Plan takes about 1.4 KiB); counters per (column, revision)
			// pair would take over 100 MiB.
			const limit = n << 12
			if got := after.TotalAlloc - before.TotalAlloc; got > limit {
				t.Fatalf("Plan allocated %d bytes for %d replicas, columns and revisions, want at most %d", got, n, limit)
			}
		})
	}
}
