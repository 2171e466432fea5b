package revision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan"
)

// The maxUnavailable budget counts the pods that are unavailable once the plan's
// changes land. When the data goes back to v0 while pods restart into v1, a pod that
// still runs v0 is sent back to it and is available again: that frees budget for
// the pods the plan moves, whether they come before or after it.
func TestPlanBudgetFreedByPodSentBackToItsRevision(t *testing.T) {
	hub, revs := hubOf(t, data("v2"), data("v1"), data("v0"))
	v2, v1, v0 := revs[0], revs[1], revs[2]
	type wait struct {
		pod    string
		reason kplan.Reason
	}
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		want    map[string]string // wanted revision after the plan
		waiting []wait
		budget  string // the MaxUnavailableReached message, when one is expected
	}{
		// The case the state-machine test found (reduced): b frees the budget a was
		// refused; a is tried again and moves.
		{"a pod refused before the pod that frees the budget moves",
			[]*corev1.Pod{revPod("a", v1, v1, true), revPod("b", v1, v0, true)},
			map[string]string{"a": v0, "b": v0},
			[]wait{{"a", ReasonRevisionNotConfirmed}}, ""},
		{"a pod after the pod that frees the budget moves",
			[]*corev1.Pod{revPod("a", v1, v0, true), revPod("b", v1, v1, true)},
			map[string]string{"a": v0, "b": v0},
			[]wait{{"b", ReasonRevisionNotConfirmed}}, ""},
		// One pod freed, budget 1: a moves, c waits for a's restart.
		{"the freed budget moves one pod, not more",
			[]*corev1.Pod{revPod("a", v1, v1, true), revPod("b", v1, v0, true), revPod("c", v1, v1, true)},
			map[string]string{"a": v0, "b": v0, "c": v1},
			[]wait{{"a", ReasonRevisionNotConfirmed}, {"c", ReasonMaxUnavailableReached}},
			"waits to move to revision " + v0 + ": 1 of 3 pods are unavailable or restarting, and maxUnavailable is 1"},
		// a runs v2: sent to v0 it still restarts, so it frees nothing and b waits.
		{"a restarting pod sent to a revision it does not run frees nothing",
			[]*corev1.Pod{revPod("a", v1, v2, true), revPod("b", v1, v1, true)},
			map[string]string{"a": v0, "b": v1},
			[]wait{{"a", ReasonRevisionNotConfirmed}, {"b", ReasonMaxUnavailableReached}},
			"waits to move to revision " + v0 + ": 1 of 2 pods are unavailable or restarting, and maxUnavailable is 1"},
		// a is not ready: sent back to v0 it is still unavailable.
		{"a pod that is not ready frees nothing",
			[]*corev1.Pod{revPod("a", v1, v0, false), revPod("b", v1, v1, true)},
			map[string]string{"a": v0, "b": v1},
			[]wait{{"a", ReasonPodNotReady}, {"b", ReasonMaxUnavailableReached}},
			"waits to move to revision " + v0 + ": 1 of 2 pods are unavailable or restarting, and maxUnavailable is 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(data("v0"), restartWith(intstr.FromInt32(1)))
			res := mustPlan(t, Input{Set: set, Hub: hub, Pods: tt.pods, Now: now})
			if res.Status.UpdateRevision != v0 {
				t.Fatalf("update revision %s, want v0's %s", res.Status.UpdateRevision, v0)
			}
			if diff := cmp.Diff(tt.want, wanted(tt.pods, res)); diff != "" {
				t.Errorf("wanted revisions (-want +got):\n%s", diff)
			}
			var got []wait
			budget := ""
			for _, w := range res.Waiting {
				got = append(got, wait{w.Name, w.Reason})
				if w.Reason == ReasonMaxUnavailableReached {
					budget = w.Message
				}
			}
			if diff := cmp.Diff(tt.waiting, got, cmp.AllowUnexported(wait{})); diff != "" {
				t.Errorf("Waiting (-want +got):\n%s\nfull: %+v", diff, res.Waiting)
			}
			if budget != tt.budget {
				t.Errorf("MaxUnavailableReached message %q, want %q", budget, tt.budget)
			}
			// The plan keeps the budget: after it, at most one pod restarts or is not
			// ready.
			unavailable := 0
			for _, p := range applyPatches(tt.pods, res.Pods) {
				st, err := testKeys.Read(p)
				if err != nil {
					t.Fatal(err)
				}
				if !podReady(p) || st.UpdateRevision != st.CurrentRevision {
					unavailable++
				}
			}
			if unavailable > 1 {
				t.Errorf("%d pods unavailable after the plan, maxUnavailable is 1", unavailable)
			}
		})
	}
}
