package ranktables

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/ranktable"
)

// Values of the app.kubernetes.io/component label (ranktable.LabelComponent) on the
// ConfigMaps this controller reads or writes. The operator caches no other
// ConfigMap, and reads a template only when it carries ComponentTemplate.
const (
	// ComponentRanktable marks the rank table ConfigMaps the operator writes
	// (ranktable.Plan sets it).
	ComponentRanktable = "ranktable"
	// ComponentTemplate marks a ConfigMap of the templates namespace as a ranktable
	// template a ModelServing may name (the library's templates carry it).
	ComponentTemplate = "ranktable-template"
	// ComponentParser marks a ConfigMap of the templates namespace as a pod parser a
	// template may name (the library's parser carries it).
	ComponentParser = "pod-ranktable-parser"
)

// LoadTemplate loads the ranktable template ConfigMap ns/name (the one a
// ModelServing's annotation names), and the parser ConfigMap it names unless that is
// a built-in parser, through cache. Only ConfigMaps labeled ComponentTemplate and
// ComponentParser are read; any other is reported as not found.
func LoadTemplate(ctx context.Context, c client.Reader, cache *ranktable.TemplateCache, ns, name string) (*ranktable.Template, error) {
	var rt corev1.ConfigMap
	if err := getComponent(ctx, c, ns, name, ComponentTemplate, &rt); err != nil {
		return nil, fmt.Errorf("ranktable template ConfigMap %s/%s: %w", ns, name, err)
	}
	var parser *corev1.ConfigMap
	if p := ranktable.ParserConfigMapName(&rt); p != "" {
		parser = &corev1.ConfigMap{}
		if err := getComponent(ctx, c, ns, p, ComponentParser, parser); err != nil {
			return nil, fmt.Errorf("pod parser ConfigMap %s/%s: %w", ns, p, err)
		}
	}
	return cache.Load(&rt, parser, ranktable.LoadOptions{})
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
