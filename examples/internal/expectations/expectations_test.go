package expectations

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// TestExpectationsWaitForInPlaceUpdates: a pod updated in place is expected
// until the cache shows it with the new revision label, or without it.
func TestExpectationsWaitForInPlaceUpdates(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New(time.Minute)
	owner := types.UID("ms")
	pod := func(rev string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p", Labels: map[string]string{servingv1.LabelRevision: rev}}}
	}
	e.Updated(owner, "p", "r2", now)
	if e.Satisfied(owner, []*corev1.Pod{pod("r1")}, now) {
		t.Error("satisfied while the cache shows the old revision")
	}
	if !e.Satisfied(owner, []*corev1.Pod{pod("r2")}, now) {
		t.Error("not satisfied once the cache shows the new revision")
	}
	e.Updated(owner, "p", "r3", now)
	if !e.Satisfied(owner, nil, now) {
		t.Error("not satisfied once the pod is gone")
	}
	e.Updated(owner, "p", "r4", now)
	if !e.Satisfied(owner, []*corev1.Pod{pod("r3")}, now.Add(2*time.Minute)) {
		t.Error("an expectation outlived its timeout")
	}
}

// TestExpectationsWaitForAnnotations: a pod whose annotation was set is expected
// until the cache shows it with that value, or without the pod.
func TestExpectationsWaitForAnnotations(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	owner := types.UID("ms")
	pod := func(v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p", Annotations: map[string]string{"k": v}}}
	}
	for _, tc := range []struct {
		name  string
		pods  []*corev1.Pod
		after time.Duration
		want  bool
	}{
		{"the cache shows the old value", []*corev1.Pod{pod("old")}, 0, false},
		{"the cache shows the new value", []*corev1.Pod{pod("new")}, 0, true},
		{"the pod is gone", nil, 0, true},
		{"the expectation timed out", []*corev1.Pod{pod("old")}, 2 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(time.Minute)
			e.Annotated(owner, "p", "k", "new", now)
			if got := e.Satisfied(owner, tc.pods, now.Add(tc.after)); got != tc.want {
				t.Errorf("satisfied = %v, want %v", got, tc.want)
			}
		})
	}
}
