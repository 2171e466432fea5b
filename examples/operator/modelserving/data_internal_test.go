package modelserving

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/revision"
)

// TestDataView: a pod serves the set's currentRevision; a pod asked for another
// revision is not ready (since it was asked, or since it became ready when later);
// a confirmed pod is ready at the earliest since its confirmation; the pods given
// are not changed.
func TestDataView(t *testing.T) {
	keys, err := revision.KeysFor("conf")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(ready bool, readySince time.Time, wanted string, wantedAt time.Time, current string, currentAt time.Time) *corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(readySince)}}}}
		keys.Write(p.Annotations, revision.PodState{UpdateRevision: wanted, UpdateTimestamp: wantedAt, CurrentRevision: current, CurrentTimestamp: currentAt})
		return p
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		data  string
		ready bool
		since time.Time
	}{
		{"a confirmed pod serves its revision", pod(true, t0, "a", t0.Add(-time.Minute), "a", t0.Add(-time.Second)), "a", true, t0},
		{"a pod confirmed after it became ready is ready since then", pod(true, t0, "a", t0, "a", t0.Add(time.Minute)), "a", true, t0.Add(time.Minute)},
		{"a pod moving its data is not ready since it was asked", pod(true, t0, "b", t0.Add(time.Minute), "a", t0), "a", false, t0.Add(time.Minute)},
		{"a new pod asked for its first revision is not ready", pod(true, t0, "b", t0.Add(-time.Minute), "", time.Time{}), "", false, t0},
		{"a not-ready pod stays not ready", pod(false, t0, "a", t0, "a", t0.Add(time.Minute)), "a", false, t0},
		{"a pod without annotations serves nothing and keeps its readiness", pod(true, t0, "", time.Time{}, "", time.Time{}), "", true, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got := dataView([]*corev1.Pod{tc.pod}, &dataRelease{keys: keys, target: "b"})[0]
			if got.Labels[dataRevisionLabel] != tc.data {
				t.Errorf("data revision %q, want %q", got.Labels[dataRevisionLabel], tc.data)
			}
			c := got.Status.Conditions[0]
			if (c.Status == corev1.ConditionTrue) != tc.ready || !c.LastTransitionTime.Time.Equal(tc.since) {
				t.Errorf("Ready %s since %s, want ready=%v since %s", c.Status, c.LastTransitionTime, tc.ready, tc.since)
			}
			if tc.pod.Labels != nil || tc.pod.Status.Conditions[0] != before.Status.Conditions[0] {
				t.Error("dataView changed the pod it was given")
			}
		})
	}
	if got := dataView([]*corev1.Pod{pod(true, t0, "", time.Time{}, "", time.Time{})}, nil); got[0].Labels != nil {
		t.Error("without a data release, pods are not relabelled")
	}
}
