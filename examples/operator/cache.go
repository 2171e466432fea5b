package operator

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// CacheOptions returns the manager cache options the operator needs: every
// ModelServing and ConfigMapSet, but of pods, ControllerRevisions and ConfigMaps only
// those it reconciles, selected by label (ModelServing pods and revisions by
// servingv1.LabelName; ConfigMaps by their component label: rank tables and hubs in
// every namespace, templates and parsers in opts.TemplateNamespace), with their
// managedFields stripped. Unrelated objects, however large or many, never enter the
// operator's memory. Setup reads ConfigMapSet pods through a second cache of its own
// (pods labeled podwebhook.LabelConfigMapSetPod).
func CacheOptions(opts Options) cache.Options {
	owned := componentSelector(ranktables.ComponentRanktable, configmapset.ComponentHub)
	templateNS := opts.TemplateNamespace
	if templateNS == "" {
		templateNS = ranktable.DefaultTemplateNamespace
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{
				templateNS:          {LabelSelector: componentSelector(ranktables.ComponentRanktable, configmapset.ComponentHub, ranktables.ComponentTemplate, ranktables.ComponentParser)},
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
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{podwebhook.LabelConfigMapSetPod: "true"})},
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
