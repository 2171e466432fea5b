package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// benchScenario is a rollout in the middle: about 40% of replicas (rows) at the
// target, 5% not ready, in a shuffled order with priorities and deletion costs,
// under 10% maxUnavailable and maxSurge.
func benchScenario(mode rollout.Mode, rows, columns int) ([]rollout.Replica, rollout.Strategy) {
	rng := rand.New(rand.NewPCG(1, uint64(rows*131+columns)))
	ten := intstr.FromString("10%")
	s := rollout.Strategy{Mode: mode, TargetRevision: "2-b", Replicas: rows,
		MaxUnavailable: &ten, MaxSurge: &ten}
	state := func() rollout.State {
		if rng.IntN(20) == 0 {
			return rollout.State{Healthy: true}
		}
		return rollout.State{Ready: true, Available: true, Healthy: true}
	}
	rev := func(col int) string {
		// Group mode: columns progressed unevenly (30%..48% at the target).
		if rng.IntN(100) < 30+2*col {
			return "2-b"
		}
		return "1-a"
	}
	var rs []rollout.Replica
	switch mode {
	case rollout.Rolling:
		for i := range rows {
			rs = append(rs, rollout.Replica{Name: fmt.Sprintf("web-%d", i), Revision: rev(5), State: state(),
				Priority: int32(rng.IntN(3)), DeletionCost: int64(rng.IntN(5))})
		}
	case rollout.Gang:
		for i := range rows {
			r := rollout.Replica{Name: fmt.Sprintf("gang-%d", i), Revision: rev(5), Priority: int32(rng.IntN(3))}
			for j := range columns {
				r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("gang-%d-%d", i, j), State: state()})
			}
			rs = append(rs, r)
		}
	case rollout.Group:
		for j := range columns {
			col := fmt.Sprintf("col-%d", j)
			for i := range rows {
				rs = append(rs, rollout.Replica{Name: fmt.Sprintf("%s-row-%d", col, i), Column: col, Revision: rev(j),
					State: state(), DeletionCost: int64(rng.IntN(5))})
			}
		}
	}
	rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	return rs, s
}

func BenchmarkPlan(b *testing.B) {
	cases := []struct {
		name          string
		mode          rollout.Mode
		rows, columns int
	}{
		{"mode=rolling,replicas=10000", rollout.Rolling, 10000, 1},
		{"mode=gang,rows=1000,columns=8", rollout.Gang, 1000, 8},
		{"mode=group,rows=1000,columns=10", rollout.Group, 1000, 10},
		{"mode=rolling,replicas=100000", rollout.Rolling, 100000, 1},
		{"mode=gang,rows=10000,columns=8", rollout.Gang, 10000, 8},
		{"mode=group,rows=10000,columns=10", rollout.Group, 10000, 10},
	}
	for _, c := range cases {
		rs, s := benchScenario(c.mode, c.rows, c.columns)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				step, err := rollout.Plan(rs, s)
				if err != nil || step.Empty() {
					b.Fatalf("plan: %v, empty %v", err, step.Empty())
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkSortFloor is the floor Plan is measured against: sorting the replicas
// (pointers, as Plan does not copy them) by name with a plain string comparison,
// from the same shuffled order every iteration.
func BenchmarkSortFloor(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		rs, _ := benchScenario(rollout.Rolling, n, 1)
		ptrs := make([]*rollout.Replica, len(rs))
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				for i := range rs {
					ptrs[i] = &rs[i]
				}
				slices.SortFunc(ptrs, func(x, y *rollout.Replica) int { return strings.Compare(x.Name, y.Name) })
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the process CPU time per op since start as cpu-ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
