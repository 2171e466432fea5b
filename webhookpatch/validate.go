package webhookpatch

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks the invariants a mutated pod must keep for the API server to accept
// it. It is not the API server's full pod validation; it covers what a mutation can
// break:
//
//   - container names (init and app together) are unique DNS-1123 labels;
//   - env var names and envFrom prefixes are printable ASCII without '=' (the rule of
//     Kubernetes 1.34 and later, see [Injector.EnsureEnv]);
//   - volume names are unique DNS-1123 labels;
//   - every volume mount names an existing volume and has a mountPath, unique within
//     its container;
//   - init containers have probes or lifecycle hooks only with restartPolicy Always;
//   - annotation keys are qualified names and all annotations together (keys plus
//     values) are at most Kubernetes' limit, [apivalidation.TotalAnnotationSizeLimitB]
//     (256 KiB); labels are valid keys and values.
//
// The error list is in pod order and names each field with its path.
func Validate(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	if pod == nil {
		return field.ErrorList{field.Required(field.NewPath("pod"), "nil pod")}
	}
	meta := field.NewPath("metadata")
	errs = append(errs, apivalidation.ValidateAnnotations(pod.Annotations, meta.Child("annotations"))...)
	errs = append(errs, metav1validation.ValidateLabels(pod.Labels, meta.Child("labels"))...)

	spec := field.NewPath("spec")
	volumes := map[string]bool{}
	for i, v := range pod.Spec.Volumes {
		p := spec.Child("volumes").Index(i).Child("name")
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(p, v.Name, msg))
		}
		if volumes[v.Name] {
			errs = append(errs, field.Duplicate(p, v.Name))
		}
		volumes[v.Name] = true
	}

	names := map[string]bool{}
	check := func(list string, containers []corev1.Container, init bool) {
		for i := range containers {
			c := &containers[i]
			p := spec.Child(list).Index(i)
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names[c.Name] = true
			for j, e := range c.Env {
				for _, msg := range envNameErrors(e.Name) {
					errs = append(errs, field.Invalid(p.Child("env").Index(j).Child("name"), e.Name, msg))
				}
			}
			for j, e := range c.EnvFrom {
				if e.Prefix == "" {
					continue
				}
				for _, msg := range envNameErrors(e.Prefix) {
					errs = append(errs, field.Invalid(p.Child("envFrom").Index(j).Child("prefix"), e.Prefix, msg))
				}
			}
			paths := map[string]bool{}
			for j, m := range c.VolumeMounts {
				mp := p.Child("volumeMounts").Index(j)
				if !volumes[m.Name] {
					errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
				}
				if m.MountPath == "" {
					errs = append(errs, field.Required(mp.Child("mountPath"), ""))
				} else if paths[m.MountPath] {
					errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
				}
				paths[m.MountPath] = true
			}
			if init && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				for _, probe := range []struct {
					name string
					set  bool
				}{
					{"livenessProbe", c.LivenessProbe != nil},
					{"readinessProbe", c.ReadinessProbe != nil},
					{"startupProbe", c.StartupProbe != nil},
					{"lifecycle", c.Lifecycle != nil},
				} {
					if probe.set {
						errs = append(errs, field.Forbidden(p.Child(probe.name),
							fmt.Sprintf("may not be set for init containers without restartPolicy %s", corev1.ContainerRestartPolicyAlways)))
					}
				}
			}
		}
	}
	check("initContainers", pod.Spec.InitContainers, true)
	check("containers", pod.Spec.Containers, false)
	return errs
}
