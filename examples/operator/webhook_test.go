package operator_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// injectedPod creates a ConfigMapSet and a ranktable owner whose pods it matches,
// waits for the operator to create a pod through the webhook and returns it as the
// API server stored it.
//
// The webhook tests run no kubelet: they compare pods as admission made them, and a
// binding would change spec.nodeName under them; the pods are never deleted.
func injectedPod(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "engine-config"},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "qwen-inference"}},
			Data:       map[string]string{"engine.json": "{}"},
			Containers: []revision.ContainerInjectSpec{{Name: "inference", MountPath: "/etc/engine"}},
		},
	}
	if err := admin.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	newOwner(t, ns, "qwen-inference", 1, nil)
	pod := waitPod(t, ns, podOf("qwen-inference", "worker", 0, 0), "")
	if pod.Annotations[webhookpatch.RecordAnnotation] == "" {
		t.Fatalf("pod was not injected: annotations %v", pod.Annotations)
	}
	return pod
}

// mutator is a second instance of the operator's webhook handler, reading the API
// server directly.
func mutator() *podwebhook.Mutator {
	return &podwebhook.Mutator{
		Client: admin, TemplateNamespace: ranktable.DefaultTemplateNamespace,
		SidecarImage: operator.DefaultSidecarImage, SidecarResources: podwebhook.DefaultSidecarResources,
		KubeVersion: testenv.KubeVersion, Now: time.Now,
	}
}

// TestWebhookTwice: the webhook run again on a pod it injected (and the API server
// defaulted) changes nothing: no patch, an identical pod.
func TestWebhookTwice(t *testing.T) {
	ns := newNamespace(t)
	pod := injectedPod(t, ns)

	t.Run("Mutate returns an identical pod", func(t *testing.T) {
		again, err := mutator().Mutate(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(again, pod) {
			ops, _ := webhookpatch.Diff(pod, again)
			t.Errorf("second injection changed the pod: %+v", ops)
		}
	})

	t.Run("the admission response carries no patch", func(t *testing.T) {
		raw, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		resp := mutator().Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Operation: admissionv1.Create, Namespace: ns, Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed || len(resp.Patch) != 0 || resp.PatchType != nil {
			t.Errorf("response allowed=%v patch=%s type=%v, want allowed with no patch", resp.Allowed, resp.Patch, resp.PatchType)
		}
	})

	// Before 1.29 the reload sidecar is the first app container; the ranktable
	// injection, run again on the webhook's own output, must leave it alone.
	t.Run("before Kubernetes 1.29 the reload sidecar gets no ranktable mount or env", func(t *testing.T) {
		m := mutator()
		m.KubeVersion = "v1.28.9"
		base := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen-inference-worker-0-9", Labels: pod.Labels, OwnerReferences: pod.OwnerReferences},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "mindie:1"}}},
		}
		once, err := m.Mutate(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		twice, err := m.Mutate(context.Background(), once)
		if err != nil {
			t.Fatal(err)
		}
		if ops, _ := webhookpatch.Diff(once, twice); len(ops) > 0 {
			t.Errorf("the second injection patched again: %v", ops)
		}
		sidecar := revision.ReloadSidecarName("engine-config")
		if len(twice.Spec.Containers) == 0 || twice.Spec.Containers[0].Name != sidecar {
			t.Fatalf("containers %v: want the sidecar %s first", twice.Spec.Containers, sidecar)
		}
		for _, e := range twice.Spec.Containers[0].Env {
			if strings.Contains(e.Name, "RANK_TABLE") || e.Name == "RANKTABLEFILE" {
				t.Errorf("the sidecar got the ranktable env var %s", e.Name)
			}
		}
		for _, vm := range twice.Spec.Containers[0].VolumeMounts {
			if vm.Name == ranktable.VolumeName {
				t.Errorf("the sidecar got the ranktable mount %s", vm.MountPath)
			}
		}
	})

	t.Run("a pod created from the injected pod comes back identical", func(t *testing.T) {
		// Another name label keeps the ModelServing's controllers off the clone (they
		// select their pods by it); the webhook goes by the controller reference.
		labels := maps.Clone(pod.Labels)
		labels[servingv1.LabelName] = "clone"
		clone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "qwen-inference-clone", Labels: labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
		}, Spec: *pod.Spec.DeepCopy()}
		if err := operClient(t).Create(context.Background(), clone); err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: clone.Name}, &got); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, pod.Spec) || !equality.Semantic.DeepEqual(got.Annotations, pod.Annotations) {
			t.Errorf("re-injected pod differs:\n spec %+v\nwant %+v\n annotations %v\nwant %v", got.Spec, pod.Spec, got.Annotations, pod.Annotations)
		}
	})
}

// TestWebhookRejectsConflict: a pod that already has its own volume named like the
// ranktable volume is rejected with a message naming the conflict, not silently
// changed.
func TestWebhookRejectsConflict(t *testing.T) {
	ns := newNamespace(t)
	ms := newOwner(t, ns, "qwen-inference", 0, nil) // no serving groups: the operator creates no pod
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen-inference-worker-0-0",
			Labels:          map[string]string{servingv1.LabelName: ms.Name, ranktable.LabelGroupName: "qwen-inference-0", ranktable.LabelRole: "worker"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, servingv1.GroupVersion.WithKind("ModelServing"))}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "inference", Image: "busybox:1.36"}},
			Volumes:    []corev1.Volume{{Name: ranktable.VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	err := operClient(t).Create(context.Background(), pod) // only the operator creates a ModelServing's pods
	if err == nil || !strings.Contains(err.Error(), "conflict") || !strings.Contains(err.Error(), ranktable.VolumeName) {
		t.Fatalf("create = %v, want a rejection naming the conflicting volume %q", err, ranktable.VolumeName)
	}
}
