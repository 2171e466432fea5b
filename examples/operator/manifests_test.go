package operator_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
)

// TestManagerManifest: config/manager/manager.yaml is valid for the API server
// (every object it can serve is created with a server-side dry run; cert-manager's
// are not installed here) and runs the operator so that an outage of one pod stops
// nothing: two replicas, a disruption budget that keeps one, a priority class, the
// webhook's client CA, and pinned images.
func TestManagerManifest(t *testing.T) {
	ctx := context.Background()
	objs, err := readManifests(filepath.Join("..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		dep  appsv1.Deployment
		pdb  policyv1.PodDisruptionBudget
		prio schedulingv1.PriorityClass
	)
	kinds := map[string]bool{}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		kinds[u.GetKind()] = true
		switch u.GetKind() {
		case "Deployment":
			decode(t, u, &dep)
		case "PodDisruptionBudget":
			decode(t, u, &pdb)
		case "PriorityClass":
			decode(t, u, &prio)
		}
		if u.GroupVersionKind().Group == "cert-manager.io" || u.GetKind() == "Namespace" {
			continue // not installed here; the namespace exists
		}
		if err := admin.Create(ctx, u.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, k := range []string{"Deployment", "PodDisruptionBudget", "PriorityClass", "Service", "Certificate"} {
		if !kinds[k] {
			t.Errorf("no %s in manager.yaml", k)
		}
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("Deployment replicas %v, want at least 2", dep.Spec.Replicas)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PodDisruptionBudget minAvailable %v with %d replicas", pdb.Spec.MinAvailable, *dep.Spec.Replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget selector %v does not select the operator's pods %v", pdb.Spec.Selector, dep.Spec.Template.Labels)
	}
	if dep.Spec.Template.Spec.PriorityClassName != prio.Name || prio.Value <= 0 {
		t.Errorf("pods' priority class %q, manifest's %q (value %d)", dep.Spec.Template.Spec.PriorityClassName, prio.Name, prio.Value)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	flag := func(name string) (string, bool) {
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v, true
			}
			if a == "--"+name && i+1 < len(args) {
				return args[i+1], true
			}
		}
		return "", false
	}
	if v, ok := flag("webhook-client-ca"); !ok || v == "" {
		t.Errorf("args %v: no --webhook-client-ca", args)
	}
	if v, ok := flag("leader-elect"); ok && v != "true" {
		t.Errorf("leader election off: %v", args)
	}
	if v, _ := flag("wait-image"); v == "" || operator.CheckImage(v) != nil || !strings.Contains(v, "@sha256:") {
		t.Errorf("--wait-image %q: want an image pinned by digest", v)
	}
	if v, _ := flag("sidecar-image"); !strings.HasPrefix(v, "ko://") {
		t.Errorf("--sidecar-image %q: want a ko:// reference (ko pins it by digest)", v)
	}
}

// TestWebhookManifest: config/webhook's configuration waits at most 5 seconds for the
// operator and never selects the control plane's namespaces or the operator's own.
func TestWebhookManifest(t *testing.T) {
	objs, err := readManifests(filepath.Join("..", "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	decode(t, objs[0].(*unstructured.Unstructured), &cfg)
	for _, w := range cfg.Webhooks {
		t.Run(w.Name, func(t *testing.T) {
			if w.TimeoutSeconds == nil || *w.TimeoutSeconds > 5 {
				t.Errorf("timeoutSeconds %v, want 5 or less", w.TimeoutSeconds)
			}
			sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{"kube-system", "kube-public", "kube-node-lease", "kplan-system"} {
				l := labels.Set{"kubernetes.io/metadata.name": ns, podwebhook.LabelNamespaceInjection: "enabled"}
				if sel.Matches(l) {
					t.Errorf("selects namespace %s", ns)
				}
			}
			if !slices.Contains(w.AdmissionReviewVersions, "v1") || w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
				t.Errorf("versions %v side effects %v", w.AdmissionReviewVersions, w.SideEffects)
			}
		})
	}
}

// decode converts an unstructured object to a typed one.
func decode(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
