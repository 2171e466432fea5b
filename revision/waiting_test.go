package revision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan"
)

// Result.Waiting says why each pod that does not run the update revision confirmed
// and ready waits, and Result.Complete whether only the partition holds pods back.
func TestPlanWaitingAndComplete(t *testing.T) {
	hub, revs := hubOf(t, data("cur"), data("new"))
	cur, upd := revs[0], revs[1]
	bare := func(p *corev1.Pod) *corev1.Pod { p.Spec.InitContainers = nil; return p }
	// The containers changed at t0+2m; revPod pods are created at t0+1m, so they are
	// cold when lastContainersTimestamp is set (see beforeChange).
	changed := metav1.NewTime(t0.Add(2 * time.Minute))
	young := func(p *corev1.Pod) *corev1.Pod {
		p.CreationTimestamp = metav1.NewTime(t0.Add(3 * time.Minute))
		return p
	}

	type wait struct {
		pod    string
		reason kplan.Reason
	}
	tests := []struct {
		name         string
		opts         []func(*ConfigMapSet)
		beforeChange bool // status.lastContainersTimestamp is t0+2m: revPod pods are cold
		pods         []*corev1.Pod
		want         []wait
		complete     bool
	}{
		{"every pod on the update, confirmed and ready: complete, nobody waits", nil, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), revPod("b", upd, upd, true)}, nil, true},
		{"no pods: complete", nil, false, nil, nil, true},
		// 50% of 4 keeps 2: a and b move to the update (this plan asks them), c and d
		// are kept.
		{"pods the partition keeps wait for it, and the set is complete once the others confirm",
			[]func(*ConfigMapSet){partition(intstr.FromString("50%"))}, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), revPod("b", upd, upd, true), revPod("c", cur, cur, true), revPod("d", cur, cur, true)},
			[]wait{{"c", ReasonPartitioned}, {"d", ReasonPartitioned}}, true},
		{"a pod this plan asks for the update waits for the node side to confirm it", nil, false,
			[]*corev1.Pod{revPod("a", cur, cur, true), revPod("b", upd, upd, true)},
			[]wait{{"a", ReasonRevisionNotConfirmed}}, false},
		{"a pod asked earlier still waits for its confirmation", nil, false,
			[]*corev1.Pod{revPod("a", upd, cur, true)},
			[]wait{{"a", ReasonRevisionNotConfirmed}}, false},
		{"a pod on the update that is not ready waits for readiness", nil, false,
			[]*corev1.Pod{revPod("a", upd, upd, false), revPod("b", upd, upd, true)},
			[]wait{{"a", ReasonPodNotReady}}, false},
		{"a kept pod that is not ready waits too", []func(*ConfigMapSet){partition(intstr.FromInt32(1))}, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), revPod("b", cur, cur, false)},
			[]wait{{"b", ReasonPodNotReady}}, false},
		// maxUnavailable 1: a moves to the update and restarts; b and c must wait.
		{"pods the maxUnavailable budget holds back wait for it",
			[]func(*ConfigMapSet){restartWith(intstr.FromInt32(1))}, false,
			[]*corev1.Pod{revPod("a", cur, cur, true), revPod("b", cur, cur, true), revPod("c", cur, cur, true)},
			[]wait{{"a", ReasonRevisionNotConfirmed}, {"b", ReasonMaxUnavailableReached}, {"c", ReasonMaxUnavailableReached}}, false},
		// Partition 1 of 2, both on the update, b still restarting into it: b goes
		// back (free, it is unavailable already) and is on cur at once.
		{"a pod rolled back to the revision it runs is partitioned at once",
			[]func(*ConfigMapSet){partition(intstr.FromInt32(1)), restartWith(intstr.FromInt32(1))}, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), revPod("b", upd, cur, true)},
			[]wait{{"b", ReasonPartitioned}}, true},
		// Partition 2 of 3: one of a and b must go back, but c (not ready) takes the
		// budget. b goes first (reverse name order); a stays.
		{"a rollback the budget holds back waits for it",
			[]func(*ConfigMapSet){partition(intstr.FromInt32(2)), restartWith(intstr.FromInt32(1))}, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), revPod("b", upd, upd, true), revPod("c", cur, cur, false)},
			[]wait{{"b", ReasonMaxUnavailableReached}, {"c", ReasonPodNotReady}}, false},
		// maxUnavailable 1 spent on a; partition 1 of 4 wants 3 on the update, so b
		// and c wait for the budget and d is kept.
		{"only as many pods wait for the budget as the update is short of",
			[]func(*ConfigMapSet){partition(intstr.FromInt32(1)), restartWith(intstr.FromInt32(1))}, false,
			[]*corev1.Pod{revPod("a", cur, cur, true), revPod("b", cur, cur, true), revPod("c", cur, cur, true), revPod("d", cur, cur, true)},
			[]wait{{"a", ReasonRevisionNotConfirmed}, {"b", ReasonMaxUnavailableReached}, {"c", ReasonMaxUnavailableReached}, {"d", ReasonPartitioned}}, false},
		{"a pod without the reload sidecar waits to be re-created", nil, false,
			[]*corev1.Pod{revPod("a", upd, upd, true), bare(revPod("b", "", "", true))},
			[]wait{{"b", ReasonNotInjected}}, false},
		{"a cold pod the update needs waits to be re-created", nil, true,
			[]*corev1.Pod{revPod("a", cur, cur, true), young(revPod("b", upd, upd, true))},
			[]wait{{"a", ReasonCreatedBeforeContainersChange}}, false},
		{"a cold pod the partition would keep anyway is partitioned, and the set complete",
			[]func(*ConfigMapSet){partition(intstr.FromInt32(1))}, true,
			[]*corev1.Pod{revPod("a", cur, cur, true), young(revPod("b", upd, upd, true))},
			[]wait{{"a", ReasonPartitioned}}, true},
		{"pods wait in name order whatever the input order", nil, false,
			[]*corev1.Pod{revPod("c", upd, upd, false), revPod("a", upd, cur, true), revPod("b", upd, upd, true)},
			[]wait{{"a", ReasonRevisionNotConfirmed}, {"c", ReasonPodNotReady}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(data("new"), tt.opts...)
			set.Status.CurrentRevision = cur
			if tt.beforeChange {
				first := mustPlan(t, Input{Set: newSet(data("new")), Now: now})
				set.Status.LastContainersHash = first.Status.LastContainersHash
				set.Status.LastContainersTimestamp = &changed
			}
			res := mustPlan(t, Input{Set: set, Hub: hub, Pods: tt.pods, Now: now})
			var got []wait
			for _, w := range res.Waiting {
				if w.Namespace != "ns" || w.Message == "" {
					t.Errorf("waiting pod %+v: want namespace ns and a message", w)
				}
				got = append(got, wait{w.Name, w.Reason})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(wait{})); diff != "" {
				t.Errorf("Waiting (-want +got):\n%s\nfull: %+v", diff, res.Waiting)
			}
			if res.Complete != tt.complete {
				t.Errorf("Complete = %v, want %v", res.Complete, tt.complete)
			}
		})
	}
}

