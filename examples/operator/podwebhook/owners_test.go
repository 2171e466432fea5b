package podwebhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/ranktable"
)

// The webhook mounts a LeaderWorkerSet group's table in the pods of an annotated
// LeaderWorkerSet, found by the set's name label (their controller is a
// StatefulSet). A pod whose group labels LWS's own webhook has not set yet is
// left as it is (this webhook is called again after LWS's), as is a pod of a set
// without the annotation, of no set of that name, or of a kind not configured.
func TestMutatorServesLeaderWorkerSetPods(t *testing.T) {
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	lws := func(name string, annotated bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(owners.LeaderWorkerSet.GVK)
		u.SetNamespace("ns")
		u.SetName(name)
		if annotated {
			u.SetAnnotations(map[string]string{ranktable.AnnotationTemplate: "ascend-ranktable-template-vllm-group"})
		}
		return u
	}
	var objs []client.Object
	for _, cm := range ranktable.LibraryConfigMaps() {
		cm.Namespace = ranktable.DefaultTemplateNamespace
		objs = append(objs, cm)
	}
	objs = append(objs, lws("serve", true), lws("plain", false))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(owners.LeaderWorkerSet.GVK, meta.RESTScopeNamespace)
	for gvk := range scheme.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
	pod := func(labels ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "serve-1-2", Labels: map[string]string{}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "engine"}}}}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		kinds []owners.Preset
		pod   *corev1.Pod
		want  string // the ConfigMap mounted, "" for none
	}{
		{"a pod with its group labels mounts its group's table", []owners.Preset{owners.LeaderWorkerSet},
			pod(owners.LWSNameLabel, "serve", owners.LWSGroupIndexLabel, "1"), "serve-1-ranktable"},
		{"a pod without them yet is left as it is", []owners.Preset{owners.LeaderWorkerSet},
			pod(owners.LWSNameLabel, "serve"), ""},
		{"a pod of a set without the annotation", []owners.Preset{owners.LeaderWorkerSet},
			pod(owners.LWSNameLabel, "plain", owners.LWSGroupIndexLabel, "1"), ""},
		{"a pod of no set of that name", []owners.Preset{owners.LeaderWorkerSet},
			pod(owners.LWSNameLabel, "gone", owners.LWSGroupIndexLabel, "1"), ""},
		{"LeaderWorkerSet not configured", nil,
			pod(owners.LWSNameLabel, "serve", owners.LWSGroupIndexLabel, "1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &podwebhook.Mutator{Client: c, TemplateNamespace: ranktable.DefaultTemplateNamespace, Owners: tc.kinds,
				SidecarImage: operator.DefaultSidecarImage, SidecarResources: podwebhook.DefaultSidecarResources, KubeVersion: "v1.36.0"}
			got, err := m.Mutate(context.Background(), tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			mounted := ""
			for _, v := range got.Spec.Volumes {
				if v.Name == ranktable.VolumeName && v.ConfigMap != nil {
					mounted = v.ConfigMap.Name
				}
			}
			if mounted != tc.want {
				t.Errorf("mounted %q, want %q", mounted, tc.want)
			}
			again, err := m.Mutate(context.Background(), got)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("a second call changed the pod:\n%v\n%v", got, again)
			}
		})
	}
}
