package rdma

import (
	"strings"
	"testing"
)

func TestValidateNode(t *testing.T) {
	good := nic(0, "0000:3b:00.0", "pci0000:3a", 0, nil, vfRange(0, 0x3b, 2)...)
	for _, tc := range []struct {
		name string
		devs func() []DeviceInfo
		want string // substring of the aggregate error; "" means valid
	}{
		{"a well-formed NIC with VFs is valid", func() []DeviceInfo { return []DeviceInfo{good} }, ""},
		{"a missing minor is named", func() []DeviceInfo { d := good; d.Minor = nil; return []DeviceInfo{d} }, "devices[0].minor: Required"},
		{"a duplicate minor is named", func() []DeviceInfo {
			d := nic(0, "0000:5e:00.0", "r", 0, nil)
			return []DeviceInfo{good, d}
		}, "devices[1].minor: Duplicate value"},
		{"an unknown type is named", func() []DeviceInfo { d := good; d.Type = "tpu"; return []DeviceInfo{d} }, "devices[0].type: Unsupported value"},
		{"an RDMA device without any BDF is named", func() []DeviceInfo {
			d := nic(0, "", "r", 0, nil)
			d.UUID = ""
			return []DeviceInfo{d}
		}, "devices[0].topology.busID: Required"},
		{"id and busID that disagree are named", func() []DeviceInfo { d := good; d.UUID = "0000:3b:00.1"; return []DeviceInfo{d} }, "devices[0].id: Invalid value"},
		{"a BDF used twice is named", func() []DeviceInfo {
			d := nic(1, "0000:3b:00.2", "r", 0, nil)
			return []DeviceInfo{good, d}
		}, "Duplicate value: \"0000:3b:00.2 (also devices[0].vfGroups[0].vfs[0].busID)\""},
		{"NUMA node below -1 is named", func() []DeviceInfo { d := nic(0, "0000:3b:00.0", "r", -2, nil); return []DeviceInfo{d} }, "devices[0].topology.nodeID"},
		{"VFs on a GPU are named", func() []DeviceInfo { d := gpuDev(0, "r", 0); d.VFGroups = good.VFGroups; return []DeviceInfo{d} }, "devices[0].vfGroups: Forbidden"},
		{"a bad label is named", func() []DeviceInfo {
			d := nic(0, "0000:3b:00.0", "r", 0, map[string]string{"a b": "c"})
			return []DeviceInfo{d}
		}, "devices[0].labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewInventory(Node{Name: "n1", Devices: tc.devs()})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "node n1: ") {
				t.Fatalf("got %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCapacity(t *testing.T) {
	unhealthy := nic(2, "0000:af:00.0", "r2", 1, nil, vfRange(0, 0xaf, 4)...)
	unhealthy.Health = false
	vfNode := mustInv(t, "vf",
		nic(0, "0000:3b:00.0", "r", 0, nil, vfRange(0, 0x3b, 8)...),
		nic(1, "0000:5e:00.0", "r", 0, nil, vfRange(0, 0x5e, 8)...),
		unhealthy)
	pfNode := mustInv(t, "pf", nic(0, "0000:3b:00.0", "r", 0, nil), nic(1, "0000:5e:00.0", "r", 0, nil))
	mixed := mustInv(t, "mixed", nic(0, "0000:3b:00.0", "r", 0, nil), nic(1, "0000:5e:00.0", "r", 0, nil, "0000:5e:00.2"))
	// A failed NIC that lost its VFs (SR-IOV off after a reset) on a VF-mode node.
	failedNoVFs := nic(3, "0000:d8:00.0", "r3", 1, nil)
	failedNoVFs.Health = false
	vfNodeWithFailedPF := mustInv(t, "vf-failed",
		nic(0, "0000:3b:00.0", "r", 0, nil, vfRange(0, 0x3b, 8)...),
		nic(1, "0000:5e:00.0", "r", 0, nil, vfRange(0, 0x5e, 8)...),
		failedNoVFs)
	allFailed := mustInv(t, "all-failed", failedNoVFs)
	for _, tc := range []struct {
		name  string
		inv   *Inventory
		model CapacityModel
		want  int64
		err   string
	}{
		// 2 healthy PFs x 8 VFs = 16; the unhealthy PF's 4 VFs do not count.
		{"VF mode counts the healthy PFs' VFs", vfNode, CountModel, 16, ""},
		// 2 healthy PFs x 100.
		{"the percent model counts healthy PFs times 100", vfNode, PercentModel, 200, ""},
		{"PF mode counts PFs", pfNode, CountModel, 2, ""},
		{"mixed modes are an error in the count model", mixed, CountModel, 0, "node mixed: rdma: healthy PFs with and without VFs"},
		{"mixed modes are fine in the percent model", mixed, PercentModel, 200, ""},
		{"an unhealthy PF without VFs does not make a VF node mixed", vfNodeWithFailedPF, CountModel, 16, ""},
		{"a node whose only PF is unhealthy has no capacity", allFailed, CountModel, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rl, err := Capacity(tc.inv, tc.model)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q := rl[ResourceRDMA]
			if q.Value() != tc.want {
				t.Fatalf("got %s want %d", q.String(), tc.want)
			}
		})
	}
}

// Allocate's default kind follows the node's mode, which only healthy PFs decide.
func TestModeIgnoresUnhealthyPFs(t *testing.T) {
	failed := nic(3, "0000:d8:00.0", "r3", 1, nil)
	failed.Health = false
	inv := mustInv(t, "n1", nic(0, "0000:3b:00.0", "r", 0, nil, vfRange(0, 0x3b, 2)...), failed)
	if m, err := inv.modeOrError(); err != nil || m != modeVF {
		t.Fatalf("mode %v, %v; want VF mode", m, err)
	}
	a, err := Allocate(inv, nil, Request{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.NICs) != 1 || a.NICs[0].Whole || len(a.NICs[0].VFs) != 2 {
		t.Fatalf("want 2 VFs of the healthy PF, got %+v", a.NICs)
	}
}

// A malformed VF address skips that VF only: the node stays schedulable with its other
// VFs, and the problem is reported by the inventory's Errors (and by ValidateNode).
func TestMalformedVFAddressIsSkippedAndReported(t *testing.T) {
	n := Node{Name: "n1", Devices: []DeviceInfo{
		nic(0, "0000:3b:00.0", "r", 0, nil, "0000:3b:00.9", "0000:3b:00.2", "0000:3b:00.1a"),
		nic(1, "0000:af:00.0", "r", 0, nil, "0000:af:00.2"),
	}}
	if errs := ValidateNode(n); len(errs) != 2 || !strings.Contains(errs.ToAggregate().Error(), `devices[0].vfGroups[0].vfs[0].busID: Invalid value: "0000:3b:00.9"`) {
		t.Fatalf("ValidateNode: %v", errs)
	}
	inv, err := NewInventory(n)
	if err != nil {
		t.Fatalf("one bad VF rejected the node: %v", err)
	}
	got := inv.Errors()
	if len(got) != 2 || got[0].Field != "devices[0].vfGroups[0].vfs[0].busID" || got[1].Field != "devices[0].vfGroups[0].vfs[2].busID" {
		t.Fatalf("inventory errors %v", got)
	}
	a, err := Allocate(inv, nil, Request{Count: 2})
	if err != nil || a.Units() != 2 || a.NICs[0].VFs[0].BDF.String() != "0000:3b:00.2" || a.NICs[1].VFs[0].BDF.String() != "0000:af:00.2" {
		t.Fatalf("allocation %+v, %v", a, err)
	}
	if c, _ := Capacity(inv, CountModel); c.Name(ResourceRDMA, "").Value() != 2 {
		t.Fatalf("capacity %v counts the skipped VFs", c)
	}
	if clean := mustInv(t, "n2", nic(0, "0000:3b:00.0", "r", 0, nil, "0000:3b:00.2")); clean.Errors() != nil {
		t.Fatalf("errors on a clean node: %v", clean.Errors())
	}
	bad := n
	bad.Devices = append([]DeviceInfo{}, n.Devices...)
	bad.Devices[1].Minor = nil
	if _, err := NewInventory(bad); err == nil || !strings.Contains(err.Error(), "devices[1].minor") {
		t.Fatalf("another error still rejects the node: %v", err)
	}
}
