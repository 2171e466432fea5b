package webhookpatch

import (
	"encoding/json"
	"fmt"
	"testing"

	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realisticPod has the given number of containers, 20 volumes (spread over the
// containers' mounts) and 50 env vars per container, resources and probes: the shape
// of a large inference pod.
func realisticPod(containers int) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "qwen-72b-0-prefill-0-0",
			Labels:      map[string]string{"modelserving.volcano.sh/name": "qwen-72b", "modelserving.volcano.sh/role": "prefill"},
			Annotations: map[string]string{"ascend.com/ranktable": `{"pod_name":"qwen-72b-0-prefill-0-0"}`}},
	}
	for v := 0; v < 20; v++ {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("vol-%d", v), VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%d", v)}}}})
	}
	for c := 0; c < containers; c++ {
		ctr := corev1.Container{
			Name: fmt.Sprintf("container-%d", c), Image: "registry.example.com/mindie:2.0.RC1",
			Command: []string{"/bin/bash", "-c"}, Args: []string{"exec mindieservice_daemon"},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"huawei.com/Ascend910": resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("512Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health"}}},
		}
		for e := 0; e < 50; e++ {
			ctr.Env = append(ctr.Env, corev1.EnvVar{Name: fmt.Sprintf("ENV_%d", e), Value: fmt.Sprintf("value-%d", e)})
		}
		for v := c * 2; v < c*2+2 && v < 20; v++ {
			ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: fmt.Sprintf("vol-%d", v), MountPath: fmt.Sprintf("/mnt/%d", v)})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, ctr)
	}
	return pod
}

// injectedPair returns a realistic pod and the same pod after injecting one native
// sidecar, one volume and a mount in every app container.
func injectedPair(b *testing.B, containers int) (*corev1.Pod, *corev1.Pod) {
	before := realisticPod(containers)
	after := before.DeepCopy()
	in := Injector{Name: "configmapset-model"}
	steps := []func() (bool, error){
		func() (bool, error) {
			return in.EnsureVolume(after, corev1.Volume{Name: "cms-files", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		},
		func() (bool, error) {
			return in.EnsureSidecar(after, corev1.Container{Name: "reload", Image: "reloader:1"}, SidecarNative)
		},
		func() (bool, error) {
			return in.EnsureVolumeMount(after, corev1.VolumeMount{Name: "cms-files", MountPath: "/etc/model-config"}, ContainerSelector{})
		},
	}
	for _, s := range steps {
		if _, err := s(); err != nil {
			b.Fatal(err)
		}
	}
	return before, after
}

func BenchmarkDiff(b *testing.B) {
	before, after := injectedPair(b, 10)
	b.Run("containers=10", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ops, err := Diff(before, after)
			if err != nil || len(ops) == 0 {
				b.Fatal(err)
			}
			if _, _, err := Patch(ops); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDiffJSON is the baseline: what controller-runtime's PatchResponseFromRaw
// does (marshal both objects, diff the JSON with gomodules.xyz/jsonpatch/v2, marshal
// the operations).
func BenchmarkDiffJSON(b *testing.B) {
	before, after := injectedPair(b, 10)
	b.Run("containers=10", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bj, err := json.Marshal(before)
			if err != nil {
				b.Fatal(err)
			}
			aj, err := json.Marshal(after)
			if err != nil {
				b.Fatal(err)
			}
			ops, err := gomodulesjsonpatch.CreatePatch(bj, aj)
			if err != nil || len(ops) == 0 {
				b.Fatal(err)
			}
			if _, err := json.Marshal(ops); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBenchmarkPatchesAgree checks that both benchmarked paths produce patches that
// turn before into after, so the comparison is between equivalent results.
func TestBenchmarkPatchesAgree(t *testing.T) {
	before, after := injectedPair(&testing.B{}, 10)
	applyDiff(t, before, after) // ours: Diff + Patch, applied and compared

	// The baseline's: the same steps as BenchmarkDiffJSON, applied the same way.
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	ops, err := gomodulesjsonpatch.CreatePatch(bj, aj)
	if err != nil || len(ops) == 0 {
		t.Fatalf("baseline: %d operations, %v", len(ops), err)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("baseline patch does not decode: %v", err)
	}
	got, err := p.Apply(bj)
	if err != nil {
		t.Fatalf("baseline patch does not apply: %v", err)
	}
	if !jsonpatch.Equal(got, aj) {
		t.Fatalf("the baseline's patch does not turn before into after")
	}
}
