package revision

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodePod is a pod of set cms1 that wants revision "r2" since t0+10m (current "r1")
// with the given containers running since the given times (zero = not running).
func nodePod(ready bool, started map[string]time.Time) *corev1.Pod {
	p := revPod("p", "r2", "r1", ready)
	p.Annotations[testKeys.UpdateRevisionTimestamp] = FormatTimestamp(t0.Add(10 * time.Minute))
	p.Spec.Containers = append([]corev1.Container{{Name: ReloadSidecarName("cms1")}}, p.Spec.Containers...)
	// "main" mounts the files, as Inject leaves it; "other" does not.
	p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: VolumeName("cms1"), MountPath: "/data/conf", ReadOnly: true}}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other"})
	for _, c := range p.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name}
		if at, ok := started[c.Name]; ok && !at.IsZero() {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	return p
}

func TestRestartsAndMarkCurrent(t *testing.T) {
	sc := ReloadSidecarName("cms1")
	before, after := t0.Add(5*time.Minute), t0.Add(15*time.Minute)
	restarting := newSet(data("a"), func(s *ConfigMapSet) { s.Spec.UpdateStrategy.RestartInjectedContainers = true })
	reloadOnly := newSet(data("a"))
	tests := []struct {
		name     string
		set      *ConfigMapSet
		pod      *corev1.Pod
		restarts []string
		mark     bool
	}{
		{"the sidecar restarts first, alone", restarting, nodePod(true, map[string]time.Time{sc: before, "main": before}), []string{sc}, false},
		{"then the injected containers restart", restarting, nodePod(true, map[string]time.Time{sc: after, "main": before}), []string{"main"}, false},
		{"a container still restarting blocks the mark", restarting, nodePod(true, map[string]time.Time{sc: after}), nil, false},
		{"all restarted and ready: mark current", restarting, nodePod(true, map[string]time.Time{sc: after, "main": after}), nil, true},
		{"all restarted but not ready: no mark", restarting, nodePod(false, map[string]time.Time{sc: after, "main": after}), nil, false},
		{"without restartInjectedContainers only the sidecar matters", reloadOnly, nodePod(true, map[string]time.Time{sc: after, "main": before}), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Restarts(tt.pod, tt.set)
			if err != nil || !slices.Equal(got, tt.restarts) {
				t.Errorf("Restarts = %v, %v; want %v", got, err, tt.restarts)
			}
			pp, ok, err := MarkCurrent(tt.pod, tt.set, now)
			if err != nil || ok != tt.mark {
				t.Fatalf("MarkCurrent ok=%v err=%v, want %v", ok, err, tt.mark)
			}
			if ok {
				marked := pp.Apply(tt.pod)
				st, _ := testKeys.Read(marked)
				if !st.Updated() || !st.CurrentTimestamp.Equal(now.Truncate(time.Millisecond)) {
					t.Errorf("after mark %+v", st)
				}
			}
		})
	}
	t.Run("a cold pod finishes the change asked before it turned cold", func(t *testing.T) {
		s := restarting.DeepCopy()
		s.Status.LastContainersTimestamp = &metav1.Time{Time: now}
		s.Spec.Containers = []ContainerInjectSpec{{Name: "other", MountPath: "/new"}}
		got, err := Restarts(nodePod(true, map[string]time.Time{sc: after, "main": before, "other": before}), s)
		if err != nil || !slices.Equal(got, []string{"main"}) {
			t.Errorf("Restarts = %v, %v; want the container that mounts the files, [main]", got, err)
		}
		_, ok, err := MarkCurrent(nodePod(true, map[string]time.Time{sc: after, "main": after, "other": before}), s, now)
		if err != nil || !ok {
			t.Errorf("MarkCurrent = %v, %v", ok, err)
		}
	})
}
