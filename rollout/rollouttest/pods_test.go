package rollouttest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// labelsFor are the labels a controller of mode would use: kthena's for gangs
// (the role as a member's column) and groups (one pod per replica, so no gang
// label in group mode), the default revision label for rolling; an index
// label; a data label when the scenario serves data.
func labelsFor(mode rollout.Mode, data bool) rollout.PodLabels {
	l := rollout.DefaultLabels
	switch mode {
	case rollout.Gang:
		l = rollout.KthenaLabels
	case rollout.Group:
		l = rollout.PodLabels{Revision: rollout.KthenaLabels.Revision, Column: rollout.KthenaLabels.Column}
	}
	l.Index = "serving.example/index"
	if data {
		l.DataRevision = "serving.example/data"
	}
	return l
}

// flags is a state without its times: Pods picks ready and unready times that
// FromPods reads back in its own way (an unhealthy ready pod is unready since it
// became ready).
func flags(s rollout.State) rollout.State {
	s.ReadySince, s.UnreadySince = time.Time{}, time.Time{}
	return s
}

// roundTripped is what FromPods should read back from a scenario's pods: every
// replica but gangs without a pod, in a map by name; states without times;
// members that are not missing with their revision filled in, missing ones
// with their column only (members are in column order already).
func roundTripped(rs []rollout.Replica) map[string]rollout.Replica {
	out := map[string]rollout.Replica{}
	for _, r := range rollouttest.Clone(rs) {
		r.State = flags(r.State)
		if len(r.Members) > 0 {
			present := 0
			for i := range r.Members {
				m := &r.Members[i]
				if m.Missing {
					*m = rollout.Member{Column: m.Column, Missing: true}
					continue
				}
				present++
				if m.Revision == "" {
					m.Revision = r.Revision
				}
				m.State = flags(m.State)
			}
			if present == 0 {
				continue
			}
		}
		out[r.Name] = r
	}
	return out
}

// TestScenarioPodsRoundTrip: every generated scenario, in every mode, with and
// without data, becomes pods that FromPods (with the same options, in any pod
// order) reads back as the scenario's replicas.
func TestScenarioPodsRoundTrip(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom([]rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}).Draw(t, "mode")
		lim := rollouttest.DefaultLimits
		lim.Data = rapid.Bool().Draw(t, "data")
		sc := rollouttest.ScenarioOf(mode, lim).Draw(t, "scenario")
		// The generator draws neither lost nor terminating pods; add some.
		extra := func(s *rollout.State) {
			switch rapid.IntRange(0, 9).Draw(t, "extra") {
			case 0:
				s.Terminating = true
			case 1:
				s.Lost, s.Failed = true, true
			}
		}
		for i := range sc.Replicas {
			r := &sc.Replicas[i]
			if len(r.Members) == 0 {
				extra(&r.State)
			}
			switch rapid.IntRange(0, 9).Draw(t, "recovery") {
			case 0:
				r.ReplacementFor = "r-99"
			case 1:
				r.SwappedAt = now.Add(-time.Duration(rapid.IntRange(1, 1e9).Draw(t, "swappedAgo")))
			}
			for j := range r.Members {
				extra(&r.Members[j].State)
			}
		}
		before := rollouttest.Clone(sc.Replicas)
		opts := rollout.PodOptions{Labels: labelsFor(mode, lim.Data), Now: now,
			MinReadySeconds: int32(rapid.IntRange(1, 600).Draw(t, "minReadySeconds"))}
		if mode == rollout.Gang {
			opts.Columns = sc.Strategy.Columns
		}
		pods, err := sc.Pods(opts)
		if err != nil {
			t.Fatalf("%v\n%s", err, sc)
		}
		if diff := cmp.Diff(before, sc.Replicas, cmp.Comparer(func(a, b time.Time) bool { return a == b })); diff != "" {
			t.Fatalf("Pods modified the scenario (-before +after):\n%s", diff)
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != rollouttest.PodImage || p.Status.Conditions[0].Type != corev1.PodReady {
				t.Fatalf("pod %s: no container or no ready condition", p.Name)
			}
		}
		for i := len(pods) - 1; i > 0; i-- {
			j := rapid.IntRange(0, i).Draw(t, "swap")
			pods[i], pods[j] = pods[j], pods[i]
		}
		got, err := rollout.FromPods(pods, opts)
		if err != nil {
			t.Fatalf("FromPods: %v\n%s", err, sc)
		}
		gotByName := roundTripped(got)
		if len(gotByName) != len(got) {
			t.Fatalf("FromPods returned %d replicas under %d names", len(got), len(gotByName))
		}
		if diff := cmp.Diff(roundTripped(sc.Replicas), gotByName); diff != "" {
			t.Fatalf("round trip (-scenario +FromPods):\n%s\n%s", diff, sc)
		}
	})
}

