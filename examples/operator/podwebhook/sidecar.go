package podwebhook

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// DefaultSidecarResources are the reload sidecar's requests and limits the operator
// gives Mutator.SidecarResources unless configured otherwise: the agent reads a few objects every two seconds
// and writes the set's files.
var DefaultSidecarResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
}

// SidecarUser is the user and group id the reload sidecar runs as (the nonroot user
// of distroless images, which ko builds on). The files it writes are world-readable,
// so containers running as any user can read them. When the set restarts its
// injected containers by signal and they all declare one non-root user
// (securityContext.runAsUser of the containers or the pod), the sidecar runs as that
// user instead, so that it may signal them.
const SidecarUser = 65532

// sidecarSecurityContext meets the restricted Pod Security Standard on its own,
// whatever the pod sets: non-root (user uid, group SidecarUser), no privilege
// escalation, no capabilities, the runtime's default seccomp profile, and a read-only
// root filesystem (the agent writes only into the set's emptyDir).
func sidecarSecurityContext(uid int64) *corev1.SecurityContext {
	yes, no, gid := true, false, int64(SidecarUser)
	return &corev1.SecurityContext{
		RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &gid,
		AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// finishConfigMapSetPod completes the set's injection: the reload sidecar's
// security context, and the label that lets the ConfigMapSet controller see the pod.
// Nothing is done when the pod has no sidecar of the set (injection paused).
func finishConfigMapSetPod(pod *corev1.Pod, set *revision.ConfigMapSet) error {
	name := revision.ReloadSidecarName(set.Name)
	var sidecar *corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				sidecar = &list[i]
			}
		}
	}
	if sidecar == nil {
		return nil
	}
	// The container is the set's own (revision.Inject checked that): its security
	// context is set here rather than through the injector, which records the
	// container revision.Inject builds.
	sidecar.SecurityContext = sidecarSecurityContext(sidecarUser(pod, set))
	inj := webhookpatch.Injector{Name: revision.InjectorName(set.Name)}
	_, err := inj.EnsureLabel(pod, LabelConfigMapSetPod, "true")
	return err
}

// sidecarUser is the user the reload sidecar runs as: SidecarUser, unless the set
// restarts its injected containers by signal and every one of them declares one
// non-root user (its securityContext.runAsUser, else the pod's), which the sidecar
// then takes: the kernel lets a process signal, and read the environment of, only
// processes of its own user (without capabilities the sidecar does not get).
func sidecarUser(pod *corev1.Pod, set *revision.ConfigMapSet) int64 {
	us := set.Spec.UpdateStrategy
	if !us.RestartInjectedContainers || us.RestartMethod == revision.RestartExternal {
		return SidecarUser
	}
	var podUser *int64
	if pod.Spec.SecurityContext != nil {
		podUser = pod.Spec.SecurityContext.RunAsUser
	}
	vol, name := revision.VolumeName(set.Name), revision.ReloadSidecarName(set.Name)
	var user *int64
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol }) {
				continue
			}
			u := podUser
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				u = c.SecurityContext.RunAsUser
			}
			if u == nil || *u == 0 || (user != nil && *u != *user) {
				return SidecarUser // unknown (the image's), root or several users
			}
			user = u
		}
	}
	if user == nil {
		return SidecarUser
	}
	return *user
}
