package podwebhook

import (
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
// so containers running as any user can read them.
const SidecarUser = 65532

// sidecarSecurityContext meets the restricted Pod Security Standard on its own,
// whatever the pod sets: non-root, no privilege escalation, no capabilities, the
// runtime's default seccomp profile, and a read-only root filesystem (the agent
// writes only into the set's emptyDir).
func sidecarSecurityContext() *corev1.SecurityContext {
	yes, no, id := true, false, int64(SidecarUser)
	return &corev1.SecurityContext{
		RunAsNonRoot: &yes, RunAsUser: &id, RunAsGroup: &id,
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
	sidecar.SecurityContext = sidecarSecurityContext()
	inj := webhookpatch.Injector{Name: revision.InjectorName(set.Name)}
	_, err := inj.EnsureLabel(pod, LabelConfigMapSetPod, "true")
	return err
}
