package revision

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// The API server keeps status.lastContainersTimestamp in whole seconds. When Plan
// wrote Now with its fraction, a pod created in that same second was cold on the
// first reconcile (created before 12:00:00.5) and warm on the next (not before the
// stored 12:00:00). Plan now rounds the time up, so both reconciles agree, and the
// status it writes survives the round trip unchanged.
func TestPodCreatedInTheSecondTheContainersChangedStaysColdAcrossReconciles(t *testing.T) {
	changed := t0.Add(time.Hour)
	now := changed.Add(500 * time.Millisecond)
	set := newSet(data("a"))
	set.Status.LastContainersHash = "hash-of-older-containers"
	set.Status.LastContainersTimestamp = nil

	pod := revPod("p", "", "", true)
	pod.CreationTimestamp.Time = changed // whole second, as the API server stores it

	first, err := Plan(Input{Set: set, Pods: []*corev1.Pod{pod}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Status.LastContainersTimestamp; got == nil || !got.Time.Equal(changed.Add(time.Second)) {
		t.Fatalf("lastContainersTimestamp = %v, want Now rounded up to %v", got, changed.Add(time.Second))
	}

	// Store the status as the API server does and plan again at the same time.
	b, err := json.Marshal(first.Status)
	if err != nil {
		t.Fatal(err)
	}
	stored := set.DeepCopy()
	stored.Status = ConfigMapSetStatus{}
	if err := json.Unmarshal(b, &stored.Status); err != nil {
		t.Fatal(err)
	}
	if !stored.Status.LastContainersTimestamp.Time.Equal(first.Status.LastContainersTimestamp.Time) {
		t.Fatalf("stored timestamp %v differs from the written %v", stored.Status.LastContainersTimestamp, first.Status.LastContainersTimestamp)
	}
	second, err := Plan(Input{Set: stored, Pods: []*corev1.Pod{pod}, Hub: first.Hub.ConfigMap, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Cold) != 1 {
		t.Fatalf("first reconcile: cold = %v, want the pod created in the second the containers changed", first.Cold)
	}
	if diff := cmp.Diff(first.Cold, second.Cold); diff != "" {
		t.Errorf("cold pods differ between two reconciles at the same time (-first +second):\n%s", diff)
	}
}

func TestCeilSecond(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out time.Time
	}{
		{"a whole second stays", t0, t0},
		{"a fraction rounds up", t0.Add(time.Nanosecond), t0.Add(time.Second)},
		{"just below the next second rounds up", t0.Add(time.Second - time.Nanosecond), t0.Add(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ceilSecond(tc.in); !got.Equal(tc.out) {
				t.Errorf("ceilSecond(%v) = %v, want %v", tc.in, got, tc.out)
			}
		})
	}
}
