package webhookpatch

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ContainerSelector picks the containers that [Injector.EnsureVolumeMount] and
// [Injector.EnsureEnv] change.
//
//   - Names empty: every app container (spec.containers), plus every init container
//     when IncludeInit is set, except containers another Injector added (those
//     [RecordAnnotation] lists under another injector's name, such as a sidecar of
//     another webhook): an injector's mounts and env vars are for the user's
//     containers, and a sidecar that another webhook puts among the app containers
//     (OpenKruise launch priority, before Kubernetes 1.29) must not get them when the
//     webhooks are invoked again. Containers this injector added are selected.
//   - Names set: exactly the named containers, app or init, whoever added them; a name
//     the pod does not have is an error.
//   - Exclude removes names from either selection (for example this injector's own
//     sidecar).
//
// Containers added by webhooks that do not record what they inject cannot be told
// apart from the user's; name the containers to be sure.
//
// Containers are changed in pod order: init containers first, then app containers.
type ContainerSelector struct {
	// Names are the containers to select; empty selects every app container.
	Names []string
	// Exclude are containers never selected.
	Exclude []string
	// IncludeInit adds the init containers when Names is empty.
	IncludeInit bool
}

// target is one selected container: its field path and a pointer into the pod.
type target struct {
	field string
	c     *corev1.Container
}

// targets returns the containers s selects in pod for injector, whose record is rec.
func (s ContainerSelector) targets(pod *corev1.Pod, rec record, injector string) ([]target, error) {
	var out []target
	pick := func(field, kind string, list []corev1.Container, defaultOn bool) {
		for i := range list {
			name := list[i].Name
			on := defaultOn && !rec.addedByOther(injector, kind+name)
			if len(s.Names) > 0 {
				on = slices.Contains(s.Names, name)
			}
			if on && !slices.Contains(s.Exclude, name) {
				out = append(out, target{field: field + "[" + name + "]", c: &list[i]})
			}
		}
	}
	pick("spec.initContainers", "initContainer/", pod.Spec.InitContainers, s.IncludeInit)
	pick("spec.containers", "container/", pod.Spec.Containers, true)
	for _, n := range s.Names {
		if !slices.ContainsFunc(out, func(t target) bool { return t.c.Name == n }) && !slices.Contains(s.Exclude, n) {
			return nil, fmt.Errorf("%s: container %q: no such container", podRef(pod), n)
		}
	}
	return out, nil
}

// EnsureVolumeMount makes every selected container mount m. The volume must exist in
// the pod. A mount at the same mountPath that differs (another volume, subPath or
// readOnly) and was not injected by this injector is a conflict. Either every selected
// container is changed or none is. A mountPath that is not valid UTF-8 is used as the
// API server stores it (U+FFFD for every invalid byte), so the mount is found again on
// the stored pod.
func (in Injector) EnsureVolumeMount(pod *corev1.Pod, m corev1.VolumeMount, sel ContainerSelector) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	m.MountPath = storedString(m.MountPath)
	if m.MountPath == "" {
		return false, fmt.Errorf("%s: volume mount %q: empty mountPath", podRef(pod), m.Name)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
		return false, fmt.Errorf("%s: volume mount %s: the pod has no volume %q", podRef(pod), m.MountPath, m.Name)
	}
	return in.ensureInContainers(pod, rec, sel, "mount", m.MountPath, contentHash(m),
		func(c *corev1.Container) int {
			return slices.IndexFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return storedString(x.MountPath) == m.MountPath })
		},
		func(c *corev1.Container, i int) bool { return reflect.DeepEqual(c.VolumeMounts[i], m) },
		func(c *corev1.Container, i int) {
			if i < 0 {
				c.VolumeMounts = append(c.VolumeMounts, m)
			} else {
				c.VolumeMounts[i] = m
			}
		},
		func(c *corev1.Container, i int) string {
			return fmt.Sprintf("mountPath %s is already used by volume %q", m.MountPath, c.VolumeMounts[i].Name)
		})
}

