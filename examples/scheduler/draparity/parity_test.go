package draparity

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rdma"
)

// genNode draws a node in one mode (every PF with VFs, or none): 1-3 PCIe roots on as
// many NUMA nodes, 0-3 GPUs and 1-2 PFs per root, PFs labelled tier=a|b, VFs in two
// groups rdma-type=storage|compute, some devices unhealthy.
func genNode(t *rapid.T, name string) (rdma.Node, string) {
	roots := rapid.IntRange(1, 3).Draw(t, "roots")
	vfs := rapid.SampledFrom([]int{0, 2, 4, 8}).Draw(t, "vfs")
	n := rdma.Node{Name: name}
	g, k := 0, 0
	for r := 0; r < roots; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		for i := rapid.IntRange(0, 3).Draw(t, "gpus"); i > 0; i-- {
			n.Devices = append(n.Devices, rdma.DeviceInfo{
				UUID: fmt.Sprintf("GPU-%d", g), Minor: i32(g), Type: rdma.GPU, Health: rapid.IntRange(0, 9).Draw(t, "gpuHealth") > 0,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: fmt.Sprintf("0000:%02x:00.0", 0x80+g)},
			})
			g++
		}
		for i := rapid.IntRange(1, 2).Draw(t, "pfs"); i > 0; i-- {
			bus := 0x10 + 4*k
			bdf := fmt.Sprintf("0000:%02x:00.0", bus)
			d := rdma.DeviceInfo{
				UUID: bdf, Minor: i32(k), Type: rdma.RDMA, Health: rapid.IntRange(0, 9).Draw(t, "pfHealth") > 0,
				Labels:   map[string]string{"tier": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "tier")},
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: bdf},
			}
			if vfs > 0 {
				for gi, typ := range []string{"storage", "compute"} {
					grp := rdma.VirtualFunctionGroup{Labels: map[string]string{"rdma-type": typ}}
					for j := gi * vfs / 2; j < (gi+1)*vfs/2; j++ {
						grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(j), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+j/8, j%8)})
					}
					d.VFGroups = append(d.VFGroups, grp)
				}
			}
			n.Devices = append(n.Devices, d)
			k++
		}
	}
	unit := "pf"
	if vfs > 0 {
		unit = "vf"
	}
	return n, unit
}

func i32(v int) *int32 { x := int32(v); return &x }

// genRequest draws a request DRA can express for a node of the given unit kind.
func genRequest(t *rapid.T, unit string) rdma.Request {
	req := rdma.Request{Count: rapid.IntRange(1, 6).Draw(t, "count")}
	if unit == "vf" {
		req.Kind = rdma.VFs
	} else {
		req.Kind = rdma.WholePF
	}
	if rapid.Bool().Draw(t, "pfSelector") {
		req.Selector = selector("tier", rapid.SampledFrom([]string{"a", "b"}).Draw(t, "tierValue"))
	}
	if unit == "vf" && rapid.Bool().Draw(t, "vfSelector") {
		req.VFSelector = selector("rdma-type", rapid.SampledFrom([]string{"storage", "compute"}).Draw(t, "typeValue"))
	}
	scopes := []rdma.Scope{rdma.ScopeNode, rdma.ScopePCIe, rdma.ScopeNUMANode}
	if unit == "vf" {
		scopes = append(scopes, rdma.ScopeDevice)
	}
	req.Scope = rapid.SampledFrom(scopes).Draw(t, "scope")
	if req.Scope == rdma.ScopePCIe && rapid.Bool().Draw(t, "joint") {
		req.GPUs = rapid.IntRange(1, 3).Draw(t, "gpus")
		req.Joint = rdma.JointSamePCIe
		// rdma's SamePCIe gives every GPU root a NIC; with one root that is one NIC.
	}
	return req
}

// holdPrior allocates a few earlier requests with rdma.Allocate and returns what they
// hold, both as rdma.Used and as DRA allocated device IDs.
func holdPrior(t *rapid.T, inv *rdma.Inventory, unit string) (*rdma.Used, sets.Set[structured.DeviceID]) {
	used := new(rdma.Used)
	ids := sets.New[structured.DeviceID]()
	for i := rapid.IntRange(0, 3).Draw(t, "prior"); i > 0; i-- {
		a, err := rdma.Allocate(inv, used, genRequest(t, unit))
		if err != nil {
			continue
		}
		used.Add(a)
		for _, name := range deviceNames(a) {
			ids.Insert(structured.MakeDeviceID(driver, inv.Name(), name))
		}
	}
	return used, ids
}

