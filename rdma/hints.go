package rdma

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllocateStrategy is a hint's allocateStrategy.
type AllocateStrategy string

// Allocate strategies.
const (
	ApplyForAll     AllocateStrategy = "ApplyForAll"
	RequestsAsCount AllocateStrategy = "RequestsAsCount"
)

// DeviceHint is one device type's entry in AnnotationDeviceAllocateHint.
type DeviceHint struct {
	// Selector selects PFs by their device labels; nil selects all.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// VFSelector selects VFs by their VF group's labels; nil selects all.
	VFSelector *metav1.LabelSelector `json:"vfSelector,omitempty"`
	// AllocateStrategy is ApplyForAll (every matching device) or RequestsAsCount (the
	// resource request is a count); empty is RequestsAsCount.
	AllocateStrategy AllocateStrategy `json:"allocateStrategy,omitempty"`
	// RequiredTopologyScope keeps the devices within one PCIe root or NUMA node.
	RequiredTopologyScope Scope `json:"requiredTopologyScope,omitempty"`
	// ExclusivePolicy reserves the allocated PFs (DeviceLevel) or their PCIe roots
	// (PCIeLevel) against other pods.
	ExclusivePolicy Exclusive `json:"exclusivePolicy,omitempty"`
}

// DeviceAllocateHints is the value of AnnotationDeviceAllocateHint.
type DeviceAllocateHints map[DeviceType]*DeviceHint

// DeviceJointAllocate is the value of AnnotationDeviceJointAllocate.
type DeviceJointAllocate struct {
	// DeviceTypes are the types allocated jointly, e.g. [gpu, rdma].
	DeviceTypes []DeviceType `json:"deviceTypes,omitempty"`
	// RequiredScope is the required NIC-to-GPU relation, e.g. SamePCIe.
	RequiredScope Joint `json:"requiredScope,omitempty"`
}

// DecodeAllocateHints parses AnnotationDeviceAllocateHint's value ("" is no hints).
func DecodeAllocateHints(value string) (DeviceAllocateHints, error) {
	if value == "" {
		return nil, nil
	}
	var h DeviceAllocateHints
	if err := json.Unmarshal([]byte(value), &h); err != nil {
		return nil, annotationError(AnnotationDeviceAllocateHint, "%v", err)
	}
	for t, d := range h {
		if d == nil {
			continue
		}
		switch d.AllocateStrategy {
		case "", ApplyForAll, RequestsAsCount:
		default:
			return nil, annotationError(AnnotationDeviceAllocateHint, "%s.allocateStrategy: unknown %q", t, d.AllocateStrategy)
		}
		switch d.RequiredTopologyScope {
		case "", ScopeNode, ScopeNUMANode, ScopePCIe, ScopeDevice:
		default:
			return nil, annotationError(AnnotationDeviceAllocateHint, "%s.requiredTopologyScope: unknown %q", t, d.RequiredTopologyScope)
		}
		switch d.ExclusivePolicy {
		case ExclusiveNone, ExclusiveDevice, ExclusivePCIe:
		default:
			return nil, annotationError(AnnotationDeviceAllocateHint, "%s.exclusivePolicy: unknown %q", t, d.ExclusivePolicy)
		}
		for name, s := range map[string]*metav1.LabelSelector{"selector": d.Selector, "vfSelector": d.VFSelector} {
			if _, err := selector(s); err != nil {
				return nil, annotationError(AnnotationDeviceAllocateHint, "%s.%s: %v", t, name, err)
			}
		}
	}
	return h, nil
}

// DecodeJointAllocate parses AnnotationDeviceJointAllocate's value ("" is nil).
func DecodeJointAllocate(value string) (*DeviceJointAllocate, error) {
	if value == "" {
		return nil, nil
	}
	var j DeviceJointAllocate
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, annotationError(AnnotationDeviceJointAllocate, "%v", err)
	}
	switch j.RequiredScope {
	case "", JointSamePCIe:
	default:
		return nil, annotationError(AnnotationDeviceJointAllocate, "requiredScope: unknown %q (want SamePCIe or nothing)", j.RequiredScope)
	}
	return &j, nil
}

