package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
