package webhookpatch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

// webhook is one mutating webhook: it changes the pod it is given (a copy).
type webhook struct {
	name   string
	mutate func(pod *corev1.Pod) error
}

// ranktableWebhook injects like the ranktable package: a volume, a wait init container,
// and a mount and env var in the default selection (the user's app containers).
func ranktableWebhook() webhook {
	in := Injector{Name: "ranktable"}
	return webhook{"ranktable", func(pod *corev1.Pod) error {
		vol := corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-0-ranktable"}}}}
		if _, err := in.EnsureVolume(pod, vol); err != nil {
			return err
		}
		wait := corev1.Container{Name: "wait-ranktable", Image: "busybox:1.36",
			VolumeMounts: []corev1.VolumeMount{{Name: "ranktable", MountPath: "/etc/ascend/ranktable", ReadOnly: true}}}
		if _, err := in.EnsureInitContainer(pod, wait); err != nil {
			return err
		}
		mount := corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/ascend/ranktable", ReadOnly: true}
		if _, err := in.EnsureVolumeMount(pod, mount, ContainerSelector{}); err != nil {
			return err
		}
		_, err := in.EnsureEnv(pod, corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/etc/ascend/ranktable/ranktable.json"}, ContainerSelector{})
		return err
	}}
}

// reloadWebhook injects like a ConfigMapSet webhook: a data volume, a reload sidecar
// (native from 1.29, first app container with launch priority before), the data mount
// in the user's containers and an env var in its own sidecar only.
func reloadWebhook(kubeVersion string) webhook {
	in := Injector{Name: "configmapset-cms"}
	return webhook{"reload", func(pod *corev1.Pod) error {
		mode, err := SidecarModeFor(kubeVersion)
		if err != nil {
			return err
		}
		vol := corev1.Volume{Name: "cms-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if _, err := in.EnsureVolume(pod, vol); err != nil {
			return err
		}
		sidecar := corev1.Container{Name: "cms-reload", Image: "reload:v1",
			VolumeMounts: []corev1.VolumeMount{{Name: "cms-data", MountPath: "/etc/configmapset/data"}}}
		if _, err := in.EnsureSidecar(pod, sidecar, mode); err != nil {
			return err
		}
		mount := corev1.VolumeMount{Name: "cms-data", MountPath: "/data/conf", ReadOnly: true}
		if _, err := in.EnsureVolumeMount(pod, mount, ContainerSelector{Exclude: []string{"cms-reload"}}); err != nil {
			return err
		}
		_, err = in.EnsureEnv(pod, corev1.EnvVar{Name: "CONFIGMAPSET_NAME", Value: "cms"}, ContainerSelector{Names: []string{"cms-reload"}})
		return err
	}}
}

// admit runs the webhooks in order, again and again, as the API server does with
// reinvocationPolicy IfNeeded, applying each webhook's patch to the stored JSON, until
// a whole round changes nothing. It returns the stored pod and the number of rounds
// that patched anything.
func admit(t *testing.T, pod *corev1.Pod, hooks []webhook) (*corev1.Pod, int) {
	t.Helper()
	const maxRounds = 10
	for round := 1; round <= maxRounds; round++ {
		changed := false
		for _, h := range hooks {
			mutated := pod.DeepCopy()
			if err := h.mutate(mutated); err != nil {
				t.Fatalf("round %d: webhook %s: %v", round, h.name, err)
			}
			if errs := Validate(mutated); len(errs) > 0 {
				t.Fatalf("round %d: webhook %s returned an invalid pod: %v", round, h.name, errs.ToAggregate())
			}
			ops, err := Diff(pod, mutated)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) > 0 {
				changed = true
				if round > 1 {
					t.Errorf("round %d: webhook %s patched again: %v", round, h.name, ops)
				}
			}
			pod = storeThroughAPIServer(t, pod, mutated)
		}
		if !changed {
			return pod, round - 1
		}
	}
	t.Fatalf("no fixed point after %d rounds", maxRounds)
	return nil, 0
}

// envAndMounts lists, per container, the env var names and mount paths it has.
func envAndMounts(pod *corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			var items []string
			for _, e := range c.Env {
				items = append(items, "env "+e.Name)
			}
			for _, m := range c.VolumeMounts {
				items = append(items, "mount "+m.MountPath)
			}
			slices.Sort(items)
			out[c.Name] = items
		}
	}
	return out
}

// Two webhooks re-invoke each other (the ranktable webhook and a ConfigMapSet reload
// webhook) until neither changes the pod. On every version and in either order the
// fixed point is reached after one round, so Kubernetes' single reinvocation suffices,
// and the reload sidecar gets neither the ranktable mount nor its env var: before 1.29
// the sidecar is an app container, and the ranktable webhook's default selection skips
// it because another injector added it.
func TestTwoWebhooksReinvokingEachOtherReachAFixedPoint(t *testing.T) {
	want := map[string][]string{
		"wait-ranktable": {"mount /etc/ascend/ranktable"},
		"cms-reload":     {"env CONFIGMAPSET_NAME", "mount /etc/configmapset/data"},
		"engine":         {"env RANKTABLEFILE", "mount /data/conf", "mount /etc/ascend/ranktable"},
		"proxy":          {"env RANKTABLEFILE", "mount /data/conf", "mount /etc/ascend/ranktable"},
	}
	for _, version := range []string{"v1.27.3", "v1.28.9", "v1.29.0", "v1.31.2"} {
		for _, ranktableFirst := range []bool{true, false} {
			hooks := []webhook{ranktableWebhook(), reloadWebhook(version)}
			if !ranktableFirst {
				slices.Reverse(hooks)
			}
			t.Run(fmt.Sprintf("%s/%s first", version, hooks[0].name), func(t *testing.T) {
				pod, rounds := admit(t, pf.Pod("default", "qwen-0", pf.Containers("engine", "proxy")), hooks)
				if rounds != 1 {
					t.Errorf("the webhooks patched in %d rounds, want 1", rounds)
				}
				if diff := cmp.Diff(want, envAndMounts(pod)); diff != "" {
					t.Errorf("mounts and env vars per container (-want +got):\n%s", diff)
				}
				mode, _ := SidecarModeFor(version)
				inApps := slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "cms-reload" })
				if inApps != (mode == SidecarLaunchPriority) {
					t.Errorf("sidecar among the app containers: %v, want %v (mode %s)", inApps, mode == SidecarLaunchPriority, mode)
				}
			})
		}
	}
}

// A selector that names another injector's container selects it: naming is explicit.
func TestSelectorNamesAnotherInjectorsContainer(t *testing.T) {
	pod, _ := admit(t, pf.Pod("default", "qwen-0", pf.Containers("engine")), []webhook{reloadWebhook("v1.28.9")})
	in := Injector{Name: "ranktable"}
	env := corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/x"}
	if _, err := in.EnsureEnv(pod, env, ContainerSelector{}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.EnsureEnv(pod, env, ContainerSelector{Names: []string{"cms-reload"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"cms-reload": {"env CONFIGMAPSET_NAME", "env RANKTABLEFILE", "mount /etc/configmapset/data"},
		"engine":     {"env RANKTABLEFILE", "mount /data/conf"},
	}
	if diff := cmp.Diff(want, envAndMounts(pod)); diff != "" {
		t.Errorf("mounts and env vars per container (-want +got):\n%s", diff)
	}
}
