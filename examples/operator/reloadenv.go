package operator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// Environment variables the webhook gives the reload sidecar besides those
// revision.Inject sets (revision.EnvRevision, EnvHubFile, EnvDataDir).
const (
	// EnvSetName holds the ConfigMapSet's name.
	EnvSetName = "CONFIGMAPSET_NAME"
	// EnvPodName holds the pod's name (downward API).
	EnvPodName = "POD_NAME"
	// EnvPodNamespace holds the pod's namespace (downward API).
	EnvPodNamespace = "POD_NAMESPACE"
)

// injectReloadEnv gives the set's reload sidecar what the reload agent (package
// reload) needs besides what revision.Inject sets: the set's name and, through the
// downward API, the pod's name and namespace, so it can read its pod and mark it
// current. Recorded under the set's injector, so stripping the set strips them too.
// Nothing is done when the pod has no sidecar (injection paused).
func injectReloadEnv(pod *corev1.Pod, set *revision.ConfigMapSet) error {
	name := revision.ReloadSidecarName(set.Name)
	if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == name }) &&
		!slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
		return nil
	}
	inj := webhookpatch.Injector{Name: revision.InjectorName(set.Name)}
	sel := webhookpatch.ContainerSelector{Names: []string{name}}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	for _, e := range []corev1.EnvVar{
		{Name: EnvSetName, Value: set.Name},
		{Name: EnvPodName, ValueFrom: field("metadata.name")},
		{Name: EnvPodNamespace, ValueFrom: field("metadata.namespace")},
	} {
		if _, err := inj.EnsureEnv(pod, e, sel); err != nil {
			return err
		}
	}
	return nil
}
