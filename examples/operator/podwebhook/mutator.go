package podwebhook

import (
	"context"
	"encoding/json"
	"errors"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	// OwnerCache reads the owners of the Owners kinds: the manager's cache
	// (mgr.GetCache()), whose informers for those kinds must be registered before
	// the manager starts (operator.Setup does), so that every replica keeps them
	// and no webhook call waits for an informer to start and sync. Required when
	// Owners is not empty.
	OwnerCache cache.Cache
	// APIReader reads an owner from the API server when OwnerCache does not have
	// it: while the kind's informer has not synced yet (a replica starting), or
	// when the cache has no owner of that name. A pod of a just-created owner can
	// reach the webhook before the owner's watch event reaches the cache; reading
	// the API server once then, instead of concluding the pod has no owner, keeps
	// such a pod from being admitted without its rank table mount. Every other
	// owner read is served by the cache. Required when Owners is not empty.
	APIReader client.Reader

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
	l := log.FromContext(ctx).WithValues("pod", podLogName(&pod))
	mutated, inj, err := m.mutate(ctx, &pod)
	if err != nil {
		l.Info("refused pod", "reason", reasonRefused, "message", err.Error())
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
	if inj.ranktable != "" {
		l.Info("mutated pod", "reason", reasonRanktable, "configMap", inj.ranktable, "operations", len(ops))
	}
	for _, set := range inj.sets {
		l.Info("mutated pod", "reason", reasonConfigMapSet, "configMapSet", set.name, "revision", set.revision, "operations", len(ops))
	}
	if inj.ranktable == "" && len(inj.sets) == 0 {
		l.V(1).Info("admitted pod unchanged")
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: pt}}
}

// Mutate returns a copy of pod with the ranktable and ConfigMapSet injections; pod is
// not changed. Running it on its own result returns an equal pod.
func (m *Mutator) Mutate(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out, _, err := m.mutate(ctx, pod)
	return out, err
}

// injected is what mutate injected, for the log: the ranktable ConfigMap the pod
// mounts ("" when none) and the ConfigMapSets.
type injected struct {
	ranktable string
	sets      []injectedSet
}

// injectedSet is one ConfigMapSet injected and the revision the pod is to serve.
type injectedSet struct{ name, revision string }

// The reasons of the webhook's log lines.
const (
	// reasonRanktable: the pod's ModelServing names a ranktable template.
	reasonRanktable = "RanktableTemplate"
	// reasonConfigMapSet: a ConfigMapSet's selector matches the pod.
	reasonConfigMapSet = "ConfigMapSetSelector"
	// reasonRefused: an injection failed; the pod is refused with the message.
	reasonRefused = "InjectionFailed"
)

// mutate is Mutate, also saying what it injected.
func (m *Mutator) mutate(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, injected, error) {
	var inj injected
	out := pod.DeepCopy()
	var err error
	if inj.ranktable, err = m.injectRanktable(ctx, out); err != nil {
		return nil, inj, fmt.Errorf("pod %s: ranktable: %w", podName(pod), err)
	}
	if inj.sets, err = m.injectConfigMapSets(ctx, out); err != nil {
		return nil, inj, fmt.Errorf("pod %s: %w", podName(pod), err)
	}
	if errs := webhookpatch.Validate(out); len(errs) > 0 {
		return nil, inj, fmt.Errorf("pod %s: injected pod is invalid: %w", podName(pod), errs.ToAggregate())
	}
	return out, inj, nil
}

// injectRanktable injects the ranktable mount when the pod's controller is a
// ModelServing annotated with a ranktable template, or when the pod carries the
// owner label of one of m.Owners and that owner is annotated, and returns the
// ConfigMap's name ("" when it injects nothing).
func (m *Mutator) injectRanktable(ctx context.Context, pod *corev1.Pod) (string, error) {
	ref := metav1.GetControllerOf(pod)
	if ref != nil && ref.Kind == "ModelServing" && ref.APIVersion == servingv1.GroupVersion.String() {
		var ms servingv1.ModelServing
		if err := m.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, &ms); err != nil {
			return "", fmt.Errorf("owner ModelServing %s/%s: %w", pod.Namespace, ref.Name, err)
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
		if err := m.getOwner(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, owner); err != nil {
			if apierrors.IsNotFound(err) {
				// The label names no owner of this kind: the pod is not one of its.
				continue
			}
			return "", fmt.Errorf("owner %s %s/%s: %w", kind.GVK.Kind, pod.Namespace, name, err)
		}
		if _, ok := owner.GetAnnotations()[ranktable.AnnotationTemplate]; !ok {
			continue // another kind's label on the pod may name an annotated owner
		}
		return m.inject(ctx, pod, owner, kind.Grouping)
	}
	return "", nil
}

