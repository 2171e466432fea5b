package rollout_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// withData sets the data revisions of rs in order.
func withData(rs []rollout.Replica, data ...string) []rollout.Replica {
	for i := range rs {
		rs[i].DataRevision = data[i]
	}
	return rs
}

func dataUpdates(step rollout.Step) string {
	var parts []string
	for _, u := range step.Update {
		parts = append(parts, fmt.Sprintf("%s:%s->%s/%s->%s", u.Replica, u.From, u.To, u.DataFrom, u.DataTo))
	}
	return strings.Join(parts, " ")
}

func TestPlanReleasesPodsAndDataUnderOneBudget(t *testing.T) {
	one, zero := ptr(intstr.FromInt32(1)), ptr(intstr.FromInt32(0))
	rolling := rollout.Strategy{TargetRevision: "2-b", TargetDataRevision: "d2", Replicas: 3, MaxUnavailable: one, MaxSurge: zero}
	tests := []struct {
		name     string
		replicas []rollout.Replica
		strategy rollout.Strategy
		want     string // updates as replica:pod from->to/data from->to
		complete bool
	}{
		{
			// Two separate plans (one for pods, one for data) would each take one
			// replica down: two of three, below the floor of 2.
			name:     "a pod change and a data change on different replicas move one at a time",
			replicas: withData(withRevisions("", 0, "1-a", "2-b", "2-b"), "d2", "d1", "d2"),
			strategy: rolling,
			want:     "r-0:1-a->2-b/d2->d2",
		},
		{
			name:     "a replica under both changes is updated once, its pod and data together",
			replicas: withData(withRevisions("", 0, "1-a", "2-b", "2-b"), "d1", "d2", "d2"),
			strategy: rolling,
			want:     "r-0:1-a->2-b/d1->d2",
		},
		{
			name:     "among pod candidates the one whose data is stale goes first",
			replicas: withData(withRevisions("", 0, "1-a", "1-a", "1-a"), "d2", "d1", "d2"),
			strategy: rolling,
			want:     "r-1:1-a->2-b/d1->d2",
		},
		{
			name:     "data alone moves in place, at most maxUnavailable at a time",
			replicas: withData(withRevisions("", 0, "2-b", "2-b", "2-b"), "d1", "d1", "d1"),
			strategy: rolling,
			want:     "r-0:2-b->2-b/d1->d2",
		},
		{
			name:     "with the pod release done a data rollback moves data back",
			replicas: withData(withRevisions("", 0, "2-b", "2-b", "2-b"), "d2", "d2", "d2"),
			strategy: rollout.Strategy{TargetRevision: "2-b", TargetDataRevision: "d1", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			want:     "r-0:2-b->2-b/d2->d1",
		},
		{
			// n=3, floor 2, two available: only the unavailable replica can move.
			name: "an unavailable replica takes its new data at no cost while available ones keep the floor",
			replicas: withData(append(withRevisions("", 0, "2-b", "2-b"),
				rollout.Replica{Name: "r-2", Revision: "2-b", State: rollout.State{Healthy: true}}), "d1", "d1", "d1"),
			strategy: rolling,
			want:     "r-2:2-b->2-b/d1->d2",
		},
		{
			name:     "a replica without data loads the target data",
			replicas: withData(withRevisions("", 0, "2-b", "2-b", "2-b"), "d2", "", "d2"),
			strategy: rolling,
			want:     "r-1:2-b->2-b/->d2",
		},
		{
			name:     "pods and data both at their targets and available is complete",
			replicas: withData(withRevisions("", 0, "2-b", "2-b", "2-b"), "d2", "d2", "d2"),
			strategy: rolling,
			want:     "",
			complete: true,
		},
		{
			name: "group mode keeps each column's floor across pod and data changes",
			replicas: withData(append(withRevisions("a", 0, "1-a", "2-b"), withRevisions("b", 2, "2-b", "2-b")...),
				"d2", "d1", "d1", "d1"),
			strategy: rollout.Strategy{Mode: rollout.Group, TargetRevision: "2-b", TargetDataRevision: "d2", Replicas: 2, MaxUnavailable: one, MaxSurge: zero},
			want:     "r-0:1-a->2-b/d2->d2 r-2:2-b->2-b/d1->d2",
		},
		{
			name:     "gang mode updates a gang once for both",
			replicas: withData(gangsOf(withRevisions("", 0, "1-a", "2-b")), "d1", "d1"),
			strategy: rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", TargetDataRevision: "d2", Replicas: 2, MaxUnavailable: one, MaxSurge: zero},
			want:     "r-0:1-a->2-b/d1->d2",
		},
		{
			name:     "without TargetDataRevision data is left alone and updates carry no data",
			replicas: withData(withRevisions("", 0, "1-a", "2-b", "2-b"), "d1", "d1", "d1"),
			strategy: rollout.Strategy{TargetRevision: "2-b", Replicas: 3, MaxUnavailable: one, MaxSurge: zero},
			want:     "r-0:1-a->2-b/->",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, err := rollout.Plan(tt.replicas, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if got := dataUpdates(step); got != tt.want {
				t.Fatalf("updates %q, want %q", got, tt.want)
			}
			if step.Complete != tt.complete {
				t.Fatalf("complete %v, want %v", step.Complete, tt.complete)
			}
			if err := rollouttest.Check(tt.replicas, tt.strategy, step); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPlanRejectsADataReleaseWithoutMaxUnavailable(t *testing.T) {
	s := rollout.Strategy{TargetRevision: "2-b", TargetDataRevision: "d2", Replicas: 3,
		MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))}
	_, err := rollout.Plan(withRevisions("", 0, "2-b", "2-b", "2-b"), s)
	if err == nil || !strings.Contains(err.Error(), "strategy: maxUnavailable") || !strings.Contains(err.Error(), "targetDataRevision") {
		t.Fatalf("got %v, want an error naming maxUnavailable and targetDataRevision", err)
	}
}

// TestPodAndDataReleasesShareOneBudget runs rollouts that change pods and data
// at once, with failures and changes of course (new pod target, ratio or data
// target), and checks every step independently of rollouttest.Check: each
// replica is acted on at most once, and per pool the replicas that were
// available and are neither updated (for pod, data or both) nor deleted number
// at least min(available before, n - maxUnavailable).
func TestPodAndDataReleasesShareOneBudget(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				lim := rollouttest.DefaultLimits
				lim.Data = true
				sc := rollouttest.ScenarioOf(mode, lim).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.Faults{
					UpdateFails: rapid.IntRange(0, 30).Draw(t, "updateFails"),
					Unready:     rapid.IntRange(0, 20).Draw(t, "unready"),
					Recovers:    rapid.IntRange(0, 50).Draw(t, "recovers"),
					Slow:        rapid.IntRange(0, 60).Draw(t, "slow"),
				})
				for i := range 8 {
					switch rapid.IntRange(0, 9).Draw(t, "change") {
					case 0:
						sim.Strategy = changeCourse(t, sim.Strategy)
					case 1:
						sim.Strategy.TargetDataRevision = rapid.SampledFrom(rollouttest.DataRevisions).Draw(t, "data")
					}
					before := rollouttest.Clone(sim.Replicas)
					step, err := sim.Reconcile()
					if err != nil {
						t.Fatalf("reconcile %d: %v", i, err)
					}
					checkOneBudget(t, before, sim.Strategy, step)
					sim.Settle(t)
				}
			})
		})
	}
}

