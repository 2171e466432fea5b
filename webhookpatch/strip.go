package webhookpatch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Strip removes everything the record says this injector injected, and its record
// entry. A pod injected from scratch and then stripped is equal to the pod before
// injection, apart from nil-versus-empty lists and maps, which encode to the same JSON.
// Items that are recorded but no longer present are ignored. If a volume this
// injector injected is still mounted by a container or mount that is not its own (the
// user's, or another injector's), Strip returns an error and leaves the pod unchanged.
func (in Injector) Strip(pod *corev1.Pod) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	work := pod.DeepCopy()
	items := make([]string, 0, len(rec[in.Name]))
	for item := range rec[in.Name] {
		items = append(items, item)
	}
	if len(items) == 0 {
		return false, nil
	}
	sort.Strings(items)
	pod, orig := work, pod
	for _, item := range items {
		kind, rest, _ := strings.Cut(item, "/")
		switch kind {
		case "volume":
			pod.Spec.Volumes = deleteNamed(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == rest })
		case "initContainer":
			pod.Spec.InitContainers = deleteNamed(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == rest })
		case "container":
			pod.Spec.Containers = deleteNamed(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == rest })
		case "mount", "env":
			container, key, _ := strings.Cut(rest, "/")
			for _, c := range allContainers(pod) {
				if c.Name != container {
					continue
				}
				if kind == "mount" {
					c.VolumeMounts = deleteNamed(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == key })
				} else {
					c.Env = deleteNamed(c.Env, func(e corev1.EnvVar) bool { return e.Name == key })
				}
			}
		case "annotation":
			delete(pod.Annotations, rest)
		case "label":
			delete(pod.Labels, rest)
			if len(pod.Labels) == 0 {
				pod.Labels = nil
			}
		}
	}
	delete(rec, in.Name)
	writeRecord(pod, rec)
	if err := danglingMounts(pod); err != nil {
		return false, fmt.Errorf("%s: strip %q: %w", podRef(orig), in.Name, err)
	}
	*orig = *pod
	return true, nil
}

// danglingMounts reports the first volume mount whose volume the pod does not have.
func danglingMounts(pod *corev1.Pod) error {
	for _, c := range allContainers(pod) {
		for _, m := range c.VolumeMounts {
			if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
				return fmt.Errorf("container %q still mounts volume %q at %s, which the injector does not own", c.Name, m.Name, m.MountPath)
			}
		}
	}
	return nil
}

func deleteNamed[T any](list []T, match func(T) bool) []T {
	list = slices.DeleteFunc(list, match)
	if len(list) == 0 {
		return nil
	}
	return list
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
