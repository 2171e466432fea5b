package operator

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	cmsv1 "github.com/kplan-dev/kplan/examples/api/configmapset/v1alpha1"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// NewScheme returns a scheme with the built-in Kubernetes types, ConfigMapSet and
// ModelServing.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cmsv1.AddToScheme, servingv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
