package revision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Cold pods: Plan leaves pods without the sidecar or the current mounts alone.

func TestPlanColdStart(t *testing.T) {
	hub, revs := hubOf(t, data("cur"))
	cur := revs[0]
	set := newSet(data("new"))
	set.Status.CurrentRevision = cur
	set.Status.LastContainersHash = "stale"
	set.Status.LastContainersTimestamp = &metav1.Time{Time: t0}
	old := revPod("old", cur, cur, true) // created at t0+1m
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: []*corev1.Pod{old}, Now: now})
	t.Run("changed containers move the timestamp to now and keep older pods", func(t *testing.T) {
		if !res.Status.LastContainersTimestamp.Time.Equal(now) {
			t.Errorf("timestamp %v", res.Status.LastContainersTimestamp)
		}
		if len(res.Pods) != 0 {
			t.Errorf("cold pod patched: %+v", res.Pods)
		}
		if res.Status.CurrentRevision != cur {
			t.Errorf("rollout completed with a cold pod on the old revision")
		}
	})
	t.Run("a pod created after the change is updated", func(t *testing.T) {
		set2 := set.DeepCopy()
		set2.Status = res.Status
		young := revPod("young", cur, cur, true)
		young.CreationTimestamp = metav1.NewTime(now.Add(time.Minute))
		res2 := mustPlan(t, Input{Set: set2, Hub: res.Hub.ConfigMap, Pods: []*corev1.Pod{old, young}, Now: now.Add(2 * time.Minute)})
		if len(res2.Pods) != 1 || res2.Pods[0].Name != "young" {
			t.Errorf("patches %+v", res2.Pods)
		}
	})
}

// A pod the webhook did not inject (it failed open, or injection was paused) can
// never confirm a revision. It used to be given one and then counted as restarting
// for ever, so with maxUnavailable 1 no other pod updated again.
func TestPlanLeavesPodsWithoutSidecarAlone(t *testing.T) {
	hub, revs := hubOf(t, data("cur"), data("new"))
	cur, upd := revs[0], revs[1]
	set := newSet(data("new"), restartWith(intstr.FromInt32(1)))
	set.Status.CurrentRevision = cur
	bare := revPod("x", upd, cur, true)
	bare.Spec.InitContainers = nil
	pods := []*corev1.Pod{revPod("a", cur, cur, true), bare, revPod("b", cur, cur, true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if len(res.Pods) != 1 || res.Pods[0].Name != "a" {
		t.Errorf("patches %+v; want only a", res.Pods)
	}
	if res.Status.MatchedPods != 3 || res.Status.CurrentRevision != cur {
		t.Errorf("status %+v", res.Status)
	}
	fresh := revPod("y", "", "", true)
	fresh.Spec.InitContainers = nil
	if res := mustPlan(t, Input{Set: newSet(data("new")), Hub: hub, Pods: []*corev1.Pod{fresh}, Now: now}); len(res.Pods) != 0 {
		t.Errorf("a pod without the sidecar got %+v", res.Pods)
	}
}

// Result.Cold lists the pods Plan leaves alone, with the reason, so callers need not
// re-implement the rule.
func TestPlanListsPodReasons(t *testing.T) {
	hub, revs := hubOf(t, data("cur"))
	cur := revs[0]
	// spec.containers last changed at t0+2m; revPod pods are created at t0+1m.
	changed := metav1.NewTime(t0.Add(2 * time.Minute))
	set := newSet(data("new"))
	set.Status.CurrentRevision = cur
	bare := func(name string) *corev1.Pod {
		p := revPod(name, cur, cur, true)
		p.Spec.InitContainers = nil
		return p
	}
	young := func(name string) *corev1.Pod {
		p := revPod(name, cur, cur, true)
		p.CreationTimestamp = metav1.NewTime(t0.Add(3 * time.Minute))
		return p
	}
	terminating := func(p *corev1.Pod) *corev1.Pod {
		d := metav1.NewTime(now)
		p.DeletionTimestamp = &d
		return p
	}
	notInjected := PodReason{Namespace: "ns", Reason: ReasonNotInjected, Message: "not injected (no reload sidecar " + ReloadSidecarName("cms1") + ")"}
	old := PodReason{Namespace: "ns", Reason: ReasonCreatedBeforeContainersChange,
		Message: "created 2025-02-14T17:01:00Z, before status.lastContainersTimestamp 2025-02-14T17:02:00Z (lacks the current mounts)"}
	named := func(c PodReason, name string) PodReason { c.Name = name; return c }
	tests := []struct {
		name    string
		changed *metav1.Time // status.lastContainersTimestamp (the hash is current)
		pods    []*corev1.Pod
		want    []PodReason
	}{
		{"a pod without the reload sidecar is listed as not injected", nil,
			[]*corev1.Pod{young("a"), bare("b")}, []PodReason{named(notInjected, "b")}},
		{"a pod created before lastContainersTimestamp is listed with both times", &changed,
			[]*corev1.Pod{revPod("a", cur, cur, true), young("b")}, []PodReason{named(old, "a")}},
		{"an old pod without the sidecar is reported as not injected", &changed,
			[]*corev1.Pod{bare("a")}, []PodReason{named(notInjected, "a")}},
		{"warm pods are not listed and the list is nil", &changed,
			[]*corev1.Pod{young("a"), young("b")}, nil},
		{"terminating cold pods are not listed", &changed,
			[]*corev1.Pod{terminating(bare("a")), terminating(revPod("b", cur, cur, true)), young("c")}, nil},
		{"cold pods are listed in name order whatever the input order", &changed,
			[]*corev1.Pod{bare("d"), young("c"), revPod("b", cur, cur, true), bare("a")},
			[]PodReason{named(notInjected, "a"), named(old, "b"), named(notInjected, "d")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := set.DeepCopy()
			if tt.changed != nil {
				// The hash Plan computes for the spec, so the timestamp stays.
				first := mustPlan(t, Input{Set: newSet(data("new")), Now: now})
				set.Status.LastContainersHash = first.Status.LastContainersHash
				set.Status.LastContainersTimestamp = tt.changed
			}
			res := mustPlan(t, Input{Set: set, Hub: hub, Pods: tt.pods, Now: now})
			if diff := cmp.Diff(tt.want, res.Cold); diff != "" {
				t.Errorf("Result.Cold (-want +got):\n%s", diff)
			}
			for _, pp := range res.Pods {
				for _, c := range res.Cold {
					if pp.Name == c.Name {
						t.Errorf("cold pod %s patched", c.Name)
					}
				}
			}
		})
	}
}