// TestScenarioPodsRejectsWhatPodsCannotCarry: each row holds one replica that
// no pod can express under its options; the error names the replica and field.
func TestScenarioPodsRejectsWhatPodsCannotCarry(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := rollout.State{Ready: true, Healthy: true}
	gang := func(members ...rollout.Member) rollout.Replica {
		return rollout.Replica{Name: "g", Revision: "1-a", Members: members}
	}
	withGang := rollout.PodOptions{Labels: labelsFor(rollout.Gang, false), Now: now, MinReadySeconds: 10}
	tests := []struct {
		name    string
		replica rollout.Replica
		opts    rollout.PodOptions
		want    string
	}{
		{"a replacement without a replacement-for annotation", rollout.Replica{Name: "r", Revision: "1-a", ReplacementFor: "x", State: good},
			rollout.PodOptions{Annotations: rollout.PodAnnotations{SwappedAt: "swapped"}}, "replica r: replacementFor"},
		{"a swapped-out replica without a swapped-at annotation", rollout.Replica{Name: "r", Revision: "1-a", SwappedAt: now, State: good},
			rollout.PodOptions{Annotations: rollout.PodAnnotations{ReplacementFor: "for"}}, "replica r: swappedAt"},
		{"an index without an index label", rollout.Replica{Name: "r", Revision: "1-a", Index: 3, State: good},
			rollout.PodOptions{}, "replica r: index: 3, but options name no index label"},
		{"a negative index", rollout.Replica{Name: "r", Revision: "1-a", Index: -1, State: good},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: "rev", Index: "index"}}, "replica r: index: -1"},
		{"member columns without a column label", gang(rollout.Member{Name: "g-0", Column: "0", State: good}),
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: "rev", Gang: "gang"}}, "replica g: members: some have a column"},
		{"a deletion cost beyond int32", rollout.Replica{Name: "r", Revision: "1-a", DeletionCost: 1 << 40, State: good},
			rollout.PodOptions{}, "replica r: deletionCost"},
		{"a data revision without a data label", rollout.Replica{Name: "r", Revision: "1-a", DataRevision: "d1", State: good},
			rollout.PodOptions{}, "replica r: dataRevision"},
		{"a column without a column label", rollout.Replica{Name: "r", Revision: "1-a", Column: "c", State: good},
			rollout.PodOptions{}, "replica r: column"},
		{"a gang without a gang label", gang(rollout.Member{Name: "g-0", State: good}),
			rollout.PodOptions{}, "replica g: members"},
		{"a single pod with a gang label", rollout.Replica{Name: "r", Revision: "1-a", State: good},
			withGang, "replica r: members: none"},
		{"a gang's own state", func() rollout.Replica {
			g := gang(rollout.Member{Name: "g-0", State: good})
			g.State.Terminating = true
			return g
		}(), withGang, "replica g: state: a gang's own state"},
		{"a gang member without a name", gang(rollout.Member{State: good}), withGang, "member 0: a pod needs a name"},
		{"available but not ready", rollout.Replica{Name: "r", Revision: "1-a", State: rollout.State{Available: true, Healthy: true}},
			rollout.PodOptions{}, "replica r: pod r: state: available but not ready"},
		{"ready, not available, without minReadySeconds", rollout.Replica{Name: "r", Revision: "1-a", State: ready},
			rollout.PodOptions{}, "available is false"},
		// Ready for 5s with minReadySeconds 10: not available yet.
		{"available, but ready for less than minReadySeconds",
			rollout.Replica{Name: "r", Revision: "1-a", State: rollout.State{Ready: true, Available: true, Healthy: true,
				ReadySince: now.Add(-5 * time.Second)}},
			rollout.PodOptions{Now: now, MinReadySeconds: 10}, "available is true"},
		{"minReadySeconds without now", rollout.Replica{Name: "r", Revision: "1-a", State: good},
			rollout.PodOptions{MinReadySeconds: 10}, "options: now"},
		{"an empty revision label", rollout.Replica{Name: "r", Revision: "1-a", State: good},
			rollout.PodOptions{Labels: rollout.PodLabels{Gang: "g"}}, "options: labels.revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := rollouttest.Scenario{Replicas: []rollout.Replica{tt.replica}}
			pods, err := sc.Pods(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %d pods, error %v; want an error containing %q", len(pods), err, tt.want)
			}
		})
	}
	dup := rollouttest.Scenario{Replicas: fleet("r", 2, "1-a", "", 0)}
	dup.Replicas[1].Name, dup.Replicas[1].Index = "r-0", 0
	if _, err := dup.Pods(rollout.PodOptions{}); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Fatalf("two replicas named r-0: got %v", err)
	}
}
