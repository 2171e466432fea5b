// Package kube holds the few helpers for Kubernetes objects that the example
// controllers share. It makes no kplan call.
package kube

import corev1 "k8s.io/api/core/v1"

// Pointers returns pointers to the items of a list (a List's Items), as the
// library's inputs take them.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// PodCondition returns the pod's condition of type t; nil when it has none.
func PodCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
