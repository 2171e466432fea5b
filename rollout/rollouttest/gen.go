package rollouttest

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
)

// Revisions are the revisions the generators use, oldest first. Their generation
// prefixes order them without a History.
var Revisions = []string{"1-a", "2-b", "3-c"}

// Scenario is a generated rollout: a strategy and the replicas it starts from.
type Scenario struct {
	// Strategy is the strategy to plan with.
	Strategy rollout.Strategy
	// Replicas are the replicas the rollout starts from.
	Replicas []rollout.Replica
	// GangSize is the number of members per gang (gang mode): the strategy's
	// Columns when it names them.
	GangSize int
}

// Limits bounds generated scenarios.
type Limits struct {
	// MaxReplicas bounds Strategy.Replicas (rows per column in group mode).
	MaxReplicas int
	// MaxColumns bounds columns (group mode) and gang size (gang mode).
	MaxColumns int
	// Data makes [ScenarioOf] release data too: replicas serve one of
	// [DataRevisions] (or none), the strategy sets TargetDataRevision, and its
	// MaxUnavailable is at least 1 (data moves in place).
	Data bool
}

// DataRevisions are the data revisions the generators use with Limits.Data.
var DataRevisions = []string{"d1", "d2"}

// DefaultLimits keep generated scenarios small enough for 1000 cases per property.
var DefaultLimits = Limits{MaxReplicas: 12, MaxColumns: 3}

// Budgets generates an int-or-percent budget: an integer 0..max or a percent
// 0..100 in steps of 5.
func Budgets(maxInt int) *rapid.Generator[intstr.IntOrString] {
	return rapid.Custom(func(t *rapid.T) intstr.IntOrString {
		if rapid.Bool().Draw(t, "percent") {
			return intstr.FromString(fmt.Sprintf("%d%%", 5*rapid.IntRange(0, 20).Draw(t, "pct")))
		}
		return intstr.FromInt32(int32(rapid.IntRange(0, maxInt).Draw(t, "int")))
	})
}

// StrategyOf generates a valid strategy for mode with Replicas in 1..max, a budget
// that is not 0/0, a LatestRatio (nil half the time) and any VersionOrder, with
// [Revisions] as History. The target is the newest of [Revisions].
func StrategyOf(mode rollout.Mode, maxReplicas int) *rapid.Generator[rollout.Strategy] {
	return rapid.Custom(func(t *rapid.T) rollout.Strategy {
		s := rollout.Strategy{
			Mode:           mode,
			TargetRevision: Revisions[len(Revisions)-1],
			Replicas:       rapid.IntRange(1, maxReplicas).Draw(t, "replicas"),
			VersionOrder:   rapid.SampledFrom([]rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst}).Draw(t, "versionOrder"),
			History:        slices.Clone(Revisions),
		}
		u := Budgets(3).Draw(t, "maxUnavailable")
		sg := Budgets(3).Draw(t, "maxSurge")
		if u.String() == "0" || u.String() == "0%" {
			if sg.String() == "0" || sg.String() == "0%" {
				sg = intstr.FromInt32(1)
			}
		}
		s.MaxUnavailable, s.MaxSurge = &u, &sg
		if rapid.Bool().Draw(t, "partial") {
			r := intstr.FromString(fmt.Sprintf("%d%%", 10*rapid.IntRange(1, 10).Draw(t, "latestPct")))
			s.LatestRatio = &r
		}
		return s
	})
}

// States generates a replica state: mostly available, sometimes not ready, not
// yet available, unhealthy or failed.
func States() *rapid.Generator[rollout.State] {
	return rapid.Custom(func(t *rapid.T) rollout.State {
		switch rapid.IntRange(0, 9).Draw(t, "health") {
		case 0:
			return rollout.State{Failed: true}
		case 1:
			return rollout.State{Healthy: true}
		case 2:
			return rollout.State{Ready: true, Healthy: true}
		case 3:
			return rollout.State{Ready: true}
		}
		return rollout.State{Ready: true, Available: true, Healthy: true}
	})
}