// EnsureEnv makes every selected container have env var e. A same-named variable that
// differs and was not injected by this injector is a conflict. Either every selected
// container is changed or none is. A name the API server rejects is an error: it must
// be printable ASCII without '=', the rule of Kubernetes 1.34 and later (relaxed
// environment variable names; API servers before 1.32, or with the
// RelaxedEnvironmentVariableValidation feature gate off, accept only C-identifier-like
// names such as MY_VAR, my.var and my-var).
func (in Injector) EnsureEnv(pod *corev1.Pod, e corev1.EnvVar, sel ContainerSelector) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	if msgs := envNameErrors(e.Name); len(msgs) > 0 {
		return false, fmt.Errorf("%s: env var %q: %s", podRef(pod), e.Name, strings.Join(msgs, "; "))
	}
	e = *e.DeepCopy()
	return in.ensureInContainers(pod, rec, sel, "env", e.Name, contentHash(e),
		func(c *corev1.Container) int {
			return slices.IndexFunc(c.Env, func(x corev1.EnvVar) bool { return x.Name == e.Name })
		},
		func(c *corev1.Container, i int) bool { return reflect.DeepEqual(c.Env[i], e) },
		func(c *corev1.Container, i int) {
			if i < 0 {
				c.Env = append(c.Env, *e.DeepCopy())
			} else {
				c.Env[i] = *e.DeepCopy()
			}
		},
		func(c *corev1.Container, i int) string {
			return fmt.Sprintf("env var %s is already set differently", e.Name)
		})
}

// envNameErrors says why name cannot be an environment variable name (or an envFrom
// prefix), as the API server of Kubernetes 1.34 and later judges it: it must be
// non-empty printable ASCII without '='.
func envNameErrors(name string) []string { return validation.IsRelaxedEnvVarName(name) }

// checkContainerEnv returns an error naming the first env var name or envFrom prefix
// of c that the API server rejects (see envNameErrors).
func checkContainerEnv(pod *corev1.Pod, c *corev1.Container) error {
	for i, e := range c.Env {
		if msgs := envNameErrors(e.Name); len(msgs) > 0 {
			return fmt.Errorf("%s: container %q: env[%d].name %q: %s", podRef(pod), c.Name, i, e.Name, strings.Join(msgs, "; "))
		}
	}
	for i, e := range c.EnvFrom {
		if msgs := envNameErrors(e.Prefix); e.Prefix != "" && len(msgs) > 0 {
			return fmt.Errorf("%s: container %q: envFrom[%d].prefix %q: %s", podRef(pod), c.Name, i, e.Prefix, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// ensureInContainers is the shared two-phase walk of EnsureVolumeMount and EnsureEnv:
// check every selected container first, then change them, so a conflict changes
// nothing.
func (in Injector) ensureInContainers(pod *corev1.Pod, rec record, sel ContainerSelector, kind, key, hash string,
	find func(*corev1.Container) int, equal func(*corev1.Container, int) bool,
	put func(*corev1.Container, int), describe func(*corev1.Container, int) string) (bool, error) {
	targets, err := sel.targets(pod, rec, in.Name)
	if err != nil {
		return false, err
	}
	type change struct {
		t    target
		at   int
		item string
	}
	var changes []change
	for _, t := range targets {
		item := kind + "/" + t.c.Name + "/" + key
		i := find(t.c)
		switch {
		case i < 0:
		case rec.injected(in.Name, item, hash):
			continue // ours as injected; fields the API server defaulted stay
		case equal(t.c, i):
			if !rec.owns(in.Name, item) || rec.hash(in.Name, item) == hash {
				continue
			}
		case rec.owns(in.Name, item):
		default:
			return false, in.conflict(pod, t.field, "%s", describe(t.c, i))
		}
		changes = append(changes, change{t, i, item})
	}
	if len(changes) == 0 {
		return false, nil
	}
	for _, ch := range changes {
		rec.set(in.Name, ch.item, hash)
	}
	if err := checkAnnotationSize(pod, rec, "", ""); err != nil {
		return false, err
	}
	for _, ch := range changes {
		put(ch.t.c, ch.at)
	}
	writeRecord(pod, rec)
	return true, nil
}
