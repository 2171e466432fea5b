package operator_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmsv1 "github.com/kplan-dev/kplan/examples/api/configmapset/v1alpha1"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// refused fails the test unless err is the API server's refusal (RBAC or an
// admission policy).
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want Forbidden", what, err)
		return
	}
	t.Logf("%s: refused: %v", what, err)
}

// TestOperatorWritesPolicy: the operator's ServiceAccount may write ConfigMaps, pods
// and ControllerRevisions in every namespace (its ClusterRole); the policy
// kplan-operator-writes of config/rbac keeps those writes to what it reconciles.
// Each refusal below is one RBAC alone allows.
func TestOperatorWritesPolicy(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	oper := operClient(t)
	hubLabels := map[string]string{ranktable.LabelComponent: configmapset.ComponentHub}
	ms := newOwner(t, ns, "owner", 0, nil)
	controlled := []metav1.OwnerReference{*metav1.NewControllerRef(ms, servingv1.GroupVersion.WithKind("ModelServing"))}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}
	if err := admin.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-settings"}, Data: map[string]string{"k": "v"}}
	if err := admin.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	merge := func(p string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(p)) }

	t.Run("refused", func(t *testing.T) {
		refused(t, "a ConfigMap in kube-system", oper.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "x", Labels: hubLabels}}))
		refused(t, "a ConfigMap without the component label", oper.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "y"}}))
		refused(t, "a ConfigMap labeled as a template", oper.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "z",
			Labels: map[string]string{ranktable.LabelComponent: ranktables.ComponentTemplate}}}))
		refused(t, "deleting another's ConfigMap", oper.Delete(ctx, foreign))
		refused(t, "updating another's ConfigMap", oper.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: foreign.Name,
			ResourceVersion: foreign.ResourceVersion}, Data: map[string]string{"k": "pwned"}}))
		refused(t, "a pod no ModelServing controls", oper.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}))
		refused(t, "another pod's image", oper.Patch(ctx, plain.DeepCopy(),
			client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"main","image":"evil:1"}]}}`))))
		refused(t, "making another pod a ModelServing's", oper.Patch(ctx, plain.DeepCopy(), merge(
			`{"metadata":{"ownerReferences":[{"apiVersion":"serving.examples.kplan.dev/v1alpha1","kind":"ModelServing","name":"owner","uid":"`+string(ms.UID)+`","controller":true}]}}`)))
		refused(t, "deleting another pod", oper.Delete(ctx, plain.DeepCopy()))
		refused(t, "another pod's status", oper.Status().Patch(ctx, plain.DeepCopy(), merge(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`)))
		refused(t, "a ControllerRevision no ModelServing controls", oper.Create(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
			Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}))
		if err := admin.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
			t.Fatal(err)
		}
		refused(t, "adopting another's ConfigMap by labeling it", oper.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: foreign.Name,
			ResourceVersion: foreign.ResourceVersion, Labels: hubLabels}, Data: foreign.Data}))
	})

	t.Run("allowed", func(t *testing.T) {
		set := newSet(t, ns, "cfg", map[string]string{"a": "b"}, false)
		// A hub with a controller reference to its set (blockOwnerDeletion: needs
		// update on configmapsets/finalizers under OwnerReferencesPermissionEnforcement).
		hub := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual-hub", Labels: hubLabels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, cmsv1.GroupVersion.WithKind("ConfigMapSet"))}}}
		if err := oper.Create(ctx, hub); err != nil {
			t.Errorf("a labeled hub owned by its set: %v", err)
		}
		if err := oper.Patch(ctx, plain.DeepCopy(), merge(`{"metadata":{"annotations":{"apps.kruise.io/configmapset.cfg.updateRevision":"r1"}}}`)); err != nil {
			t.Errorf("a ConfigMapSet annotation on another pod: %v", err)
		}
		if err := oper.Create(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r", OwnerReferences: controlled},
			Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}); err != nil {
			t.Errorf("a ControllerRevision of a ModelServing: %v", err)
		}
	})
}

// TestModelServingPodsOnlyFromOperator: a namespace user who may create pods cannot
// create one naming a ModelServing as its controller (it would join the
// ModelServing's groups and rank table with its own device IPs), nor make an existing
// pod one; the same pod without the reference is created. Policy
// kplan-modelserving-pods of config/rbac.
func TestModelServingPodsOnlyFromOperator(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	grant(t, ns, "tenant", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "patch", "delete"}})
	tenant := userClient(t, "tenant")
	ms := newOwner(t, ns, "llm", 0, nil)
	pod := func(name string, refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs,
			Labels: map[string]string{servingv1.LabelName: ms.Name, servingv1.LabelGroupName: "llm-0", servingv1.LabelRole: "worker"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "busybox:1.36"}}}}
	}
	// Without blockOwnerDeletion: that would need update on modelservings/finalizers,
	// which clusters without OwnerReferencesPermissionEnforcement do not check.
	ref := *metav1.NewControllerRef(ms, servingv1.GroupVersion.WithKind("ModelServing"))
	ref.BlockOwnerDeletion = nil
	refused(t, "a tenant's pod controlled by a ModelServing", tenant.Create(ctx, pod("llm-worker-0-7", ref)))
	free := pod("impostor")
	if err := tenant.Create(ctx, free); err != nil {
		t.Fatalf("a tenant's pod without the reference: %v", err)
	}
	refused(t, "a tenant making its pod a ModelServing's", tenant.Patch(ctx, free, client.RawPatch(types.MergePatchType, []byte(
		`{"metadata":{"ownerReferences":[{"apiVersion":"serving.examples.kplan.dev/v1alpha1","kind":"ModelServing","name":"llm","uid":"`+string(ms.UID)+`","controller":true}]}}`))))
}
