package draparity

import (
	"context"
	"fmt"
	resourceapi "k8s.io/api/resource/v1"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/kplan-dev/kplan/rdma"
)

// benchNode is the node shape: 2 PCIe roots, each with 4 GPUs and 2 RDMA PFs
// of 8 VFs (8 GPUs, 4 PFs, 32 VFs).
func benchNode() *rdma.Inventory {
	n := rdma.Node{Name: "bench"}
	g, k := 0, 0
	for r := 0; r < 2; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		for i := 0; i < 4; i++ {
			n.Devices = append(n.Devices, rdma.DeviceInfo{UUID: fmt.Sprintf("GPU-%d", g), Minor: i32(g), Type: rdma.GPU, Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: fmt.Sprintf("0000:%02x:00.0", 0x80+g)}})
			g++
		}
		for i := 0; i < 2; i++ {
			bus := 0x10 + 4*k
			bdf := fmt.Sprintf("0000:%02x:00.0", bus)
			d := rdma.DeviceInfo{UUID: bdf, Minor: i32(k), Type: rdma.RDMA, Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: bdf}}
			grp := rdma.VirtualFunctionGroup{}
			for j := 0; j < 8; j++ {
				grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(j), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+j/8, j%8)})
			}
			d.VFGroups = []rdma.VirtualFunctionGroup{grp}
			n.Devices = append(n.Devices, d)
			k++
		}
	}
	inv, err := rdma.NewInventory(n)
	if err != nil {
		panic(err)
	}
	return inv
}

// BenchmarkAllocate compares rdma.Allocate with the DRA structured allocator on the
// same node and the same joint request: 2 GPUs and 2 VFs on one PCIe root, with the
// first root's GPUs taken so both must look past it. The structured allocator is
// built once per node and claim set, as the DRA scheduler plugin builds it once per
// pod and reuses it for every node; its Allocate is what runs per node.
func BenchmarkAllocate(b *testing.B) {
	inv := benchNode()
	req := rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Scope: rdma.ScopePCIe, Joint: rdma.JointSamePCIe}
	used := new(rdma.Used)
	allocated := sets.New[structured.DeviceID]()
	for m := int32(0); m < 4; m++ {
		used.HoldGPU(m)
		allocated.Insert(structured.MakeDeviceID(driver, inv.Name(), fmt.Sprintf("gpu-%d", m)))
	}
	ref, err := rdma.Allocate(inv, used, req)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := claim("c", "vf", req)
	celCache := cel.NewCache(10, cel.Features{})
	res, err := draAllocate(ctx, inv, allocated, c, celCache)
	if err != nil || res == nil {
		b.Fatalf("structured allocator: %v %v", res, err)
	}
	if len(res.Devices.Results) != ref.Units()+len(ref.GPUs) {
		b.Fatalf("DRA gave %d devices, kplan %d", len(res.Devices.Results), ref.Units()+len(ref.GPUs))
	}
	b.Run("kplan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rdma.Allocate(inv, used, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("structured", func(b *testing.B) {
		alloc, err := structured.NewAllocator(ctx, structured.Features{}, structured.AllocatedState{AllocatedDevices: allocated}, classLister(classes()), []*resourceapi.ResourceSlice{slice(inv)}, celCache)
		if err != nil {
			b.Fatal(err)
		}
		node := nodeObject(inv.Name())
		b.ReportAllocs()
		for b.Loop() {
			res, err := alloc.Allocate(ctx, node, []*resourceapi.ResourceClaim{c})
			if err != nil || len(res) == 0 {
				b.Fatal(res, err)
			}
		}
	})
	// The same claim with the GPU request first: DRA fills requests in order and
	// backtracks, so with the NICs first it tries every VF pair on the first root
	// before finding that root's GPUs taken.
	gpuFirst := c.DeepCopy()
	r := gpuFirst.Spec.Devices.Requests
	r[0], r[1] = r[1], r[0]
	b.Run("structured-gpu-first", func(b *testing.B) {
		alloc, err := structured.NewAllocator(ctx, structured.Features{}, structured.AllocatedState{AllocatedDevices: allocated}, classLister(classes()), []*resourceapi.ResourceSlice{slice(inv)}, celCache)
		if err != nil {
			b.Fatal(err)
		}
		node := nodeObject(inv.Name())
		b.ReportAllocs()
		for b.Loop() {
			res, err := alloc.Allocate(ctx, node, []*resourceapi.ResourceClaim{gpuFirst})
			if err != nil || len(res) == 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("structured-with-new-allocator", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := draAllocate(ctx, inv, allocated, c, celCache); err != nil || res == nil {
				b.Fatal(res, err)
			}
		}
	})
}
