package rollout_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
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

var planCases = []struct {
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

func BenchmarkPlan(b *testing.B)     { benchPlan(b, false) }
func BenchmarkPlanCold(b *testing.B) { benchPlan(b, true) }

func benchPlan(b *testing.B, cold bool) {
	for _, c := range planCases {
		rs, s := benchScenario(c.mode, c.rows, c.columns)
		b.Run(c.name, func(b *testing.B) {
			measure(b, cold, func() {
				step, err := rollout.Plan(rs, s)
				if err != nil || step.Empty() {
					b.Fatalf("plan: %v, empty %v", err, step.Empty())
				}
			})
		})
	}
}

// BenchmarkSortFloor is the floor Plan is measured against: sorting the replicas
// (pointers, as Plan does not copy them) by name with a plain string comparison,
// from the same shuffled order every iteration.
func BenchmarkSortFloor(b *testing.B)     { benchSortFloor(b, false) }
func BenchmarkSortFloorCold(b *testing.B) { benchSortFloor(b, true) }

func benchSortFloor(b *testing.B, cold bool) {
	for _, n := range []int{10000, 100000} {
		rs, _ := benchScenario(rollout.Rolling, n, 1)
		ptrs := make([]*rollout.Replica, len(rs))
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			measure(b, cold, func() {
				for i := range rs {
					ptrs[i] = &rs[i]
				}
				slices.SortFunc(ptrs, func(x, y *rollout.Replica) int { return strings.Compare(x.Name, y.Name) })
			})
		})
	}
}

// measure runs op in a benchmark loop and reports, besides wall time, the process
// CPU time per op as cpu-ns/op: on a shared machine wall time mostly measures
// waiting for a core. Cold runs evict the caches before every op (outside the
// timer and the CPU count), as a controller's reconcile finds them: the warm
// loop otherwise keeps a small input in L2 and a large one not, which measures
// cache sizes rather than the algorithm.
func measure(b *testing.B, cold bool, op func()) {
	b.ReportAllocs()
	var cpu time.Duration
	start := processCPU()
	for b.Loop() {
		if cold {
			b.StopTimer()
			evictCaches()
			start = processCPU()
			b.StartTimer()
		}
		op()
		if cold {
			b.StopTimer()
			cpu += processCPU() - start
			b.StartTimer()
		}
	}
	if !cold {
		cpu = processCPU() - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

var evictBuf []byte

// evictCaches writes one byte per cache line of 64 MiB, twice the machine's L3.
func evictCaches() {
	if evictBuf == nil {
		evictBuf = make([]byte, 64<<20)
	}
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// TestPlanLargeShuffled runs the benchmark scenarios at a few thousand
// replicas, and checks that the same replicas in
// another order give the same Step, that the input is not modified, and that
// rollouttest.Check accepts the step.
func TestPlanLargeShuffled(t *testing.T) {
	for _, c := range []struct {
		name          string
		mode          rollout.Mode
		rows, columns int
	}{
		{"rolling", rollout.Rolling, 3000, 1},
		{"gang", rollout.Gang, 700, 4},
		{"group", rollout.Group, 600, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, s := benchScenario(c.mode, c.rows, c.columns)
			orig := slices.Clone(rs)
			step, err := rollout.Plan(rs, s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(orig, rs, strictTime); diff != "" {
				t.Fatalf("Plan modified its input (-before +after):\n%s", diff)
			}
			if err := rollouttest.Check(rs, s, step); err != nil {
				t.Fatal(err)
			}
			other := slices.Clone(rs)
			rand.New(rand.NewPCG(7, 7)).Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })
			again, err := rollout.Plan(other, s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(step, again); diff != "" {
				t.Fatalf("shuffled input gives a different step (-want +got):\n%s", diff)
			}
			if len(step.Update) == 0 || len(step.Waiting) == 0 {
				t.Fatalf("scenario plans %d updates and %d waits, want both", len(step.Update), len(step.Waiting))
			}
		})
	}
}
