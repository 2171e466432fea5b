package main

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// This file holds the rdma section: a joint GPU + RDMA allocation on one PCIe root.

func jointAllocation(w io.Writer) error {
	minor := func(v int32) *int32 { return &v }
	// A GPU server as koordinator's Device object describes it: two PCIe roots, each
	// with two GPUs and one RDMA NIC with four SR-IOV VFs.
	node := rdma.Node{Name: "gpu-node-1"}
	for r, root := range []string{"pci0000:17", "pci0000:ae"} {
		bus := []int{0x18, 0xaf}[r]
		for g := range 2 {
			node.Devices = append(node.Devices, rdma.DeviceInfo{
				Type: rdma.GPU, Minor: minor(int32(2*r + g)), UUID: fmt.Sprintf("GPU-%d", 2*r+g), Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root},
			})
		}
		pf := fmt.Sprintf("0000:%02x:00.0", bus)
		var vfs []rdma.VirtualFunction
		for v := range 4 {
			vfs = append(vfs, rdma.VirtualFunction{Minor: int32(v), BusID: fmt.Sprintf("0000:%02x:00.%d", bus, v+2)})
		}
		node.Devices = append(node.Devices, rdma.DeviceInfo{
			Type: rdma.RDMA, Minor: minor(int32(r)), UUID: pf, Health: true,
			Labels:   map[string]string{"rdma-type": "compute"},
			Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: pf},
			VFGroups: []rdma.VirtualFunctionGroup{{VFs: vfs}},
		})
	}
	inv, err := rdma.NewInventory(node)
	if err != nil {
		return err
	}
	capacity, err := rdma.Capacity(inv, rdma.CountModel)
	if err != nil {
		return err
	}
	q := capacity[rdma.ResourceRDMA]
	fmt.Fprintf(w, "node %s: GPUs 0,1 and NIC 0000:18:00.0 on pci0000:17; GPUs 2,3 and NIC 0000:af:00.0 on pci0000:ae; capacity %s=%s\n",
		inv.Name(), rdma.ResourceRDMA, q.String())

	// Another pod already holds GPU 0.
	used := new(rdma.Used)
	used.HoldGPU(0)
	req := rdma.Request{Count: 1, GPUs: 1, Joint: rdma.JointSamePCIe}
	fmt.Fprintln(w, "GPU 0 is in use; the pod asks for 1 GPU and 1 VF on the same PCIe root (joint, SamePCIe)")
	a, err := rdma.Allocate(inv, used, req)
	if err != nil {
		return err
	}
	for _, g := range a.GPUs {
		fmt.Fprintf(w, "  GPU %d (%s) on %s, NUMA node %d\n", g.Minor, g.ID, g.PCIeRoot, g.NUMANode)
	}
	for _, n := range a.NICs {
		for _, vf := range n.VFs {
			fmt.Fprintf(w, "  VF %s of PF %s on %s, NUMA node %d\n", vf.BDF, n.BDF, n.PCIeRoot, n.NUMANode)
		}
	}
	value, err := rdma.EncodeAllocated("", a, rdma.CountModel)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  annotation %s:\n    %s\n", rdma.AnnotationDeviceAllocated, value)
	ids, err := rdma.DeviceIDsFromPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{rdma.AnnotationDeviceAllocated: value}}})
	if err != nil {
		return err
	}
	env := rdma.PCIDeviceEnv(string(rdma.ResourceRDMA), ids)
	fmt.Fprintf(w, "  container env: %s=%s\n", env.Name, env.Value)

	// A second pod: GPUs 2 and 3 share pci0000:ae with a NIC, so 2 GPUs + 2 VFs fit
	// there; 3 GPUs do not fit, since only 2 are free.
	used.Add(a)
	for _, gpus := range []int{2, 3} {
		fmt.Fprintf(w, "a second pod asks for %d GPUs and %d VFs, SamePCIe:\n", gpus, gpus)
		b, err := rdma.Allocate(inv, used, rdma.Request{Count: gpus, GPUs: gpus, Joint: rdma.JointSamePCIe})
		if err != nil {
			fmt.Fprintf(w, "  no fit: %v\n", err)
			continue
		}
		var got []string
		for _, g := range b.GPUs {
			got = append(got, fmt.Sprintf("GPU %d", g.Minor))
		}
		for _, n := range b.NICs {
			for _, vf := range n.VFs {
				got = append(got, "VF "+vf.BDF.String())
			}
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(got, ", "))
	}
	return nil
}
