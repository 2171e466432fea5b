package rdmaplugin

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// Reserve allocates the devices on the chosen node and holds them for the pod until
// its annotation is seen on the bound pod, or Unreserve.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.draOnly {
		return nil // PreFilter skipped this pod, or it asks for no RDMA devices
	}
	a, err := p.state.reserve(pod.UID, node, p.snapshot(node), d.req)
	if err != nil {
		return statusFor(err)
	}
	d.alloc = &a
	return nil
}

// Unreserve releases what Reserve held for the pod.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.state.unreserve(pod.UID)
}

// PreBindPreFlight skips PreBind for pods without an RDMA request, and when the
// plugin's Bind writes the annotation.
func (p *Plugin) PreBindPreFlight(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if d, err := readCycle(state); err != nil || d.alloc == nil || p.bindsFirst() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// PreBind writes the allocation into the pod's device-allocated annotation, when the
// plugin does not bind the pod itself (see Bind).
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.alloc == nil || p.bindsFirst() {
		return nil
	}
	value, err := p.annotation(d, pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{rdma.AnnotationDeviceAllocated: value}}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("pod %s: write %s: %w", rdma.PodName(pod), rdma.AnnotationDeviceAllocated, err))
	}
	klog.FromContext(ctx).V(4).Info("allocated RDMA devices", "pod", klog.KObj(pod), "node", node, "annotation", value)
	return nil
}

// Bind binds a pod holding an allocation with a Binding that carries the
// device-allocated annotation; the API server writes it onto the pod together with
// the node name. That is one write per pod instead of PreBind's patch and the
// binding, and a pod never carries the annotation of an attempt whose binding failed.
// The plugin binds only when it is the profile's first bind plugin (as in the
// checked-in configuration); otherwise, and for pods without an allocation, it
// returns Skip and the next binder (DefaultBinder) binds, after PreBind wrote the
// annotation.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.alloc == nil || !p.bindsFirst() {
		return fwk.NewStatus(fwk.Skip)
	}
	value, err := p.annotation(d, pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{rdma.AnnotationDeviceAllocated: value}},
		Target: corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("pod %s: bind to %s with %s: %w", rdma.PodName(pod), node, rdma.AnnotationDeviceAllocated, err))
	}
	klog.FromContext(ctx).V(4).Info("bound with RDMA devices", "pod", klog.KObj(pod), "node", node, "annotation", value)
	return nil
}

// annotation is the pod's device-allocated annotation with the cycle's allocation.
func (p *Plugin) annotation(d *cycleData, pod *corev1.Pod) (string, error) {
	existing := pod.Annotations[rdma.AnnotationDeviceAllocated]
	if d.req.GPUs > 0 {
		// The plugin chose the GPUs, so a gpu list already there is its own, from an
		// attempt whose binding failed after PreBind's patch: replace it rather than
		// fail because the GPUs differ this time.
		var err error
		if existing, err = withoutGPUs(existing); err != nil {
			return "", fmt.Errorf("pod %s: %w", rdma.PodName(pod), err)
		}
	}
	value, err := rdma.EncodeAllocated(existing, *d.alloc, p.model)
	if err != nil {
		return "", fmt.Errorf("pod %s: %w", rdma.PodName(pod), err)
	}
	return value, nil
}

// withoutGPUs is a device-allocated annotation value without its gpu list.
func withoutGPUs(value string) (string, error) {
	a, err := rdma.DecodeAllocated(value)
	if err != nil {
		return "", err
	}
	if _, ok := a.Other[rdma.GPU]; !ok {
		return value, nil
	}
	delete(a.Other, rdma.GPU)
	if len(a.RDMA) == 0 && len(a.Other) == 0 {
		return "", nil
	}
	return a.Encode()
}
