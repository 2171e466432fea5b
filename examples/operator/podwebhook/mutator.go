package podwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// Path is the URL path of the pod mutating webhook (see
// examples/config/webhook/manifests.yaml).
const Path = "/mutate-v1-pod"

// LabelNamespaceInjection is the namespace label that opts a namespace's pods in to
// ConfigMapSet injection: with the value "enabled" every pod created there passes
// through the webhook, which then must answer (it fails closed). The pods of
// ModelServings pass through it in every namespace.
const LabelNamespaceInjection = "apps.kplan.dev/configmapset-injection"

// LabelConfigMapSetPod is set to "true" by the webhook on every pod it injects a
// ConfigMapSet's reload sidecar into. The ConfigMapSet controller sees only pods
// carrying it: a pod the webhook did not inject (created before its set, or in a
// namespace without the injection label) is not updated by any set.
const LabelConfigMapSetPod = "apps.kplan.dev/configmapset"

// Mutator is the mutating admission webhook for pod CREATE. It injects what the
// pod's ranktable owner and matching ConfigMapSets need, and answers with the
// webhookpatch.Diff of the pod before and after. A conflict with the user's own
// objects rejects the pod; nothing is skipped silently.
type Mutator struct {
	// Client reads ModelServings, template ConfigMaps, ConfigMapSets and pods (cached).
	Client            client.Reader
	TemplateNamespace string
	// WaitImage is the ranktable wait container's image ("" for the library default).
	WaitImage string
	// WaitTimeout is the wait container's timeout (0: none).
	WaitTimeout time.Duration
	// SidecarImage is the ConfigMapSet reload sidecar's image.
	SidecarImage string
	// SidecarResources are the reload sidecar's requests and limits.
	SidecarResources corev1.ResourceRequirements
	// KubeVersion is the cluster's version; it picks the sidecar mode.
	KubeVersion string
	// Now is the clock.
	Now func() time.Time
	// Owners are the other owner kinds whose pods get the ranktable mount: a pod
	// carrying a kind's owner label is that owner's, whatever its controller (a
	// LeaderWorkerSet's pods are its StatefulSets').
	Owners []owners.Preset

	templates ranktable.TemplateCache
}

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// The request's namespace is the one the API server authorized; a pod claiming
	// another is refused without looking at either namespace's objects.
	if pod.Namespace != "" && pod.Namespace != req.Namespace {
		return admission.Denied("the pod's namespace differs from the request's")
	}
	pod.Namespace = req.Namespace // not set yet on CREATE; set on both sides of the diff
	mutated, err := m.Mutate(ctx, &pod)
	if err != nil {
		return admission.Denied(err.Error())
	}
	ops, err := webhookpatch.Diff(&pod, mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	patch, pt, err := webhookpatch.Patch(ops)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: pt}}
}

// Mutate returns a copy of pod with the ranktable and ConfigMapSet injections; pod is
// not changed. Running it on its own result returns an equal pod.
func (m *Mutator) Mutate(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	if err := m.injectRanktable(ctx, out); err != nil {
		return nil, fmt.Errorf("pod %s: ranktable: %w", podName(pod), err)
	}
	if err := m.injectConfigMapSets(ctx, out); err != nil {
		return nil, fmt.Errorf("pod %s: %w", podName(pod), err)
	}
	if errs := webhookpatch.Validate(out); len(errs) > 0 {
		return nil, fmt.Errorf("pod %s: injected pod is invalid: %w", podName(pod), errs.ToAggregate())
	}
	return out, nil
}

