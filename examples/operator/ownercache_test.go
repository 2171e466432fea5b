package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// TestForeignOwnersReadFromTheCache runs the operator with
// --ranktable-owner=leaderworkerset and watches its requests for
// LeaderWorkerSets. Once the owner is in its cache, serving the owner's pods
// (the webhook mounting their table, the controller writing it, a template
// change regenerating it) sends no GET or LIST of LeaderWorkerSets to the API
// server: the controller and the webhook read them from the informer the
// manager's cache keeps. A pod of an owner whose watch event has not reached
// the cache yet is still mounted: the webhook reads that owner from the API
// server, exactly once.
func TestForeignOwnersReadFromTheCache(t *testing.T) {
	ctx := context.Background()
	reqs := &testenv.ResourceReads{Resource: "leaderworkersets"}
	restartManager(t, &managerOptions{owners: []owners.Preset{owners.ExampleModelServing, owners.LeaderWorkerSet}, transport: reqs.Wrap})
	t.Cleanup(func() { restartManager(t, nil) })
	// Only the LeaderWorkerSet webhook sees the pods: one call each.
	ns := newNamespace(t, podwebhook.LabelNamespaceInjection, "-")

	// A template of the test's own, to change it later.
	tmpl, _ := ranktable.LibraryConfigMap(ranktable.LibraryVLLMGroup)
	tmpl.Namespace = ranktable.DefaultTemplateNamespace
	tmpl.Name = "owner-cache-" + ns
	if err := admin.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, tmpl) })

	newLWS(t, ns, "serve", tmpl.Name, 1, 2)
	// The controller has planned the owner: it is in the cache.
	eventually(t, "the group's table is written", func() error {
		return admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "serve-0-ranktable"}, &corev1.ConfigMap{})
	})
	reqs.Take()

	for w := range 2 {
		pod := newLWSPod(t, ns, "serve", 0, w)
		if got := mountedTable(pod); got != "serve-0-ranktable" {
			t.Fatalf("pod %s mounts %q, want serve-0-ranktable", pod.Name, got)
		}
	}
	annotate(t, ns, "serve-0", deviceAnnotation("serve-0", "10.0.0.1", "192.168.1", 0))
	annotate(t, ns, "serve-0-1", deviceAnnotation("serve-0-1", "10.0.0.2", "192.168.2", 0))
	tableHas(t, ns, "serve-0-ranktable", `"status": "completed"`)
	// Only the template-change mapper (listing the owners) regenerates the table
	// with the template's new content.
	tmpl.Data[ranktable.KeyRanktableTemplate] = strings.Replace(tmpl.Data[ranktable.KeyRanktableTemplate], `"version": "1.0"`, `"version": "1.1"`, 1)
	if err := admin.Update(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	tableHas(t, ns, "serve-0-ranktable", `"version": "1.1"`)
	if gets, lists := reqs.Counts(); gets != 0 || lists != 0 {
		t.Errorf("in the steady state the operator sent %d GETs and %d LISTs of LeaderWorkerSets to the API server, want none", gets, lists)
	}

	// The owner's watch event is held back: the cache does not have it when its
	// pod comes.
	reqs.Take()
	reqs.Hold()
	newLWS(t, ns, "late", tmpl.Name, 1, 1)
	pod := newLWSPod(t, ns, "late", 0, 0)
	reqs.Release()
	if got := mountedTable(pod); got != "late-0-ranktable" {
		t.Errorf("a pod of an owner not in the cache yet mounts %q, want late-0-ranktable", got)
	}
	annotate(t, ns, "late-0", deviceAnnotation("late-0", "10.0.0.3", "192.168.3", 0))
	tableHas(t, ns, "late-0-ranktable", `"status": "completed"`)
	if gets, lists := reqs.Counts(); gets != 1 || lists != 0 {
		t.Errorf("for a pod of an owner not in the cache the operator sent %d GETs and %d LISTs of LeaderWorkerSets, want 1 GET (the webhook's) and no LIST", gets, lists)
	}
}

// newLWS creates a LeaderWorkerSet of groups groups of size pods, annotated with
// the ranktable template tmpl.
func newLWS(t *testing.T, ns, name, tmpl string, groups, size int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": groups, "leaderWorkerTemplate": map[string]any{"size": size}},
	}}
	u.SetGroupVersionKind(owners.LeaderWorkerSet.GVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(map[string]string{ranktable.AnnotationTemplate: tmpl})
	if err := admin.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// newLWSPod creates worker w of group g of the LeaderWorkerSet set, labelled as
// LWS labels it, and returns it as admitted.
func newLWSPod(t *testing.T, ns, set string, g, w int) *corev1.Pod {
	t.Helper()
	name := fmt.Sprintf("%s-%d", set, g)
	if w > 0 {
		name = fmt.Sprintf("%s-%d", name, w)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
		owners.LWSNameLabel: set, owners.LWSGroupIndexLabel: fmt.Sprint(g), owners.LWSWorkerIndexLabel: fmt.Sprint(w),
		owners.LWSRevisionLabel: "r1",
	}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "busybox:1.36"}}}}
	if err := admin.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// mountedTable is the name of the ranktable ConfigMap pod mounts ("" for none).
func mountedTable(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == ranktable.VolumeName && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// tableHas waits until the ConfigMap's table contains want.
func tableHas(t *testing.T, ns, name, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("table %s has %s", name, want), func() error {
		var cm corev1.ConfigMap
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &cm); err != nil {
			return err
		}
		if got := cm.Data[ranktable.DefaultFilename]; !strings.Contains(got, want) {
			return fmt.Errorf("table %s: %s", name, trim(got))
		}
		if cm.Labels[ranktable.LabelComponent] != ranktables.ComponentRanktable {
			return fmt.Errorf("ConfigMap %s is not a rank table: labels %v", name, cm.Labels)
		}
		return nil
	})
}