// getOwner reads a foreign owner from m.OwnerCache, or, when the kind's informer
// has not synced yet or the cache does not have the owner, once from the API
// server.
func (m *Mutator) getOwner(ctx context.Context, key types.NamespacedName, owner *unstructured.Unstructured) error {
	if m.OwnerCache == nil {
		return errors.New("the webhook has no owner cache (Mutator.OwnerCache is nil)")
	}
	if m.APIReader == nil {
		return errors.New("the webhook has no API reader (Mutator.APIReader is nil)")
	}
	// Not BlockUntilSynced: a replica whose cache is still syncing reads the API
	// server rather than holding the call up to the API server's webhook timeout.
	inf, err := m.OwnerCache.GetInformer(ctx, owner, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	why := "the owner cache has not synced yet"
	if inf.HasSynced() {
		err := m.OwnerCache.Get(ctx, key, owner)
		if !apierrors.IsNotFound(err) {
			return err
		}
		why = "the owner is not in the cache (yet)"
	}
	log.FromContext(ctx).V(1).Info("reading the owner from the API server", "owner", key.String(), "kind", owner.GetKind(), "reason", why)
	return m.APIReader.Get(ctx, key, owner)
}

// inject mounts the table of pod's group of owner, when owner is annotated with a
// ranktable template, and returns the ConfigMap's name ("" when it injects
// nothing). A pod of a foreign owner without its group labels yet is left as it
// is: the owner's own webhook may set them after this one, and the API server
// then calls this webhook again (reinvocationPolicy IfNeeded); the ranktable
// controller reports a pod that never gets them.
func (m *Mutator) inject(ctx context.Context, pod *corev1.Pod, owner metav1.Object, g ranktable.Grouping) (string, error) {
	name, ok := owner.GetAnnotations()[ranktable.AnnotationTemplate]
	if !ok {
		return "", nil
	}
	tmpl, err := ranktables.LoadTemplate(ctx, m.Client, &m.templates, m.TemplateNamespace, name)
	if err != nil {
		return "", err
	}
	level, err := ranktable.ResolveLevel(owner, tmpl)
	if err != nil {
		return "", err
	}
	k, err := ranktable.KeyOf(pod, level, g)
	if err != nil {
		if _, foreign := owner.(*unstructured.Unstructured); foreign {
			log.FromContext(ctx).Info("pod has no group labels yet; not injected on this call", "owner", owner.GetNamespace()+"/"+owner.GetName(),
				"pod", podName(pod), "reason", err.Error())
			return "", nil
		}
		return "", err
	}
	cmName := ranktable.ConfigMapName(owner.GetName(), k)
	if _, err = ranktable.Inject(pod, ranktable.InjectOptions{
		ConfigMapName: cmName,
		Template:      tmpl,
		Image:         m.WaitImage,
		WaitTimeout:   m.WaitTimeout,
	}); err != nil {
		return "", err
	}
	return cmName, nil
}

// injectConfigMapSets injects every ConfigMapSet of the pod's namespace whose selector
// matches the pod, in name order, and returns them.
func (m *Mutator) injectConfigMapSets(ctx context.Context, pod *corev1.Pod) ([]injectedSet, error) {
	var sets revision.ConfigMapSetList
	if err := m.Client.List(ctx, &sets, client.InNamespace(pod.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ConfigMapSets: %w", err)
	}
	var done []injectedSet
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
			return nil, fmt.Errorf("ConfigMapSet %s: listing pods: %w", set.Name, err)
		}
		others := make([]*corev1.Pod, 0, len(pods.Items))
		for j := range pods.Items {
			if pods.Items[j].Name != pod.Name || pod.Name == "" {
				others = append(others, &pods.Items[j])
			}
		}
		res, err := revision.Inject(pod, revision.InjectInput{
			Set: set, Pods: others, KubeVersion: m.KubeVersion,
			Sidecar: revision.SidecarOptions{Image: m.SidecarImage, Resources: m.SidecarResources}, Now: m.Now(),
		})
		if err != nil {
			return nil, fmt.Errorf("ConfigMapSet %s: %w", set.Name, err)
		}
		if err := finishConfigMapSetPod(pod, set); err != nil {
			return nil, fmt.Errorf("ConfigMapSet %s: %w", set.Name, err)
		}
		done = append(done, injectedSet{name: set.Name, revision: res.Revision})
	}
	return done, nil
}

// podLogName is the pod's name for the log: its generateName and "*" before the
// API server names it.
func podLogName(pod *corev1.Pod) string {
	if pod.Name == "" {
		return pod.GenerateName + "*"
	}
	return pod.Name
}

func podName(pod *corev1.Pod) string {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	return pod.Namespace + "/" + name
}
