package revision

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
)

func external(s *ConfigMapSet) { s.Spec.UpdateStrategy.Type = ExternalUpdate }

// extPod is a pod of set cms1: its name, wanted and current revisions, readiness.
type extPod struct {
	name, wanted, current string
	ready                 bool
}

// With type External, Plan writes the hub and the status and says who waits, but
// moves no pod: the pods' owner writes their wanted revisions.
func TestPlanExternalLeavesPodsToTheirOwner(t *testing.T) {
	hub, revs := hubOf(t, data("a"), data("b"))
	old, upd := revs[0], revs[1]
	type wait struct {
		pod    string
		reason string
	}
	tests := []struct {
		name     string
		pods     []extPod
		restart  bool
		waiting  []wait
		complete bool
		current  string // status.currentRevision after the plan
	}{
		{
			name:    "pods on the old revision wait for their owner",
			pods:    []extPod{{"a", old, old, true}, {"b", old, old, true}},
			waiting: []wait{{"a", "UpdatedByOwner"}, {"b", "UpdatedByOwner"}},
			current: old,
		},
		{
			name:    "with restarts and no budget of its own, still nothing moves",
			pods:    []extPod{{"a", old, old, true}, {"b", old, old, false}},
			restart: true,
			waiting: []wait{{"a", "UpdatedByOwner"}, {"b", "PodNotReady"}},
			current: old,
		},
		{
			name:    "a pod its owner moved waits for its confirmation",
			pods:    []extPod{{"a", upd, old, true}, {"b", old, old, true}},
			waiting: []wait{{"a", "RevisionNotConfirmed"}, {"b", "UpdatedByOwner"}},
			current: old,
		},
		{
			name:     "every pod moved and confirmed completes the rollout",
			pods:     []extPod{{"a", upd, upd, true}, {"b", upd, upd, true}},
			complete: true,
			current:  upd,
		},
		{
			name:    "a pod without a wanted revision is not given one",
			pods:    []extPod{{"a", "", "", true}, {"b", upd, upd, true}},
			waiting: []wait{{"a", "RevisionNotConfirmed"}},
			current: old,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(data("b"), external)
			set.Spec.UpdateStrategy.RestartInjectedContainers = tt.restart
			set.Status.CurrentRevision = old
			in := Input{Set: set, Hub: hub, Now: now}
			for _, p := range tt.pods {
				in.Pods = append(in.Pods, revPod(p.name, p.wanted, p.current, p.ready))
			}
			res, err := Plan(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, pp := range res.Pods {
				if _, ok := pp.Annotations[testKeys.UpdateRevision]; ok {
					t.Errorf("pod %s: wanted revision changed to %v", pp.Name, *pp.Annotations[testKeys.UpdateRevision])
				}
			}
			var got []wait
			for _, w := range res.Waiting {
				got = append(got, wait{w.Name, string(w.Reason)})
			}
			if diff := cmp.Diff(tt.waiting, got, cmp.AllowUnexported(wait{})); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
			if res.Complete != tt.complete {
				t.Errorf("complete = %v, want %v", res.Complete, tt.complete)
			}
			if res.Status.UpdateRevision != upd || res.Status.CurrentRevision != tt.current {
				t.Errorf("status revisions update=%s current=%s, want %s and %s", res.Status.UpdateRevision, res.Status.CurrentRevision, upd, tt.current)
			}
		})
	}
}

// TestPlanExternalNeverChangesAWantedRevision: for arbitrary inputs with type
// External, Plan never changes a pod's wanted revision (nor its timestamp), and
// apart from the pod patches it plans as with the default type, partition and
// maxUnavailable unset.
func TestPlanExternalNeverChangesAWantedRevision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		in.Set.Spec.UpdateStrategy.Partition, in.Set.Spec.UpdateStrategy.MaxUnavailable = nil, nil
		in.Set.Spec.UpdateStrategy.Type = ExternalUpdate
		res, err := Plan(in)
		if err != nil {
			t.Fatalf("valid input: %v", err)
		}
		for _, pp := range res.Pods {
			for _, k := range []string{testKeys.UpdateRevision, testKeys.UpdateRevisionTimestamp} {
				if v, ok := pp.Annotations[k]; ok {
					t.Fatalf("pod %s/%s: annotation %s changed to %v", pp.Namespace, pp.Name, k, fmt.Sprint(*v))
				}
			}
		}
		for _, w := range res.Waiting {
			if w.Reason == ReasonPartitioned || w.Reason == ReasonMaxUnavailableReached {
				t.Fatalf("pod %s waits with %s, which External has no partition or budget for", w.Name, w.Reason)
			}
		}
		rolling := copyInput(in)
		rolling.Set.Spec.UpdateStrategy.Type = ""
		want, err := Plan(rolling)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Hub, res.Hub, exact.Options); diff != "" {
			t.Fatalf("the hub differs from the default type's (-rolling +external):\n%s", diff)
		}
		if diff := cmp.Diff(want.Cold, res.Cold, exact.Options); diff != "" {
			t.Fatalf("the cold pods differ from the default type's (-rolling +external):\n%s", diff)
		}
	})
}
