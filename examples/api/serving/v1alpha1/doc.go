// Package v1alpha1 is the API of the example ModelServing operator: a serving
// workload of spec.replicas serving groups (rows), each made of every role's
// members (pods), which the operator creates directly and rolls out with package
// rollout.
//
// The API group is serving.examples.kplan.dev, version v1alpha1. The CRD manifest
// generated from these types is examples/config/crd.
//
// The deepcopy functions and the CRD are generated (go generate; controller-gen
// v0.23.0); descriptions are left out of the CRD to keep it under the 256 KiB that
// kubectl apply can record.
//
// +kubebuilder:object:generate=true
// +groupName=serving.examples.kplan.dev
package v1alpha1

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=./... output:crd:dir=../../../config/crd