func checkOneBudget(t *rapid.T, before []rollout.Replica, s rollout.Strategy, step rollout.Step) {
	b, err := rollout.ResolveBudget(s.MaxUnavailable, s.MaxSurge, s.Replicas)
	if err != nil {
		t.Fatal(err)
	}
	down := map[string]int{}
	for _, u := range step.Update {
		down[u.Replica]++
		if u.DataTo != s.TargetDataRevision {
			t.Fatalf("update of %s leaves data at %q, target %q", u.Replica, u.DataTo, s.TargetDataRevision)
		}
	}
	for _, d := range step.Delete {
		down[d.Replica]++
	}
	availBefore, availAfter := map[string]int{}, map[string]int{}
	for _, r := range rollouttest.Counted(before) {
		if down[r.Name] > 1 {
			t.Fatalf("replica %s acted on %d times in one step", r.Name, down[r.Name])
		}
		col := ""
		if s.Mode == rollout.Group {
			col = r.Column
		}
		if rollouttest.Available(r) {
			availBefore[col]++
			if down[r.Name] == 0 {
				availAfter[col]++
			}
		}
	}
	for col, a := range availBefore {
		if floor := min(a, s.Replicas-b.MaxUnavailable); availAfter[col] < floor {
			t.Fatalf("column %q: %d available after pod and data changes, floor %d", col, availAfter[col], floor)
		}
	}
}

func TestPodAndDataReleasesCompleteWithinBound(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				lim := rollouttest.DefaultLimits
				lim.Data = true
				sc := rollouttest.ScenarioOf(mode, lim).Draw(t, "scenario")
				sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
				bound := rollouttest.ProgressBound(sc.Strategy)
				if _, err := sim.Run(bound); err != nil {
					t.Fatalf("bound %d: %v", bound, err)
				}
				if err := rollouttest.Converged(sim.Replicas, sim.Strategy); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestPlanWithDataIsDeterministicAndDoesNotMutate(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				lim := rollouttest.DefaultLimits
				lim.Data = true
				sc := rollouttest.ScenarioOf(mode, lim).Draw(t, "scenario")
				before := rollouttest.Clone(sc.Replicas)
				want, err1 := rollout.Plan(sc.Replicas, sc.Strategy)
				got, err2 := rollout.Plan(rollouttest.Shuffled(t, sc.Replicas), sc.Strategy)
				if fmt.Sprint(err1) != fmt.Sprint(err2) {
					t.Fatalf("shuffled input gives another error: %v vs %v", err1, err2)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("shuffled input gives another step (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(before, sc.Replicas, strictTime); diff != "" {
					t.Fatalf("Plan modified its input (-before +after):\n%s", diff)
				}
			})
		})
	}
}
