package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of ModelServing.
var GroupVersion = schema.GroupVersion{Group: "serving.examples.kplan.dev", Version: "v1alpha1"}

// AddToScheme registers ModelServing and ModelServingList under GroupVersion.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ModelServing{}, &ModelServingList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