// injectRanktable injects the ranktable mount when the pod's controller is a
// ModelServing annotated with a ranktable template, or when the pod carries the
// owner label of one of m.Owners and that owner is annotated.
func (m *Mutator) injectRanktable(ctx context.Context, pod *corev1.Pod) error {
	ref := metav1.GetControllerOf(pod)
	if ref != nil && ref.Kind == "ModelServing" && ref.APIVersion == servingv1.GroupVersion.String() {
		var ms servingv1.ModelServing
		if err := m.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, &ms); err != nil {
			return fmt.Errorf("owner ModelServing %s/%s: %w", pod.Namespace, ref.Name, err)
		}
		return m.inject(ctx, pod, &ms, ranktable.Grouping{})
	}
	for _, kind := range m.Owners {
		name := pod.Labels[kind.Grouping.OwnerLabel]
		if kind.Grouping.OwnerLabel == "" || name == "" {
			continue
		}
		owner := &unstructured.Unstructured{}
		owner.SetGroupVersionKind(kind.GVK)
		if err := m.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, owner); err != nil {
			if apierrors.IsNotFound(err) {
				// The label names no owner of this kind: the pod is not one of its.
				continue
			}
			return fmt.Errorf("owner %s %s/%s: %w", kind.GVK.Kind, pod.Namespace, name, err)
		}
		if _, ok := owner.GetAnnotations()[ranktable.AnnotationTemplate]; !ok {
			continue // another kind's label on the pod may name an annotated owner
		}
		return m.inject(ctx, pod, owner, kind.Grouping)
	}
	return nil
}

// inject mounts the table of pod's group of owner, when owner is annotated with a
// ranktable template. A pod of a foreign owner without its group labels yet is left
// as it is: the owner's own webhook may set them after this one, and the API server
// then calls this webhook again (reinvocationPolicy IfNeeded); the ranktable
// controller reports a pod that never gets them.
func (m *Mutator) inject(ctx context.Context, pod *corev1.Pod, owner metav1.Object, g ranktable.Grouping) error {
	name, ok := owner.GetAnnotations()[ranktable.AnnotationTemplate]
	if !ok {
		return nil
	}
	tmpl, err := ranktables.LoadTemplate(ctx, m.Client, &m.templates, m.TemplateNamespace, name)
	if err != nil {
		return err
	}
	level, err := ranktable.ResolveLevel(owner, tmpl)
	if err != nil {
		return err
	}
	k, err := ranktable.KeyOf(pod, level, g)
	if err != nil {
		if _, foreign := owner.(*unstructured.Unstructured); foreign {
			log.FromContext(ctx).Info("pod has no group labels yet; not injected on this call", "owner", owner.GetNamespace()+"/"+owner.GetName(),
				"pod", podName(pod), "reason", err.Error())
			return nil
		}
		return err
	}
	_, err = ranktable.Inject(pod, ranktable.InjectOptions{
		ConfigMapName: ranktable.ConfigMapName(owner.GetName(), k),
		Template:      tmpl,
		Image:         m.WaitImage,
		WaitTimeout:   m.WaitTimeout,
	})
	return err
}

// injectConfigMapSets injects every ConfigMapSet of the pod's namespace whose selector
// matches the pod, in name order.
func (m *Mutator) injectConfigMapSets(ctx context.Context, pod *corev1.Pod) error {
	var sets revision.ConfigMapSetList
	if err := m.Client.List(ctx, &sets, client.InNamespace(pod.Namespace)); err != nil {
		return fmt.Errorf("listing ConfigMapSets: %w", err)
	}
	slices.SortFunc(sets.Items, func(a, b revision.ConfigMapSet) int { return strings.Compare(a.Name, b.Name) })
	for i := range sets.Items {
		set := &sets.Items[i]
		if set.DeletionTimestamp != nil || set.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue // an invalid selector is reported by the controller
		}
		var pods corev1.PodList
		if err := m.Client.List(ctx, &pods, client.InNamespace(pod.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return fmt.Errorf("ConfigMapSet %s: listing pods: %w", set.Name, err)
		}
		others := make([]*corev1.Pod, 0, len(pods.Items))
		for j := range pods.Items {
			if pods.Items[j].Name != pod.Name || pod.Name == "" {
				others = append(others, &pods.Items[j])
			}
		}
		if _, err := revision.Inject(pod, revision.InjectInput{
			Set: set, Pods: others, KubeVersion: m.KubeVersion,
			Sidecar: revision.SidecarOptions{Image: m.SidecarImage, Resources: m.SidecarResources}, Now: m.Now(),
		}); err != nil {
			return fmt.Errorf("ConfigMapSet %s: %w", set.Name, err)
		}
		if err := finishConfigMapSetPod(pod, set); err != nil {
			return fmt.Errorf("ConfigMapSet %s: %w", set.Name, err)
		}
	}
	return nil
}

func podName(pod *corev1.Pod) string {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	return pod.Namespace + "/" + name
}
