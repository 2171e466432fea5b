package webhookpatch_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/webhookpatch"
)

// TestMergePodSpecReportsMissingTargetContainer: an override naming a container the
// runtime lacks is the invalid spec KServe reports ("failed to find ... in
// ServingRuntime containers"), not a container silently added.
func TestMergePodSpecReportsMissingTargetContainer(t *testing.T) {
	runtime := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "storage-initializer", Image: "init"}},
		Containers:     []corev1.Container{{Name: "kserve-container", Image: "runtime"}},
	}
	for _, tc := range []struct {
		name, want string
		user       corev1.PodSpec
	}{
		{"a target container the runtime lacks", "containers[inferenceservice-container]",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "inferenceservice-container", Args: []string{"-x"}}}}},
		{"an extra container beside the runtime's", "containers[sidecar]",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "kserve-container"}, {Name: "sidecar", Image: "s"}}}},
		{"an init container the runtime lacks", "initContainers[fetch]",
			corev1.PodSpec{InitContainers: []corev1.Container{{Name: "fetch", Image: "f"}}}},
	} {
		t.Run(tc.name+" is an invalid spec", func(t *testing.T) {
			_, err := webhookpatch.MergePodSpec(runtime, tc.user, webhookpatch.MergePolicy{})
			if !errors.Is(err, webhookpatch.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "failed to find") {
				t.Fatalf("err = %v, want ErrInvalidSpec naming %s", err, tc.want)
			}
		})
		t.Run(tc.name+" is added with AllowNewContainers", func(t *testing.T) {
			got, err := webhookpatch.MergePodSpec(runtime, tc.user, webhookpatch.MergePolicy{AllowNewContainers: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(got.Containers) + len(got.InitContainers); n <= 2 {
				t.Errorf("merged spec has %d containers, want the new one added", n)
			}
		})
	}
	t.Run("an override without containers keeps the runtime's", func(t *testing.T) {
		user := corev1.PodSpec{NodeSelector: map[string]string{"accelerator": "ascend-910b"}}
		got, err := webhookpatch.MergePodSpec(runtime, user, webhookpatch.MergePolicy{})
		if err != nil || len(got.Containers) != 1 || len(got.InitContainers) != 1 || got.NodeSelector["accelerator"] != "ascend-910b" {
			t.Fatalf("merged containers %+v, init %+v, nodeSelector %v, err %v", got.Containers, got.InitContainers, got.NodeSelector, err)
		}
	})
	t.Run("overriding only the runtime's containers merges", func(t *testing.T) {
		user := corev1.PodSpec{Containers: []corev1.Container{{Name: "kserve-container", Args: []string{"-b"}}}}
		got, err := webhookpatch.MergePodSpec(runtime, user, webhookpatch.MergePolicy{})
		if err != nil || len(got.Containers) != 1 || got.Containers[0].Image != "runtime" {
			t.Fatalf("merged %+v, err %v", got.Containers, err)
		}
	})
}