// podRequest is the pod's effective request of r: the larger of the containers' sum and
// any init container's (requests, else limits).
func podRequest(pod *corev1.Pod, r corev1.ResourceName) resource.Quantity {
	get := func(c *corev1.Container) resource.Quantity {
		if q, ok := c.Resources.Requests[r]; ok {
			return q
		}
		return c.Resources.Limits[r]
	}
	var sum resource.Quantity
	for i := range pod.Spec.Containers {
		sum.Add(get(&pod.Spec.Containers[i]))
	}
	for i := range pod.Spec.InitContainers {
		if q := get(&pod.Spec.InitContainers[i]); q.Cmp(sum) > 0 {
			sum = q
		}
	}
	return sum
}

// PodName is "namespace/name", as errors name pods.
func PodName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// RequestFromPod builds a Request from a pod's koordinator.sh/rdma request and its
// allocate-hint and joint-allocate annotations. Under CountModel the quantity is the
// number of units (kind Auto). Under PercentModel a multiple of 100 is that many
// hundreds of units (kind Auto) and a quantity below 100 is one VF. With a
// joint-allocate annotation naming gpu and rdma, the pod's whole GPUs (nvidia.com/gpu,
// or koordinator.sh/gpu in hundreds) are allocated jointly. pod is not mutated.
func RequestFromPod(pod *corev1.Pod, model CapacityModel) (Request, error) {
	var req Request
	fail := func(err error) (Request, error) { return Request{}, fmt.Errorf("pod %s: %w", PodName(pod), err) }
	q := podRequest(pod, ResourceRDMA)
	n := q.Value()
	if q.Sign() < 0 || q.CmpInt64(n) != 0 {
		return fail(fmt.Errorf("resource %s: %s is not a whole number", ResourceRDMA, q.String()))
	}
	switch model {
	case CountModel:
		req.Count = int(n)
	case PercentModel:
		switch {
		case n == 0:
		case n < PercentPerDevice:
			req.Kind, req.Count = VFs, 1
		case n%PercentPerDevice == 0:
			req.Count = int(n / PercentPerDevice)
		default:
			return fail(fmt.Errorf("resource %s: %d is neither below 100 nor a multiple of 100", ResourceRDMA, n))
		}
	default:
		return fail(fmt.Errorf("unknown capacity model %d", model))
	}
	hints, err := DecodeAllocateHints(pod.Annotations[AnnotationDeviceAllocateHint])
	if err != nil {
		return fail(err)
	}
	if h := hints[RDMA]; h != nil {
		req.Selector, req.VFSelector = h.Selector, h.VFSelector
		req.All = h.AllocateStrategy == ApplyForAll
		req.Scope, req.Exclusive = h.RequiredTopologyScope, h.ExclusivePolicy
		if h.VFSelector != nil {
			req.Kind = VFs
		}
	}
	if h := hints[GPU]; h != nil {
		req.GPUSelector = h.Selector
	}
	joint, err := DecodeJointAllocate(pod.Annotations[AnnotationDeviceJointAllocate])
	if err != nil {
		return fail(err)
	}
	if joint != nil && slices.Contains(joint.DeviceTypes, GPU) && slices.Contains(joint.DeviceTypes, RDMA) {
		nq, kq := podRequest(pod, ResourceNvidiaGPU), podRequest(pod, ResourceGPU)
		g := nq.Value()
		if kg := kq.Value(); g == 0 && kg > 0 {
			if kg%100 != 0 {
				return fail(fmt.Errorf("annotation %s: joint allocation needs whole GPUs, %s is %d", AnnotationDeviceJointAllocate, ResourceGPU, kg))
			}
			g = kg / 100
		}
		req.GPUs = int(g)
		req.Joint = JointPreferred
		if joint.RequiredScope == JointSamePCIe {
			req.Joint = JointSamePCIe
		}
	}
	return req, nil
}