// deviceNames are the DRA device names of an rdma allocation.
func deviceNames(a rdma.Allocation) []string {
	var out []string
	for _, g := range a.GPUs {
		out = append(out, fmt.Sprintf("gpu-%d", g.Minor))
	}
	for _, n := range a.NICs {
		if n.Whole {
			out = append(out, "pf-"+dashed(n.BDF.String()))
		}
		for _, v := range n.VFs {
			out = append(out, "vf-"+dashed(v.BDF.String()))
		}
	}
	return out
}

func dashed(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ':' || c == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

// draAllocate runs the structured allocator (the DRA scheduler plugin's) for one claim
// on one node; nil result means it found no allocation.
func draAllocate(ctx context.Context, inv *rdma.Inventory, allocated sets.Set[structured.DeviceID], c *resourceapi.ResourceClaim, celCache *cel.Cache) (*resourceapi.AllocationResult, error) {
	alloc, err := structured.NewAllocator(ctx, structured.Features{}, structured.AllocatedState{AllocatedDevices: allocated}, classLister(classes()), []*resourceapi.ResourceSlice{slice(inv)}, celCache)
	if err != nil {
		return nil, err
	}
	res, err := alloc.Allocate(ctx, nodeObject(inv.Name()), []*resourceapi.ResourceClaim{c})
	if err != nil || len(res) == 0 {
		return nil, err
	}
	return &res[0], nil
}

// TestParityWithStructuredAllocator: on random single-mode nodes with random earlier
// allocations, rdma.Allocate and the DRA structured allocator agree on whether a
// request fits, and when both allocate, DRA's devices are free, of the right kind and
// count, match the selectors and respect the scope.
func TestParityWithStructuredAllocator(t *testing.T) {
	celCache := cel.NewCache(100, cel.Features{})
	rapid.Check(t, func(t *rapid.T) {
		n, unit := genNode(t, "node-1")
		inv, err := rdma.NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		used, allocated := holdPrior(t, inv, unit)
		req := genRequest(t, unit)
		a, rerr := rdma.Allocate(inv, used, req)
		res, derr := draAllocate(context.Background(), inv, allocated, claim("c", unit, req), celCache)
		if derr != nil {
			t.Fatalf("structured allocator: %v", derr)
		}
		if (rerr == nil) != (res != nil) {
			t.Fatalf("rdma.Allocate error %v, DRA allocated %v: they disagree on %+v", rerr, res, req)
		}
		if res == nil {
			return
		}
		checkDRAResult(t, inv, allocated, req, unit, res)
		if got, want := len(a.GPUs), req.GPUs; got != want {
			t.Fatalf("rdma gave %d GPUs, want %d", got, want)
		}
	})
}

// checkDRAResult checks DRA's result against the request's constraints.
func checkDRAResult(t *rapid.T, inv *rdma.Inventory, allocated sets.Set[structured.DeviceID], req rdma.Request, unit string, res *resourceapi.AllocationResult) {
	devices := map[string]resourceapi.Device{}
	for _, d := range rdma.DRADevices(inv) {
		devices[d.Name] = d
	}
	var nics, gpus int
	scope := map[string]bool{}
	for _, r := range res.Devices.Results {
		if allocated.Has(structured.MakeDeviceID(r.Driver, r.Pool, r.Device)) {
			t.Fatalf("DRA allocated %s, already held", r.Device)
		}
		d := devices[r.Device]
		kind := *d.Attributes[rdma.DRAAttributeKind].StringValue
		switch r.Request {
		case "nic":
			nics++
			if kind != unit {
				t.Fatalf("DRA gave %s (%s) for a %s request", r.Device, kind, unit)
			}
		case "gpu":
			gpus++
			if kind != "gpu" {
				t.Fatalf("DRA gave %s for a GPU", r.Device)
			}
		}
		switch req.Scope {
		case rdma.ScopePCIe:
			scope[*d.Attributes[rdma.DRAAttributePCIeRoot].StringValue] = true
		case rdma.ScopeNUMANode:
			scope[fmt.Sprint(*d.Attributes[rdma.DRAAttributeNUMANode].IntValue)] = true
		case rdma.ScopeDevice:
			scope[*d.Attributes[rdma.DRAAttributePF].StringValue] = true
		}
	}
	if nics != req.Count || gpus != req.GPUs {
		t.Fatalf("DRA gave %d NICs and %d GPUs, want %d and %d", nics, gpus, req.Count, req.GPUs)
	}
	if len(scope) > 1 {
		t.Fatalf("DRA's devices span %d %s groups", len(scope), req.Scope)
	}
}