// The messages name what a person needs: the revisions, the budget, the partition.
func TestPlanWaitingMessages(t *testing.T) {
	hub, revs := hubOf(t, data("cur"), data("new"))
	cur, upd := revs[0], revs[1]
	set := newSet(data("new"), restartWith(intstr.FromInt32(1)), partition(intstr.FromInt32(1)))
	set.Status.CurrentRevision = cur
	pods := []*corev1.Pod{revPod("a", cur, cur, true), revPod("b", cur, cur, true), revPod("c", cur, cur, true), revPod("d", upd, upd, false)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	// 1 of 4 kept: want 3 on the update; d is there, so two more must move, but d
	// (not ready) spends the whole budget: a and b (first in name order) wait for it,
	// c is the pod the partition keeps.
	want := []PodReason{
		{"ns", "a", ReasonMaxUnavailableReached, "waits to move to revision " + upd + ": 1 of 4 pods are unavailable or restarting, and maxUnavailable is 1"},
		{"ns", "b", ReasonMaxUnavailableReached, "waits to move to revision " + upd + ": 1 of 4 pods are unavailable or restarting, and maxUnavailable is 1"},
		{"ns", "c", ReasonPartitioned, "kept on revision " + cur + ": spec.updateStrategy.partition keeps 1 of 4 pods on older revisions"},
		{"ns", "d", ReasonPodNotReady, "runs revision " + upd + " but is not ready"},
	}
	if diff := cmp.Diff(want, res.Waiting); diff != "" {
		t.Errorf("Waiting (-want +got):\n%s", diff)
	}

	// Once d is ready, a moves; the message names the revision asked for and the one
	// it runs.
	pods[3] = revPod("d", upd, upd, true)
	res = mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if got, want := res.Waiting[0], (PodReason{"ns", "a", ReasonRevisionNotConfirmed,
		"asked for revision " + upd + "; its reload sidecar and injected containers have not loaded it yet (it runs revision " + cur + ")"}); got != want {
		t.Errorf("Waiting[0] = %+v\nwant %+v", got, want)
	}
}

// A pod whose reload sidecar serves the revision while its injected containers still
// have to restart says which, and who restarts them: the sidecar by signal, nobody
// (the pod does not share its process namespace: re-create it), or another restarter.
func TestPlanWaitingForInjectedRestarts(t *testing.T) {
	hub, revs := hubOf(t, data("cur"), data("new"))
	cur, upd := revs[0], revs[1]
	pod := func(share *bool, hostPID bool) *corev1.Pod {
		p := revPod("a", upd, cur, true)
		p.Annotations[testKeys.UpdateRevisionTimestamp] = FormatTimestamp(t0.Add(10 * time.Minute))
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: VolumeName("cms1"), MountPath: "/data/conf", ReadOnly: true}}
		p.Spec.ShareProcessNamespace, p.Spec.HostPID = share, hostPID
		running := func(name string, at time.Time) corev1.ContainerStatus {
			return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
		}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{running(ReloadSidecarName("cms1"), t0.Add(15*time.Minute))}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{running("main", t0.Add(5*time.Minute))}
		return p
	}
	yes, no := true, false
	prefix := "asked for revision " + upd + "; its reload sidecar serves it, containers [main] still have to restart ("
	tests := []struct {
		name   string
		method RestartMethod
		pod    *corev1.Pod
		want   string
	}{
		{"a pod sharing its process namespace is restarted by the sidecar", "", pod(&yes, false),
			prefix + "the reload sidecar signals them; it runs revision " + cur + ")"},
		{"a pod on the host's process namespace too", RestartSignal, pod(nil, true),
			prefix + "the reload sidecar signals them; it runs revision " + cur + ")"},
		{"a pod with its own process namespaces must be re-created", RestartSignal, pod(nil, false),
			prefix + "the pod does not share its process namespace, so the reload sidecar cannot signal them: re-create the pod; it runs revision " + cur + ")"},
		{"an explicit false too", "", pod(&no, false),
			prefix + "the pod does not share its process namespace, so the reload sidecar cannot signal them: re-create the pod; it runs revision " + cur + ")"},
		{"with restartMethod External another restarter must", RestartExternal, pod(nil, false),
			prefix + "restartMethod External: another restarter must; it runs revision " + cur + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(data("new"), restartWith(intstr.FromInt32(1)))
			set.Spec.UpdateStrategy.RestartMethod = tt.method
			set.Status.CurrentRevision = cur
			res := mustPlan(t, Input{Set: set, Hub: hub, Pods: []*corev1.Pod{tt.pod}, Now: now})
			want := []PodReason{{"ns", "a", ReasonRevisionNotConfirmed, tt.want}}
			if diff := cmp.Diff(want, res.Waiting); diff != "" {
				t.Errorf("Waiting (-want +got):\n%s", diff)
			}
		})
	}
}
