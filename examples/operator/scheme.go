package operator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/revision"
)

// GroupVersion is the API group and version of the ConfigMapSet CRD.
var GroupVersion = schema.GroupVersion{Group: "apps.kplan.dev", Version: "v1alpha1"}

// AddToScheme registers revision.ConfigMapSet and revision.ConfigMapSetList under
// GroupVersion.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &revision.ConfigMapSet{}, &revision.ConfigMapSetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// NewScheme returns a scheme with the built-in Kubernetes types, ConfigMapSet and
// ModelServing.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	if err := servingv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
