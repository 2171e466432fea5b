package operator

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/ranktable"
)

// Values of the app.kubernetes.io/component label (ranktable.LabelComponent) on the
// ConfigMaps the operator reads or writes. The operator caches no other ConfigMap,
// and reads a template only when it carries ComponentTemplate.
const (
	// ComponentRanktable marks the rank table ConfigMaps the operator writes
	// (ranktable.Plan sets it).
	ComponentRanktable = "ranktable"
	// ComponentHub marks the hub ConfigMaps the operator writes for ConfigMapSets.
	ComponentHub = "configmapset-hub"
	// ComponentTemplate marks a ConfigMap of the templates namespace as a ranktable
	// template a ModelServing may name (the library's templates carry it).
	ComponentTemplate = "ranktable-template"
	// ComponentParser marks a ConfigMap of the templates namespace as a pod parser a
	// template may name (the library's parser carries it).
	ComponentParser = "pod-ranktable-parser"
)

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

// CacheOptions returns the manager cache options the operator needs: every
// ModelServing and ConfigMapSet, but of pods, ControllerRevisions and ConfigMaps only
// those it reconciles, selected by label (ModelServing pods and revisions by
// servingv1.LabelName; ConfigMaps by their component label: rank tables and hubs in
// every namespace, templates and parsers in opts.TemplateNamespace), with their
// managedFields stripped. Unrelated objects, however large or many, never enter the
// operator's memory. Setup reads ConfigMapSet pods through a second cache of its own
// (pods labeled LabelConfigMapSetPod).
func CacheOptions(opts Options) cache.Options {
	owned := componentSelector(ComponentRanktable, ComponentHub)
	templateNS := opts.TemplateNamespace
	if templateNS == "" {
		templateNS = ranktable.DefaultTemplateNamespace
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{
				templateNS:          {LabelSelector: componentSelector(ComponentRanktable, ComponentHub, ComponentTemplate, ComponentParser)},
				cache.AllNamespaces: {LabelSelector: owned},
			}},
			&corev1.Pod{}:                {Label: existsSelector(servingv1.LabelName)},
			&appsv1.ControllerRevision{}: {Label: existsSelector(servingv1.LabelName)},
		},
	}
}

func componentSelector(values ...string) labels.Selector {
	r, err := labels.NewRequirement(ranktable.LabelComponent, selection.In, values)
	if err != nil {
		panic(err) // constant input
	}
	return labels.NewSelector().Add(*r)
}

func existsSelector(key string) labels.Selector {
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err) // constant input
	}
	return labels.NewSelector().Add(*r)
}

// newConfigMapSetPodCache returns a started-with-the-manager cache holding only the
// pods the webhook injected a ConfigMapSet into.
func newConfigMapSetPodCache(mgr ctrl.Manager) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{LabelConfigMapSetPod: "true"})},
		},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("ConfigMapSet pod cache: %w", err)
	}
	if _, err := c.GetInformer(context.Background(), &corev1.Pod{}); err != nil {
		return nil, fmt.Errorf("ConfigMapSet pod cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

// podsFrom is a client that reads pods from another cache.
type podsFrom struct {
	client.Client
	pods client.Reader
}

func (c podsFrom) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Pod); ok {
		return c.pods.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c podsFrom) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PodList); ok {
		return c.pods.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}

// labelHub marks a hub ConfigMap the operator creates, so its cache sees it.
func labelHub(cm *corev1.ConfigMap) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ranktable.LabelComponent] = ComponentHub
}

// getComponent reads the ConfigMap ns/name when it carries the component label
// value; any other ConfigMap is reported as not found, without its content (a
// ModelServing may name any ConfigMap of the templates namespace, and errors reach
// its status and events).
func getComponent(ctx context.Context, c client.Reader, ns, name, component string, cm *corev1.ConfigMap) error {
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)
	if err == nil && cm.Labels[ranktable.LabelComponent] != component {
		*cm = corev1.ConfigMap{}
		err = apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no ConfigMap of that name labeled %s=%s", ranktable.LabelComponent, component)
	}
	return err
}
