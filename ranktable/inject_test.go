package ranktable

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
	corev1 "k8s.io/api/core/v1"
)

func TestInject(t *testing.T) {
	for _, name := range []string{LibraryMindIERole, LibraryVLLMGroup} {
		tm := mustLibrary(t, name, LoadOptions{})
		t.Run("a "+string(tm.Engine)+" pod gets volume, wait container, read-only mounts and env, idempotently", func(t *testing.T) {
			pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine", "proxy"))
			orig := pod.DeepCopy()
			opts := InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tm}
			changed, err := Inject(pod, opts)
			if err != nil || !changed {
				t.Fatalf("changed %v err %v", changed, err)
			}
			if errs := webhookpatch.Validate(pod); len(errs) > 0 {
				t.Fatalf("invalid pod: %v", errs)
			}
			if v := pod.Spec.Volumes; len(v) != 1 || v[0].ConfigMap == nil || v[0].ConfigMap.Name != opts.ConfigMapName {
				t.Errorf("volumes %+v", v)
			}
			ic := pod.Spec.InitContainers
			if len(ic) != 1 || ic[0].Name != InitContainerName || !strings.Contains(ic[0].Command[2], "initializing") ||
				!strings.Contains(ic[0].Command[2], "/etc/ascend/ranktable/ranktable.json") || !strings.Contains(ic[0].Command[2], "sleep 2") {
				t.Fatalf("init containers %+v", ic)
			}
			sc := ic[0].SecurityContext
			if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("security context %+v", sc)
			}
			for _, c := range pod.Spec.Containers {
				var mounted, env bool
				for _, m := range c.VolumeMounts {
					mounted = mounted || (m.Name == VolumeName && m.ReadOnly && m.SubPath == "" && m.MountPath == tm.MountPath)
				}
				for _, e := range c.Env {
					env = env || (e.Name == tm.Engine.EnvVar() && e.Value == "/etc/ascend/ranktable/ranktable.json")
				}
				if !mounted || !env {
					t.Errorf("container %s: mounted %v env %v", c.Name, mounted, env)
				}
			}
			again := pod.DeepCopy()
			changed, err = Inject(again, opts)
			if err != nil || changed {
				t.Fatalf("second injection changed %v err %v", changed, err)
			}
			ops, err := webhookpatch.Diff(pod, again)
			if err != nil || len(ops) != 0 {
				t.Fatalf("second injection diff %v %v", ops, err)
			}
			ops, err = webhookpatch.Diff(orig, pod)
			if err != nil || len(ops) == 0 {
				t.Fatalf("no patch for the first injection: %v", err)
			}
			out, err := json.MarshalIndent(ops, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "inject-"+string(tm.Engine)+".patch.json", append(out, '\n'))
		})
	}
	t.Run("a user volume named ranktable is a conflict", func(t *testing.T) {
		tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
		pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine"),
			podfixture.Volume(corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
		_, err := Inject(pod, InjectOptions{ConfigMapName: "x", Template: tm})
		if !errors.Is(err, webhookpatch.ErrConflict) {
			t.Fatalf("err %v, want a conflict", err)
		}
	})
	t.Run("options are required", func(t *testing.T) {
		if _, err := Inject(podfixture.Pod("default", "p"), InjectOptions{}); err == nil {
			t.Fatal("no error without a template")
		}
	})
}

// A sidecar another webhook put among the app containers (OpenKruise launch priority,
// before Kubernetes 1.29) gets neither the ranktable mount nor its env var, whichever
// webhook runs first, and injecting again changes nothing.
func TestInjectLeavesAnotherInjectorsSidecarAlone(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	opts := InjectOptions{ConfigMapName: "qwen-0-worker-0-ranktable", Template: tm}
	reload := func(pod *corev1.Pod) {
		t.Helper()
		sidecar := corev1.Container{Name: "cms-reload", Image: "reload:v1"}
		if _, err := (webhookpatch.Injector{Name: "configmapset-cms"}).EnsureSidecar(pod, sidecar, webhookpatch.SidecarLaunchPriority); err != nil {
			t.Fatal(err)
		}
	}
	inject := func(pod *corev1.Pod) bool {
		t.Helper()
		changed, err := Inject(pod, opts)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	for _, sidecarFirst := range []bool{true, false} {
		pod := podfixture.Pod("default", "qwen-0", podfixture.Containers("engine"))
		if sidecarFirst {
			reload(pod)
			inject(pod)
		} else {
			inject(pod)
			reload(pod)
		}
		if inject(pod) {
			t.Errorf("sidecar first %v: injecting again changed the pod", sidecarFirst)
		}
		for _, c := range pod.Spec.Containers {
			hasEnv := len(c.Env) == 1 && c.Env[0].Name == tm.Engine.EnvVar()
			hasMount := len(c.VolumeMounts) == 1 && c.VolumeMounts[0].Name == VolumeName
			if want := c.Name == "engine"; hasEnv != want || hasMount != want {
				t.Errorf("sidecar first %v: container %s has env %v and mounts %v; want the ranktable's: %v",
					sidecarFirst, c.Name, c.Env, c.VolumeMounts, want)
			}
		}
	}
}