// ScenarioOf generates a scenario for mode within limits: a strategy and replicas
// that run any of [Revisions] (mostly older ones), in any state, sometimes more or
// fewer than desired, with priorities and deletion costs, and with data
// revisions when lim.Data is set. Indexes are mostly each pool's positions
// (0, 1, ...), sometimes repeated or with gaps. In gang mode the strategy's
// Columns are "0" to "GangSize-1", each gang has a member in each, named
// <gang>-<column>; about one member in ten is missing (no name; its
// UnreadySince is zero: when it went missing is unknown, so recovery timeouts
// never count it; set it to test them), and about one in ten of the others is
// terminating (its pod is being deleted).
func ScenarioOf(mode rollout.Mode, lim Limits) *rapid.Generator[Scenario] {
	return rapid.Custom(func(t *rapid.T) Scenario {
		s := StrategyOf(mode, lim.MaxReplicas).Draw(t, "strategy")
		if lim.Data {
			s.TargetDataRevision = rapid.SampledFrom(DataRevisions).Draw(t, "targetData")
			if b, err := rollout.ResolveBudget(s.MaxUnavailable, s.MaxSurge, s.Replicas); err == nil && b.MaxUnavailable == 0 {
				one := intstr.FromInt32(1)
				s.MaxUnavailable = &one
			}
		}
		sc := Scenario{Strategy: s, GangSize: 1}
		cols := []string{""}
		if mode == rollout.Group {
			k := rapid.IntRange(1, lim.MaxColumns).Draw(t, "columns")
			cols = cols[:0]
			for c := range k {
				cols = append(cols, fmt.Sprintf("col-%d", c))
			}
			sc.Strategy.Columns = slices.Clone(cols)
		}
		if mode == rollout.Gang {
			sc.GangSize = rapid.IntRange(1, lim.MaxColumns).Draw(t, "gangSize")
			sc.Strategy.Columns = gangColumns(sc.GangSize)
		}
		id := 0
		for _, c := range cols {
			count := rapid.IntRange(max(0, s.Replicas-2), s.Replicas+2).Draw(t, "count")
			for i := range count {
				r := rollout.Replica{
					Name:         fmt.Sprintf("r-%d", id),
					Column:       c,
					Index:        i,
					Revision:     Revisions[rapid.IntRange(0, len(Revisions)-1).Draw(t, "rev")],
					Priority:     int32(rapid.IntRange(0, 2).Draw(t, "priority")),
					DeletionCost: int64(rapid.IntRange(0, 2).Draw(t, "cost")),
				}
				id++
				if rapid.IntRange(0, 9).Draw(t, "otherIndex") == 0 {
					r.Index = rapid.IntRange(0, count+1).Draw(t, "index")
				}
				if lim.Data {
					r.DataRevision = rapid.SampledFrom(append([]string{""}, DataRevisions...)).Draw(t, "data")
				}
				if mode == rollout.Gang {
					for _, col := range sc.Strategy.Columns {
						mb := rollout.Member{Name: memberName(r.Name, col), Column: col, State: States().Draw(t, "member"),
							Missing: rapid.IntRange(0, 9).Draw(t, "missing") == 0}
						if mb.Missing {
							mb.Name, mb.State = "", rollout.State{}
						} else {
							mb.State.Terminating = rapid.IntRange(0, 9).Draw(t, "terminating") == 0
						}
						r.Members = append(r.Members, mb)
					}
				} else {
					r.State = States().Draw(t, "state")
				}
				sc.Replicas = append(sc.Replicas, r)
			}
		}
		return sc
	})
}

// Clone deep-copies replicas, members included.
func Clone(replicas []rollout.Replica) []rollout.Replica {
	out := slices.Clone(replicas)
	for i := range out {
		out[i].Members = slices.Clone(out[i].Members)
	}
	return out
}

// Shuffled returns a copy of replicas in an order drawn by t.
func Shuffled(t *rapid.T, replicas []rollout.Replica) []rollout.Replica {
	out := Clone(replicas)
	for i := len(out) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, "swap")
		out[i], out[j] = out[j], out[i]
	}
	return out
}
