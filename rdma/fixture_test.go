package rdma

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func i32(v int32) *int32 { return &v }

// nic builds a healthy RDMA PF. vfs are VF BDFs in one unlabelled group.
func nic(minor int32, bdf, root string, numa int32, labels map[string]string, vfs ...string) DeviceInfo {
	d := DeviceInfo{UUID: bdf, Minor: i32(minor), Type: RDMA, Health: true, Labels: labels,
		Topology: &DeviceTopology{NodeID: numa, PCIEID: root, BusID: bdf}}
	if len(vfs) > 0 {
		g := VirtualFunctionGroup{}
		for i, v := range vfs {
			g.VFs = append(g.VFs, VirtualFunction{Minor: int32(i), BusID: v})
		}
		d.VFGroups = []VirtualFunctionGroup{g}
	}
	return d
}

// vfRange returns n VF BDFs on bus starting at device 0 function 2 (…:bus:00.2 …).
func vfRange(domain uint32, bus uint8, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		k := i + 2
		out = append(out, BDF{Domain: domain, Bus: bus, Device: uint8(k / 8), Function: uint8(k % 8)}.String())
	}
	return out
}

func gpuDev(minor int32, root string, numa int32) DeviceInfo {
	return DeviceInfo{UUID: fmt.Sprintf("GPU-%d", minor), Minor: i32(minor), Type: GPU, Health: true,
		Topology: &DeviceTopology{NodeID: numa, PCIEID: root}}
}

func mustInv(t testing.TB, name string, devs ...DeviceInfo) *Inventory {
	t.Helper()
	inv, err := NewInventory(Node{Name: name, Devices: devs})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func mustBDF(s string) BDF {
	b, err := ParseBDF(s)
	if err != nil {
		panic(err)
	}
	return b
}

// railNode is an 8-GPU, 8-NIC rail-optimised node: four PCIe switches, each with two
// GPUs and two compute NICs (rails 0..7); switch 0 also holds a storage NIC.
func railNode(t testing.TB) *Inventory {
	var devs []DeviceInfo
	roots := []string{"pci0000:17", "pci0000:3a", "pci0000:5d", "pci0000:80"}
	buses := []uint8{0x18, 0x3b, 0x5e, 0x81}
	for s, root := range roots {
		numa := int32(s / 2)
		for k := 0; k < 2; k++ {
			g := int32(2*s + k)
			devs = append(devs, gpuDev(g, root, numa))
			bdf := BDF{Bus: buses[s], Function: uint8(k)}.String()
			devs = append(devs, nic(g, bdf, root, numa, map[string]string{"rdma-type": "compute", "rail": fmt.Sprint(g)}))
		}
	}
	devs = append(devs, nic(8, "0000:19:00.0", roots[0], 0, map[string]string{"rdma-type": "storage"}))
	return mustInv(t, "rail", devs...)
}
