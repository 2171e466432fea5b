package rdma

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Koordinator's Device object, as served by the API server: one per node, named like
// the node, cluster scoped. A scheduler plugin watches it (e.g. with a dynamic
// informer on group DeviceGroup, version DeviceVersion, resource DeviceResource) and
// turns each into a Node with NodeFromDevice.
const (
	DeviceGroup    = "scheduling.koordinator.sh"
	DeviceVersion  = "v1alpha1"
	DeviceResource = "devices"
	DeviceKind     = "Device"
)

// MaxDevices bounds the entries of a Device object's spec.devices NodeFromDevice
// accepts; a real node has a few dozen.
const MaxDevices = 4096

// NodeFromDevice builds a node's inventory input from koordinator's Device object
// (scheduling.koordinator.sh/v1alpha1, kind Device) as read from the API server, e.g.
// by a dynamic client or informer: the name is metadata.name, the devices are
// spec.devices with koordinator's field names. Fields kplan does not use (moduleID,
// conditions, status) are ignored. An object of another apiVersion or kind, without a
// name, with malformed spec.devices or with more than MaxDevices entries is an error
// naming the object and field; apiVersion and kind may be absent (as in objects
// converted from typed clients). The error is an *Error with ReasonInvalidInventory.
// The result is not validated: pass it to NewInventory. obj is not mutated.
func NodeFromDevice(obj *unstructured.Unstructured) (Node, error) {
	if obj == nil || obj.Object == nil {
		return Node{}, newError(ReasonInvalidInventory, "rdma: node from device: nil object")
	}
	name := obj.GetName()
	what := "Device " + name
	if av := obj.GetAPIVersion(); av != "" && av != DeviceGroup+"/"+DeviceVersion {
		return Node{}, newError(ReasonInvalidInventory, "rdma: %s: apiVersion %q, want %s/%s", what, av, DeviceGroup, DeviceVersion)
	}
	if k := obj.GetKind(); k != "" && k != DeviceKind {
		return Node{}, newError(ReasonInvalidInventory, "rdma: %s: kind %q, want %s", what, k, DeviceKind)
	}
	if name == "" {
		return Node{}, newError(ReasonInvalidInventory, "rdma: Device: metadata.name is empty (it must be the node's name)")
	}
	devices, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "devices")
	if err != nil {
		return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices: %v", what, err)
	}
	n := Node{Name: name}
	if !found || devices == nil {
		return n, nil
	}
	list, ok := devices.([]any)
	if !ok {
		return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices: a %T, want a list", what, devices)
	}
	if len(list) > MaxDevices {
		return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices: %d entries, at most %d", what, len(list), MaxDevices)
	}
	n.Devices = make([]DeviceInfo, len(list))
	for i, d := range list {
		if _, ok := d.(map[string]any); !ok {
			return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices[%d]: a %T, want an object", what, i, d)
		}
		b, err := json.Marshal(d)
		if err != nil {
			return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices[%d]: %v", what, i, err)
		}
		if err := json.Unmarshal(b, &n.Devices[i]); err != nil {
			return Node{}, newError(ReasonInvalidInventory, "rdma: %s: spec.devices[%d]: %v", what, i, err)
		}
	}
	return n, nil
}
