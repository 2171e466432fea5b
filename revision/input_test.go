package revision

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/internal/podfixture"

	"github.com/kplan-dev/kplan/internal/exact"
)

// Every entry point turns a missing pod or set into an error (or, for initialRevision,
// no revision) instead of a panic.
func TestNilInputsAreErrors(t *testing.T) {
	set := newSet(data("a"))
	pod := revPod("a", "", "", true)
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"Inject without a pod", func() error { _, err := Inject(nil, injectInput(set, "v1.30.0")); return err }, "no pod"},
		{"Inject without a set", func() error { _, err := Inject(pod.DeepCopy(), injectInput(nil, "v1.30.0")); return err }, "pod ns/a: input has no ConfigMapSet"},
		{"Restarts without a pod", func() error { _, err := Restarts(nil, set); return err }, "no pod"},
		{"Restarts without a set", func() error { _, err := Restarts(pod, nil); return err }, "pod ns/a: no ConfigMapSet"},
		{"MarkCurrent without a pod", func() error { _, _, err := MarkCurrent(nil, set, now); return err }, "no pod"},
		{"MarkCurrent without a set", func() error { _, _, err := MarkCurrent(pod, nil, now); return err }, "pod ns/a: no ConfigMapSet"},
		{"Plan without a set", func() error { _, err := Plan(Input{}); return err }, "no ConfigMapSet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if got := initialRevision(nil, []*corev1.Pod{pod}); got != "" {
		t.Errorf("initialRevision(nil) = %q, want no revision", got)
	}
}

// A container that already has the reload sidecar's name but was not injected by the
// set is a conflict: Inject does not take it over, and leaves the pod alone.
func TestInjectSidecarNameConflict(t *testing.T) {
	set := newSet(data("a"))
	sidecar := ReloadSidecarName(set.Name)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"an app container", podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main", sidecar))},
		{"an init container", podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"), podfixture.InitContainers(sidecar))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod.DeepCopy()
			_, err := Inject(p, injectInput(set, "v1.30.0"))
			if err == nil || !strings.Contains(err.Error(), "pod ns/p") || !strings.Contains(err.Error(), sidecar) {
				t.Errorf("err = %v, want a conflict naming the pod and %s", err, sidecar)
			}
			if diff := cmp.Diff(tc.pod, p, exact.Options); diff != "" {
				t.Errorf("pod changed on conflict (-before +after):\n%s", diff)
			}
		})
	}
}

// The node-side functions and initialRevision read their inputs only; Inject changes
// only the pod it is given, never the other pods.
func TestEntryPointsDoNotMutateInputs(t *testing.T) {
	set := newSet(data("b"))
	set.Status.UpdateRevision, set.Status.CurrentRevision = "upd", "cur"
	set.Spec.UpdateStrategy.RestartInjectedContainers = true
	started := metav1.NewTime(t0.Add(-time.Minute)) // before the wanted revision (t0)
	pod := revPod("a", "upd", "cur", true)
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: VolumeName(set.Name), MountPath: "/data/conf"}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ReloadSidecarName(set.Name),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
	others := []*corev1.Pod{revPod("b", "upd", "upd", true), revPod("c", "cur", "cur", false)}

	setBefore, podBefore := set.DeepCopy(), pod.DeepCopy()
	var othersBefore []*corev1.Pod
	for _, o := range others {
		othersBefore = append(othersBefore, o.DeepCopy())
	}
	check := func(what string) {
		t.Helper()
		if diff := cmp.Diff(setBefore, set, exact.Options); diff != "" {
			t.Errorf("%s changed the set (-before +after):\n%s", what, diff)
		}
		if diff := cmp.Diff(podBefore, pod, exact.Options); diff != "" {
			t.Errorf("%s changed the pod (-before +after):\n%s", what, diff)
		}
		if diff := cmp.Diff(othersBefore, others, exact.Options); diff != "" {
			t.Errorf("%s changed the other pods (-before +after):\n%s", what, diff)
		}
	}

	if need, err := Restarts(pod, set); err != nil || len(need) != 1 || need[0] != "main" {
		t.Errorf("Restarts = %v, %v; want [main]", need, err)
	}
	check("Restarts")
	if _, ok, err := MarkCurrent(pod, set, now); err != nil || ok {
		t.Errorf("MarkCurrent = %v, %v; want not yet (main must restart)", ok, err)
	}
	check("MarkCurrent")
	_ = initialRevision(set, others)
	check("initialRevision")
	fresh := podfixture.Pod("ns", "new", podfixture.Labels("app", "sample"), podfixture.Containers("main"))
	in := injectInput(set, "v1.30.0")
	in.Pods = others
	if res, err := Inject(fresh, in); err != nil || !res.Changed {
		t.Errorf("Inject = %+v, %v", res, err)
	}
	check("Inject")
}
