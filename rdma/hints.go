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
// allocate-hint and joint-allocate annotations, following koordinator's rules:
//
//   - VFs only when the rdma hint has a vfSelector (Kind VFs); otherwise the request is
//     for PFs: WholePF under PercentModel, Auto (the node's mode) under CountModel.
//   - CountModel: the quantity is the number of units; allocateStrategy ApplyForAll
//     asks for all of them instead.
//   - PercentModel (koordinator upstream): a multiple of 100 above 100 is that many
//     devices; otherwise ApplyForAll asks for every matching device, RequestsAsCount
//     takes the quantity as a count, and a quantity up to 100 is one device; anything
//     else is an error. One VF per PF (OneVFPerPF), as koordinator allocates them.
//   - A joint-allocate annotation naming gpu and rdma allocates the pod's whole GPUs
//     (nvidia.com/gpu, or koordinator.sh/gpu in hundreds) jointly, with requiredScope
//     SamePCIe as JointSamePCIe, else JointPreferred, and NICPerGPURoot: one NIC per
//     PCIe root of the GPUs allocated (at least the count above). An rdma hint with
//     ApplyForAll takes rdma out of the joint allocation, as koordinator does: the
//     GPUs are still allocated, and every matching NIC with them.
//
// A zero quantity asks for no NICs, whatever the hints say. Quantities of
// koordinator.sh/rdma, nvidia.com/gpu and koordinator.sh/gpu must be whole and not
// negative (1.5, 500m, -100 and 1e30 are errors naming the resource). The error is
// an *Error with ReasonInvalidRequest (ReasonInvalidOptions for an unknown model)
// that names the pod. pod is not mutated; a nil pod is an error.
func RequestFromPod(pod *corev1.Pod, model CapacityModel) (Request, error) {
	if pod == nil {
		return Request{}, newError(ReasonInvalidRequest, "rdma: request from pod: nil pod")
	}
	var req Request
	fail := func(err error) (Request, error) {
		return Request{}, wrapError(ReasonInvalidRequest, "pod "+PodName(pod)+": ", err)
	}
	n, err := wholeRequest(pod, ResourceRDMA)
	if err != nil {
		return fail(err)
	}
	hints, err := DecodeAllocateHints(pod.Annotations[AnnotationDeviceAllocateHint])
	if err != nil {
		return fail(err)
	}
	h := hints[RDMA]
	if h == nil {
		h = &DeviceHint{}
	}
	switch model {
	case CountModel, "":
		switch {
		case n == 0:
		case h.AllocateStrategy == ApplyForAll:
			req.All = true
		default:
			req.Count = int(n)
		}
	case PercentModel:
		req.Kind, req.OneVFPerPF = WholePF, true
		switch {
		case n == 0:
		case n > percentPerDevice && n%percentPerDevice == 0:
			req.Count = int(n / percentPerDevice)
		case h.AllocateStrategy == ApplyForAll:
			req.All = true
		case h.AllocateStrategy == RequestsAsCount:
			req.Count = int(n)
		case n <= percentPerDevice:
			req.Count = 1
		default:
			return fail(fmt.Errorf("resource %s: %d is neither at most 100 nor a multiple of 100", ResourceRDMA, n))
		}
	default:
		return fail(newError(ReasonInvalidOptions, "%v", model.validate()))
	}
	req.Selector, req.VFSelector = h.Selector, h.VFSelector
	req.Scope, req.Exclusive = h.RequiredTopologyScope, h.ExclusivePolicy
	if h.VFSelector != nil {
		req.Kind = VFs
	}
	if g := hints[GPU]; g != nil {
		req.GPUSelector = g.Selector
	}
	gpus, err := wholeRequest(pod, ResourceNvidiaGPU)
	if err != nil {
		return fail(err)
	}
	kgpu, err := wholeRequest(pod, ResourceGPU)
	if err != nil {
		return fail(err)
	}
	joint, err := DecodeJointAllocate(pod.Annotations[AnnotationDeviceJointAllocate])
	if err != nil {
		return fail(err)
	}
	if joint != nil && slices.Contains(joint.DeviceTypes, GPU) && slices.Contains(joint.DeviceTypes, RDMA) {
		if gpus == 0 && kgpu > 0 {
			if kgpu%100 != 0 {
				return fail(fmt.Errorf("annotation %s: joint allocation needs whole GPUs, %s is %d", AnnotationDeviceJointAllocate, ResourceGPU, kgpu))
			}
			gpus = kgpu / 100
		}
		req.GPUs = int(gpus)
		req.Joint = JointPreferred
		switch {
		case req.All: // ApplyForAll: not part of the joint allocation
		case joint.RequiredScope == JointSamePCIe:
			req.Joint, req.NICPerGPURoot = JointSamePCIe, true
		default:
			req.NICPerGPURoot = true
		}
	}
	return req, nil
}

// maxPodQuantity bounds the device quantities RequestFromPod accepts (no node has more
// devices, or percent, than this).
const maxPodQuantity = 1 << 20

// wholeRequest is the pod's request of r as a whole number, or an error naming r.
func wholeRequest(pod *corev1.Pod, r corev1.ResourceName) (int64, error) {
	q := podRequest(pod, r)
	n := q.Value()
	if q.Sign() < 0 || q.CmpInt64(n) != 0 {
		return 0, fmt.Errorf("resource %s: %s is not a whole number", r, q.String())
	}
	if n > maxPodQuantity {
		return 0, fmt.Errorf("resource %s: %s is more than %d", r, q.String(), maxPodQuantity)
	}
	return n, nil
}
