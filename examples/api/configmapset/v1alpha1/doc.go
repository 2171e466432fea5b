// Package v1alpha1 registers the ConfigMapSet API, whose types are package
// revision's (revision.ConfigMapSet and revision.ConfigMapSetList): configuration
// files versioned and rolled out beside a workload. The example operator reconciles
// ConfigMapSets and injects their reload sidecar; the reload agent (package
// examples/reload) reads them. Both build their client's scheme with AddToScheme.
//
// The API group is apps.kplan.dev, version v1alpha1. The CRD manifest is
// examples/config/crd/apps.kplan.dev_configmapsets.yaml.
package v1alpha1
