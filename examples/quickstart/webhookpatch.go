package main

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// This file holds the webhookpatch section: the JSON patch a mutating webhook returns.

func webhookPatch(w io.Writer) error {
	// The pod kthena creates for worker 0, before admission.
	pod := designPod(0, false)
	pod.Labels["app"] = "engine"
	fmt.Fprintf(w, "pod %s/%s arrives at the mutating webhook, which injects:\n", pod.Namespace, pod.Name)

	mutated := pod.DeepCopy()
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		return err
	}
	cmName, err := ranktable.PodConfigMapName(&designOwner, tmpl, ranktable.Grouping{SingleGroup: true}, pod)
	if err != nil {
		return err
	}
	if _, err := ranktable.Inject(mutated, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl}); err != nil {
		return err
	}
	fmt.Fprintf(w, "  - the ranktable ConfigMap %s, its wait init container and mount\n", cmName)

	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "engine-config"},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "engine"}},
			Data:       map[string]string{"settings.yaml": "max_batch: 8\n"},
			Containers: []revision.ContainerInjectSpec{{Name: "inference", MountPath: "/etc/engine"}},
		},
	}
	res, err := revision.Inject(mutated, revision.InjectInput{
		Set: set, KubeVersion: "v1.31.0", Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: now,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  - the ConfigMapSet %s files (revision %s) with its reload sidecar\n", set.Name, res.Revision)
	if errs := webhookpatch.Validate(mutated); len(errs) > 0 {
		return errs.ToAggregate()
	}

	ops, err := webhookpatch.Diff(pod, mutated)
	if err != nil {
		return err
	}
	patch, patchType, err := webhookpatch.Patch(ops)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "patch (%s, %d bytes), one operation per line, long values cut:\n", *patchType, len(patch))
	for _, op := range ops {
		b, err := json.Marshal(op.Value)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-6s %-36s %s\n", op.Op, op.Path, cut(string(b), 90))
	}

	// Webhooks are re-invoked: running the same injection again changes nothing.
	again := mutated.DeepCopy()
	if _, err := ranktable.Inject(again, ranktable.InjectOptions{ConfigMapName: cmName, Template: tmpl}); err != nil {
		return err
	}
	if _, err := revision.Inject(again, revision.InjectInput{
		Set: set, KubeVersion: "v1.31.0", Sidecar: revision.SidecarOptions{Image: "configmapset-reload:1"}, Now: now,
	}); err != nil {
		return err
	}
	ops, err = webhookpatch.Diff(mutated, again)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "second invocation: %d operations\n", len(ops))
	return nil
}

// cut shortens s to n bytes, saying how long it was.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:n], len(s))
}
