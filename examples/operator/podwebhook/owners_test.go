package podwebhook_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

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
				OwnerCache: &ownerCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme}, reader: c}, APIReader: c,
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

// The webhook reads a foreign owner from the owner cache; the API server only
// when the cache does not have it: its informer has not synced yet (a replica
// starting), or the owner's watch event has not reached it (a pod of a
// just-created owner). Then it reads the API server exactly once, and mounts the
// table rather than admitting the pod without it.
func TestMutatorReadsOwnersFromTheCache(t *testing.T) {
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	lws := &unstructured.Unstructured{}
	lws.SetGroupVersionKind(owners.LeaderWorkerSet.GVK)
	lws.SetNamespace("ns")
	lws.SetName("serve")
	lws.SetAnnotations(map[string]string{ranktable.AnnotationTemplate: "ascend-ranktable-template-vllm-group"})
	var templates []client.Object
	for _, cm := range ranktable.LibraryConfigMaps() {
		cm.Namespace = ranktable.DefaultTemplateNamespace
		templates = append(templates, cm)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(owners.LeaderWorkerSet.GVK, meta.RESTScopeNamespace)
	for gvk := range scheme.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	// world returns a client holding the templates and, with owner, the set.
	world := func(owner bool) client.Client {
		objs := slices.Clone(templates)
		if owner {
			objs = append(objs, lws.DeepCopy())
		}
		return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "serve-0-1",
		Labels: map[string]string{owners.LWSNameLabel: "serve", owners.LWSGroupIndexLabel: "0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "engine"}}}}
	for _, tc := range []struct {
		name           string
		inCache, inAPI bool
		synced         bool
		want           string // the ConfigMap mounted, "" for none
		cacheGets      int    // owner reads served by the cache
		apiGets        int    // owner reads sent to the API server
	}{
		{"an owner in the cache is read from it alone", true, true, true, "serve-0-ranktable", 1, 0},
		{"an owner not in the cache yet is read from the API server once", false, true, true, "serve-0-ranktable", 1, 1},
		{"while the cache syncs, the API server is read once and the cache not waited for", false, true, false, "serve-0-ranktable", 0, 1},
		{"an owner in neither: one API read, nothing mounted", false, false, true, "", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc := &ownerCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme}, reader: world(tc.inCache)}
			if !tc.synced {
				oc.InformersByGVK = map[schema.GroupVersionKind]toolscache.SharedIndexInformer{owners.LeaderWorkerSet.GVK: controllertest.NewFakeInformer()}
			}
			api := &countingReader{Reader: world(tc.inAPI)}
			m := &podwebhook.Mutator{Client: world(tc.inCache), TemplateNamespace: ranktable.DefaultTemplateNamespace,
				Owners: []owners.Preset{owners.LeaderWorkerSet}, OwnerCache: oc, APIReader: api,
				SidecarImage: operator.DefaultSidecarImage, SidecarResources: podwebhook.DefaultSidecarResources, KubeVersion: "v1.36.0"}
			got, err := m.Mutate(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			if mounted := mountedTable(got); mounted != tc.want {
				t.Errorf("mounted %q, want %q", mounted, tc.want)
			}
			if oc.gets != tc.cacheGets || api.gets != tc.apiGets {
				t.Errorf("owner reads: %d from the cache, %d from the API server; want %d and %d", oc.gets, api.gets, tc.cacheGets, tc.apiGets)
			}
		})
	}
	t.Run("without an owner cache or API reader the pod is refused", func(t *testing.T) {
		c := world(true)
		for _, m := range []*podwebhook.Mutator{
			{Client: c, APIReader: c, Owners: []owners.Preset{owners.LeaderWorkerSet}},
			{Client: c, OwnerCache: &ownerCache{FakeInformers: &informertest.FakeInformers{Scheme: scheme}, reader: c}, Owners: []owners.Preset{owners.LeaderWorkerSet}},
		} {
			_, err := m.Mutate(context.Background(), pod)
			if err == nil || !strings.Contains(err.Error(), "Mutator.") || !strings.Contains(err.Error(), "ns/serve") {
				t.Errorf("got %v, want an error naming the owner and the missing field", err)
			}
		}
	})
}

func mountedTable(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == ranktable.VolumeName && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// ownerCache is a cache whose informers are fakes (synced unless set otherwise)
// and whose reads are served by reader and counted.
type ownerCache struct {
	*informertest.FakeInformers
	reader client.Reader
	gets   int
}

func (c *ownerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c *ownerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}

// countingReader counts the Gets of unstructured objects (owners).
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		r.gets++
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
