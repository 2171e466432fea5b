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
