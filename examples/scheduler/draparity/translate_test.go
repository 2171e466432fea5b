package draparity

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

// driver is the DRA driver name the slices and classes use.
const driver = "rdma.kplan.dev"

// classes are one DeviceClass per kind of device DRADevices writes.
func classes() []*resourceapi.DeviceClass {
	var out []*resourceapi.DeviceClass
	for _, kind := range []string{"gpu", "pf", "vf"} {
		out = append(out, &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: "kplan-" + kind},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].kind == %q`, driver, "rdma.kplan.dev", kind),
			}}}},
		})
	}
	return out
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no DeviceClass %s", name)
}

// slice publishes the node's inventory as one ResourceSlice.
func slice(inv *rdma.Inventory) *resourceapi.ResourceSlice {
	node := inv.Name()
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + "rdma"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
			Devices:  rdma.DRADevices(inv),
		},
	}
}

// labelCEL is the CEL selector for a label selector's matchLabels on the device
// attributes DRADevices writes for labels.
func labelCEL(s *metav1.LabelSelector) []resourceapi.DeviceSelector {
	if s == nil {
		return nil
	}
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var terms []string
	for _, k := range keys {
		id := strings.ReplaceAll(k, "-", "_")
		terms = append(terms, fmt.Sprintf(`%q in device.attributes[%q] && device.attributes[%q].%s == %q`, id, rdma.DRALabelDomain, rdma.DRALabelDomain, id, s.MatchLabels[k]))
	}
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: strings.Join(terms, " && ")}}}
}

// claim expresses req (of the node's unit kind, "pf" or "vf") as a ResourceClaim:
// request "nic" for the NICs, "gpu" for joint GPUs, and the scope as matchAttribute.
// Only the requests the parity test generates are supported: counts, PF and VF label
// selectors, Node/PCIe/NUMA/Device scope, and GPUs with SamePCIe inside PCIe scope.
func claim(name, unit string, req rdma.Request) *resourceapi.ResourceClaim {
	sel := append(labelCEL(req.Selector), labelCEL(req.VFSelector)...)
	reqs := []resourceapi.DeviceRequest{{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "kplan-" + unit, Selectors: sel,
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(req.Count),
	}}}
	names := []string{"nic"}
	if req.GPUs > 0 {
		reqs = append(reqs, resourceapi.DeviceRequest{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: "kplan-gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(req.GPUs),
		}})
		names = append(names, "gpu")
	}
	var attr resourceapi.FullyQualifiedName
	switch req.Scope {
	case rdma.ScopePCIe:
		attr = resourceapi.FullyQualifiedName(rdma.DRAAttributePCIeRoot)
	case rdma.ScopeNUMANode:
		attr = resourceapi.FullyQualifiedName(rdma.DRAAttributeNUMANode)
	case rdma.ScopeDevice:
		attr = resourceapi.FullyQualifiedName(rdma.DRAAttributePF)
	}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
	}
	if attr != "" {
		c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{Requests: names, MatchAttribute: &attr}}
	}
	return c
}

func nodeObject(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

func selector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}
