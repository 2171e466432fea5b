package rollouttest_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

func TestScenarioString(t *testing.T) {
	one, zero, half := ptr(intstr.FromInt32(1)), ptr(intstr.FromInt32(0)), ptr(intstr.FromString("50%"))
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		sc   rollouttest.Scenario
		want string
	}{
		{"rolling, each state once", rollouttest.Scenario{
			Strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			Replicas: []rollout.Replica{
				{Name: "r-0", Revision: "1-a", State: good},
				{Name: "r-1", Revision: "1-a", State: rollout.State{Ready: true, Healthy: true}, Priority: 1},
				{Name: "r-2", Revision: "2-b", State: rollout.State{Healthy: true}, DeletionCost: -2},
				{Name: "r-3", Revision: "2-b", State: rollout.State{Failed: true, Lost: true}},
				{Name: "r-4", Revision: "2-b", State: rollout.State{Ready: true}},
				{Name: "r-5", Revision: "2-b", State: rollout.State{Terminating: true}},
			}},
			`Rolling to 2-b, 3 replicas, maxUnavailable 1, maxSurge 0, order LessFirst
  r-0 1-a available
  r-1 1-a ready, priority 1
  r-2 2-b not ready, cost -2
  r-3 2-b failed, lost
  r-4 2-b ready but unhealthy
  r-5 2-b not ready, unhealthy, terminating`},
		{"gang with data, default budgets, a missing member and a partial one", rollouttest.Scenario{
			Strategy: rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", TargetDataRevision: "d2", Replicas: 1,
				LatestRatio: half, VersionOrder: rollout.OldFirst, History: []string{"1-a", "2-b"}},
			GangSize: 2,
			Replicas: []rollout.Replica{{Name: "g", Index: 2, Revision: "1-a", DataRevision: "d1", Members: []rollout.Member{
				{Name: "g-0", Column: "0", Revision: "2-b", State: good}, {Column: "1", Missing: true}}}},
		},
			`Gang to 2-b and data d2, 1 gang of 2 members, maxUnavailable 25% (default), maxSurge 25% (default), latestRatio 50%, order OldFirst, history 1-a 2-b
  g 1-a data d1 index 2 [g-0 2-b available; (1) missing]`},
		{"group with columns, recovery and times", rollouttest.Scenario{
			Strategy: rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", Replicas: 1, Columns: []string{"a", "b"},
				MaxUnavailable: one, MaxSurge: one},
			Replicas: []rollout.Replica{
				{Name: "a-0", Revision: "1-a", Column: "a", State: rollout.State{Failed: true, UnreadySince: at}, SwappedAt: at},
				{Name: "a-1", Revision: "1-a", Column: "a", ReplacementFor: "a-0",
					State: rollout.State{Ready: true, Healthy: true, ReadySince: at}},
			}},
			`Group to 2-b, 1 row x columns a b, maxUnavailable 1, maxSurge 1, order LessFirst
  a-0 1-a column a failed, unready since 2026-01-01T12:00:00Z, swapped out at 2026-01-01T12:00:00Z
  a-1 1-a column a ready, ready since 2026-01-01T12:00:00Z, replacing a-0`},
		{"the zero scenario", rollouttest.Scenario{},
			`Rolling to "", 0 replicas, maxUnavailable 25% (default), maxSurge 25% (default), order LessFirst`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sc.String(); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
