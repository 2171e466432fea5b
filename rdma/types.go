package rdma

import (
	corev1 "k8s.io/api/core/v1"
)

// DeviceType is the kind of a device entry, as in koordinator's Device CRD.
type DeviceType string

// Device types koordinator's Device CRD knows.
const (
	GPU  DeviceType = "gpu"
	RDMA DeviceType = "rdma"
	FPGA DeviceType = "fpga"
)

// Resource and annotation names shared with koordinator.
const (
	// ResourceRDMA is the node and pod resource for RDMA devices.
	ResourceRDMA corev1.ResourceName = "koordinator.sh/rdma"
	// ResourceGPUCore and ResourceGPUMemoryRatio are what a whole GPU is allocated as.
	ResourceGPUCore        corev1.ResourceName = "koordinator.sh/gpu-core"
	ResourceGPUMemoryRatio corev1.ResourceName = "koordinator.sh/gpu-memory-ratio"
	// ResourceGPU is the combined GPU resource (100 per whole GPU); ResourceNvidiaGPU
	// is the device plugin's (1 per GPU). RequestFromPod reads both.
	ResourceGPU       corev1.ResourceName = "koordinator.sh/gpu"
	ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

	// AnnotationDeviceAllocated holds the scheduler's allocation (see EncodeAllocated).
	AnnotationDeviceAllocated = "scheduling.koordinator.sh/device-allocated"
	// AnnotationDeviceAllocateHint holds per-type hints (see DecodeAllocateHints).
	AnnotationDeviceAllocateHint = "scheduling.koordinator.sh/device-allocate-hint"
	// AnnotationDeviceJointAllocate asks for joint GPU+RDMA allocation.
	AnnotationDeviceJointAllocate = "scheduling.koordinator.sh/device-joint-allocate"
)

// UnknownNUMANode is the NUMA node of a device whose node is not known. It is never
// treated as node 0.
const UnknownNUMANode = -1

// Node is one node's device inventory: the spec of koordinator's Device object (named
// like the node) with the name beside it.
type Node struct {
	// Name is the node's (and its Device object's) name.
	Name string `json:"name"`
	// Devices are the Device object's spec.devices.
	Devices []DeviceInfo `json:"devices,omitempty"`
}

// DeviceInfo is one device entry of the Device CRD's spec.devices. For RDMA the entry
// is a physical function (PF); its SR-IOV virtual functions (VFs) are in VFGroups.
type DeviceInfo struct {
	// UUID is the device id; koordinator uses the PF BDF for RDMA.
	UUID string `json:"id,omitempty"`
	// Minor is the device's minor number, unique per type on a node.
	Minor *int32 `json:"minor"`
	// Type is gpu, rdma or fpga.
	Type DeviceType `json:"type,omitempty"`
	// Health is false for a device that must not be allocated or counted. It is always
	// encoded, as koordinator's Device CRD requires the field.
	Health bool `json:"health"`
	// Resources is what the device offers (informational here).
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Topology places the device on socket, NUMA node and PCIe root.
	Topology *DeviceTopology `json:"topology,omitempty"`
	// VFGroups are the RDMA PF's virtual functions, grouped by labels.
	VFGroups []VirtualFunctionGroup `json:"vfGroups,omitempty"`
	// Labels select devices (e.g. rdma-type=storage).
	Labels map[string]string `json:"labels,omitempty"`
}

// DeviceTopology is where a device sits.
type DeviceTopology struct {
	// SocketID is the CPU socket the device is attached to.
	SocketID int32 `json:"socketID"`
	// NodeID is the NUMA node; -1 (UnknownNUMANode) when unknown.
	NodeID int32 `json:"nodeID"`
	// PCIEID is the PCIe root, e.g. "pci0000:3a"; the same value as DRA's
	// resource.kubernetes.io/pcieRoot attribute. Empty means unknown.
	PCIEID string `json:"pcieID"`
	// BusID is the device's own BDF.
	BusID string `json:"busID,omitempty"`
}

// VirtualFunctionGroup is a set of VFs sharing labels.
type VirtualFunctionGroup struct {
	// Labels select the group's VFs (Request.VFSelector, a hint's vfSelector).
	Labels map[string]string `json:"labels,omitempty"`
	// VFs are the group's VFs.
	VFs []VirtualFunction `json:"vfs,omitempty"`
}

// VirtualFunction is one SR-IOV VF.
type VirtualFunction struct {
	// Minor is the VF's minor number, unique on its PF.
	Minor int32 `json:"minor"`
	// BusID is the VF's PCI address (BDF).
	BusID string `json:"busID,omitempty"`
}

// DeviceAllocation is one entry of the device-allocated annotation's per-type list.
// For RDMA, ID (koordinator upstream) and BusID (the design) both carry the PF BDF.
type DeviceAllocation struct {
	// Minor is the device's (for RDMA: the PF's) minor number.
	Minor int32 `json:"minor"`
	// Resources is what the pod holds of the device, e.g. koordinator.sh/rdma: 1 (a
	// VF or a PF share) or 100 (a whole PF in the percent model).
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// ID is the device id; for RDMA koordinator upstream writes the PF BDF here.
	ID string `json:"id,omitempty"`
	// Extension carries the allocated VFs; nil when the PF is held whole.
	Extension *DeviceAllocationExtension `json:"extension,omitempty"`
	// BusID is the PF BDF (the design's field), for the CNI.
	BusID string `json:"busID,omitempty"`
}

// DeviceAllocationExtension carries the VFs of an RDMA allocation.
type DeviceAllocationExtension struct {
	// VirtualFunctions are the allocated VFs.
	VirtualFunctions []VirtualFunctionSpec `json:"vfs,omitempty"`
}

// VirtualFunctionSpec is an allocated VF; Minor is -1 (VF minors are not used).
type VirtualFunctionSpec struct {
	// Minor is -1: koordinator does not use VF minors in the annotation.
	Minor int32 `json:"minor"`
	// BusID is the VF's PCI address (BDF).
	BusID string `json:"busID,omitempty"`
}
