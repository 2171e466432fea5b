package schedulertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/rdma"
)

// applyDevicePolicy creates the policy and binding of
// config/device-allocated-policy.yaml and returns a function that deletes them and
// waits until the API server no longer enforces them (probe tells).
func applyDevicePolicy(t *testing.T, ctx context.Context) func(probe func() error) {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "scheduler", "config", "device-allocated-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := dec.Decode(&policy); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&binding); err != nil {
		t.Fatal(err)
	}
	if policy.Kind != "ValidatingAdmissionPolicy" || binding.Kind != "ValidatingAdmissionPolicyBinding" {
		t.Fatalf("device-allocated-policy.yaml holds %s and %s", policy.Kind, binding.Kind)
	}
	api := cs.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(probe func() error) {
		bg := context.Background()
		_ = api.ValidatingAdmissionPolicyBindings().Delete(bg, binding.Name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(bg, policy.Name, metav1.DeleteOptions{})
		// Later tests write the annotation by hand: wait until the API server
		// stopped enforcing the policy.
		waitFor(t, bg, time.Minute, "the policy no longer enforced", func(context.Context) (bool, error) { return probe() == nil, nil })
	}
}

// TestDeviceAllocatedPolicy: with config/device-allocated-policy.yaml, a namespace
// user who may create and patch pods cannot create a pod carrying
// scheduling.koordinator.sh/device-allocated, nor add, change or remove it later,
// nor change the allocate hint of a bound pod; the scheduler's identity can, and the
// real scheduler still binds an RDMA pod with its annotation.
func TestDeviceAllocatedPolicy(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "device-policy")
	spare := namespace(t, ctx, "device-policy-after")
	for _, n := range []string{ns, spare} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "tenant"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "patch", "update"}}}}
		if _, err := cs.RbacV1().Roles(n).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "tenant"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "tenant"}}}
		if _, err := cs.RbacV1().RoleBindings(n).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tenantCfg := rest.CopyConfig(env.Config)
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}}
	tenant, err := kubernetes.NewForConfig(tenantCfg)
	if err != nil {
		t.Fatal(err)
	}
	schedCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := kubernetes.NewForConfig(schedCfg)
	if err != nil {
		t.Fatal(err)
	}
	const value = `{"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"}}]}`
	withAnnotation := func(ns, name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	n := 0
	probe := func(ns string) func() error {
		return func() error {
			n++
			_, err := tenant.CoreV1().Pods(ns).Create(ctx, withAnnotation(ns, fmt.Sprintf("probe-%d", n), map[string]string{rdma.AnnotationDeviceAllocated: value}), metav1.CreateOptions{})
			return err
		}
	}
	undo := applyDevicePolicy(t, ctx)
	t.Cleanup(func() { undo(probe(spare)) })
	waitFor(t, ctx, time.Minute, "the policy enforced", func(context.Context) (bool, error) {
		err := probe(ns)()
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	patch := func(c kubernetes.Interface, name, body string) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	if _, err := tenant.CoreV1().Pods(ns).Create(ctx, withAnnotation(ns, "plain", map[string]string{rdma.AnnotationDeviceAllocateHint: `{}`}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod without the annotation: %v", err)
	}
	allowed("the tenant changes the hint of a pending pod", patch(tenant, "plain", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocateHint+`":"{\"rdma\":{}}"}}}`))
	refused("the tenant adds the annotation", patch(tenant, "plain", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocated+`":"{}"}}}`))
	// The PreBind path: the scheduler patches the pod (rbac-prebind.yaml grants it).
	undoPrebind, err := applyConfig(ctx, "rbac-prebind.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(undoPrebind)
	waitFor(t, ctx, time.Minute, "the scheduler may patch pods", func(context.Context) (bool, error) {
		return !apierrors.IsForbidden(patch(sched, "plain", `{"metadata":{"annotations":{"probe":"1"}}}`)), nil
	})
	allowed("the scheduler adds the annotation", patch(sched, "plain", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocated+`":`+fmt.Sprintf("%q", value)+`}}}`))
	refused("the tenant changes it", patch(tenant, "plain", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocated+`":"{\"rdma\":[]}"}}}`))
	refused("the tenant removes it", patch(tenant, "plain", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocated+`":null}}}`))
	allowed("the tenant changes another annotation", patch(tenant, "plain", `{"metadata":{"annotations":{"team":"a"}}}`))

	// "plain" now carries a valid allocation of the node's only PF, and so does every
	// probe the API server admitted before it enforced the policy (when it is slow to,
	// e.g. after other tests): bound by the scheduler below, such a pod would keep the
	// PF (a pod asking for no RDMA devices is counted with what its valid annotation
	// names) and the RDMA pod would never fit. They go before the scheduler starts.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, time.Minute, "the annotated pods gone", func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})

	t.Run("the real scheduler binds an RDMA pod with its annotation", func(t *testing.T) {
		createNodes(t, ctx, makeNode("policy-node", shape{roots: 1, pfs: 1, vfs: 4}))
		startScheduler(t, nil)
		if _, err := tenant.CoreV1().Pods(ns).Create(ctx, makePod(t, ns, "rdma", podSpec{rdma: 1}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitBound(t, ctx, ns, "rdma")
		refused("the tenant changes the hint of the bound pod", patch(tenant, "rdma", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocateHint+`":"{}"}}}`))
		refused("the tenant removes the annotation of the bound pod", patch(tenant, "rdma", `{"metadata":{"annotations":{"`+rdma.AnnotationDeviceAllocated+`":null}}}`))
	})
}
