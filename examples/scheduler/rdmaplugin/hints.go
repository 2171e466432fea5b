package rdmaplugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// EventsToRegister requeues pods the plugin rejected on the events that can make
// them fit: a pod holding devices deleted or finished (the
// scheduler's pod informer drops finished pods, so that is a delete too), a bound
// pod's device-allocated or allocate-hint annotation changed (a fix of an annotation
// that made its node's holdings unknown), the waiting pod's own request changed, a
// node added or its capacity changed, a Device object added, changed or deleted, a
// ResourceSlice changed or deleted (devices no longer published twice). A pod that
// fits no node's inventory even when idle is not requeued by pod deletions.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: p.hintPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: p.hintPodUpdated},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
		{Event: fwk.ClusterEvent{Resource: deviceEvent, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.hintDevice},
	}
	if p.watchSlices {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: p.hintSlice})
	}
	return events, nil
}

func (p *Plugin) hintPodDeleted(_ klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if gone, ok := deletedObject(oldObj).(*corev1.Pod); ok && !mayHold(gone) {
		return fwk.QueueSkip, nil
	}
	if !p.couldEverFit(pod) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// couldEverFit reports whether the pod's request fits some known node when every
// device there is free.
func (p *Plugin) couldEverFit(pod *corev1.Pod) bool {
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil || req.Validate() != nil {
		return false
	}
	for _, n := range p.state.nodes() {
		inv, err := p.state.inventory(n)
		if err != nil {
			continue
		}
		if rdma.Fits(inv, nil, req) == nil {
			return true
		}
	}
	return false
}

// mayHold reports whether a pod may hold devices the plugin counts: it carries a
// device-allocated annotation, or asks for RDMA devices (the plugin keeps counting
// what it recorded for it after its annotation is removed).
func mayHold(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[rdma.AnnotationDeviceAllocated]; ok {
		return true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[rdma.ResourceRDMA]; ok {
				return true
			}
			if _, ok := cs[i].Resources.Requests[rdma.ResourceRDMA]; ok {
				return true
			}
		}
	}
	return false
}

// sameAnnotations reports whether two versions of a pod have the same annotations
// of the given keys (absent and empty differ).
func sameAnnotations(a, b *corev1.Pod, keys ...string) bool {
	for _, k := range keys {
		va, oka := a.Annotations[k]
		vb, okb := b.Annotations[k]
		if oka != okb || va != vb {
			return false
		}
	}
	return true
}

// hintPodUpdated requeues a waiting pod when a bound pod's device-allocated or
// allocate-hint annotation changed (it may fix an annotation that made the node's
// holdings unknown), or when the waiting pod's own allocate-hint or joint-allocate
// annotation changed. Other updates (status, labels, ...) cannot make it fit. The
// bound pod's new state is applied to the plugin's view first: the plugin's own
// handler of the pod informer may not have run yet when the pod is retried.
func (p *Plugin) hintPodUpdated(_ klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	newPod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return fwk.Queue, fmt.Errorf("%s: pod update of %T to %T", Name, oldObj, newObj)
	}
	if newPod.UID == pod.UID {
		if sameAnnotations(oldPod, newPod, rdma.AnnotationDeviceAllocateHint, rdma.AnnotationDeviceJointAllocate) {
			return fwk.QueueSkip, nil
		}
		return fwk.Queue, nil
	}
	if newPod.Spec.NodeName == "" || sameAnnotations(oldPod, newPod, rdma.AnnotationDeviceAllocated, rdma.AnnotationDeviceAllocateHint) {
		return fwk.QueueSkip, nil
	}
	p.onPod(newPod)
	return fwk.Queue, nil
}

// hintDevice requeues a waiting pod when a Device object is added, changed or
// deleted (a deletion can end devices being published twice). The new object is
// applied to the plugin's view first: the plugin watches Device objects with its own
// informer, which may not have seen it yet when the pod is retried.
func (p *Plugin) hintDevice(_ klog.Logger, _ *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	if u, ok := newObj.(*unstructured.Unstructured); ok {
		p.onDevice(u)
	}
	return fwk.Queue, nil
}

// hintSlice requeues a waiting pod when a ResourceSlice changes or is deleted: the
// node may no longer publish devices twice.
func (p *Plugin) hintSlice(_ klog.Logger, _ *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	switch {
	case newObj != nil:
		p.onSlice(newObj)
	case oldObj != nil:
		if s, ok := oldObj.(*resourcev1.ResourceSlice); ok {
			p.state.deleteSlice(s.Name)
		}
	}
	return fwk.Queue, nil
}
