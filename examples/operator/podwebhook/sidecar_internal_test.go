package podwebhook

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/revision"
)

// The reload sidecar takes the one non-root user its injected containers declare
// when it restarts them by signal, and runs as SidecarUser otherwise.
func TestSidecarUser(t *testing.T) {
	uid := func(v int64) *int64 { return &v }
	mount := []corev1.VolumeMount{{Name: revision.VolumeName("cfg"), MountPath: "/etc/app", ReadOnly: true}}
	pod := func(podUser *int64, users ...*int64) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		if podUser != nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: podUser}
		}
		p.Spec.InitContainers = []corev1.Container{{Name: revision.ReloadSidecarName("cfg"), VolumeMounts: mount}}
		for i, u := range users {
			c := corev1.Container{Name: string(rune('a' + i)), VolumeMounts: mount}
			if u != nil {
				c.SecurityContext = &corev1.SecurityContext{RunAsUser: u}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		// A container that does not mount the files does not count.
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other", SecurityContext: &corev1.SecurityContext{RunAsUser: uid(7)}})
		return p
	}
	set := func(restart bool, method revision.RestartMethod) *revision.ConfigMapSet {
		s := &revision.ConfigMapSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}}
		s.Spec.UpdateStrategy.RestartInjectedContainers, s.Spec.UpdateStrategy.RestartMethod = restart, method
		return s
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		set  *revision.ConfigMapSet
		want int64
	}{
		{"the pod's user", pod(uid(1000), nil, nil), set(true, ""), 1000},
		{"the containers' common user over the pod's", pod(uid(1000), uid(2000), uid(2000)), set(true, revision.RestartSignal), 2000},
		{"one container without a user takes the pod's", pod(uid(2000), nil, uid(2000)), set(true, ""), 2000},
		{"two users: the sidecar's own", pod(nil, uid(1000), uid(2000)), set(true, ""), SidecarUser},
		{"an undeclared user (the image's): the sidecar's own", pod(nil, nil, uid(1000)), set(true, ""), SidecarUser},
		{"root: the sidecar's own", pod(uid(0), nil), set(true, ""), SidecarUser},
		{"root in one container: the sidecar's own", pod(uid(1000), uid(0)), set(true, ""), SidecarUser},
		{"no injected container: the sidecar's own", pod(uid(1000)), set(true, ""), SidecarUser},
		{"without restarts: the sidecar's own", pod(uid(1000), nil), set(false, ""), SidecarUser},
		{"restarted by another restarter: the sidecar's own", pod(uid(1000), nil), set(true, revision.RestartExternal), SidecarUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sidecarUser(tt.pod, tt.set); got != tt.want {
				t.Errorf("sidecarUser = %d, want %d", got, tt.want)
			}
		})
	}
}
