package rdma

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSamePCIeIsComplete checks the root search against brute force on nodes with up to
// five PCIe roots: when SamePCIe fails, no choice of GPUs and NICs satisfies it.
func TestSamePCIeIsComplete(t *testing.T) {
	roots := []string{"pci0000:10", "pci0000:20", "pci0000:30", "pci0000:40", "pci0000:50", ""}
	rapid.Check(t, func(t *rapid.T) {
		n := Node{Name: "n"}
		for i := 0; i < rapid.IntRange(1, 6).Draw(t, "pfs"); i++ {
			d := nic(int32(i), BDF{Bus: uint8(0x10 + i)}.String(), rapid.SampledFrom(roots).Draw(t, "root"), int32(rapid.IntRange(-1, 1).Draw(t, "numa")), nil)
			n.Devices = append(n.Devices, d)
		}
		for g := 0; g < rapid.IntRange(1, 6).Draw(t, "gpus"); g++ {
			n.Devices = append(n.Devices, gpuDev(int32(g), rapid.SampledFrom(roots).Draw(t, "groot"), 0))
		}
		used := new(Used)
		for _, d := range n.Devices {
			if rapid.IntRange(0, 5).Draw(t, "used") == 0 {
				if d.Type == GPU {
					used.HoldGPU(*d.Minor)
				} else {
					used.HoldPF(mustBDF(d.UUID))
				}
			}
		}
		req := Request{Kind: WholePF, Count: rapid.IntRange(1, 4).Draw(t, "count"), GPUs: rapid.IntRange(1, 4).Draw(t, "reqGPUs"),
			Joint: JointSamePCIe, All: rapid.IntRange(0, 5).Draw(t, "all") == 0}
		if rapid.IntRange(0, 3).Draw(t, "scoped") == 0 {
			req.Scope = rapid.SampledFrom([]Scope{ScopePCIe, ScopeNUMANode}).Draw(t, "scope")
		}
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := newSpec(n, used, req)
		a, err := Allocate(inv, used, req)
		if err != nil {
			if s.feasible() {
				t.Fatalf("SamePCIe failed (%v) but brute force finds an allocation", err)
			}
			return
		}
		if err := s.check(s.unitsOf(a), gpuMinors(a)); err != nil {
			t.Fatalf("invalid %+v: %v", a, err)
		}
	})
}

// bigNode has roots PCIe roots, each with gpusPer GPUs and nicsPer NICs (VF mode with
// vfsPer VFs each when vfsPer > 0).
func bigNode(tb testing.TB, roots, gpusPer, nicsPer, vfsPer int) *Inventory {
	var devs []DeviceInfo
	minor := int32(0)
	for r := 0; r < roots; r++ {
		root := fmt.Sprintf("pci%04x:%02x", r/200, r%200)
		for g := 0; g < gpusPer; g++ {
			devs = append(devs, gpuDev(int32(r*gpusPer+g), root, int32(r%2)))
		}
		for k := 0; k < nicsPer; k++ {
			bus := uint8(r % 256)
			bdf := BDF{Domain: uint32(r / 256), Bus: bus, Device: uint8(k)}
			d := nic(minor, bdf.String(), root, int32(r%2), map[string]string{"rail": fmt.Sprint(r*nicsPer + k)})
			if vfsPer > 0 {
				var vfs []string
				for v := 0; v < vfsPer; v++ {
					vfs = append(vfs, BDF{Domain: bdf.Domain, Bus: bus, Device: uint8(k + 16), Function: uint8(v % 8)}.String())
				}
				d = nic(minor, bdf.String(), root, int32(r%2), d.Labels, vfs...)
			}
			minor++
			devs = append(devs, d)
		}
	}
	return mustInv(tb, "big", devs...)
}

func TestSamePCIeOnLargeNodes(t *testing.T) {
	t.Run("64 roots, 32 GPUs wanted with 32 NICs: the search does not give up", func(t *testing.T) {
		inv := bigNode(t, 64, 2, 1, 0)
		used := new(Used)
		// Take the NIC of every even root, so only odd roots can pair GPUs and NICs.
		for r := 0; r < 64; r += 2 {
			used.HoldPF(inv.pfs[r].bdf)
		}
		a, err := Allocate(inv, used, Request{Kind: WholePF, Count: 32, GPUs: 32, Joint: JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.GPUs) != 32 || a.Units() != 32 {
			t.Fatalf("got %d GPUs %d NICs", len(a.GPUs), a.Units())
		}
		_, err = Allocate(inv, used, Request{Kind: WholePF, Count: 33, GPUs: 32, Joint: JointSamePCIe})
		if err == nil || !strings.Contains(err.Error(), "SamePCIe") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("GPUs given by a GPU plugin place NICs on their roots", func(t *testing.T) {
		inv := bigNode(t, 4, 2, 2, 0)
		a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 2, WithGPUs: []int32{0, 6}, Joint: JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		if a.NICs[0].PCIeRoot != "pci0000:00" || a.NICs[1].PCIeRoot != "pci0000:03" {
			t.Fatalf("got %+v", a.NICs)
		}
	})
	t.Run("PCIe scope combines with joint allocation", func(t *testing.T) {
		inv := bigNode(t, 4, 2, 2, 0)
		used := new(Used)
		used.HoldGPU(0)
		a, err := Allocate(inv, used, Request{Kind: WholePF, Count: 2, GPUs: 2, Scope: ScopePCIe})
		if err != nil {
			t.Fatal(err)
		}
		if g := gpuMinors(a); g[0] != 2 || g[1] != 3 || a.NICs[0].PCIeRoot != "pci0000:01" || a.NICs[1].PCIeRoot != "pci0000:01" {
			t.Fatalf("got gpus %v NICs %+v", g, a.NICs)
		}
	})
	t.Run("NUMA -1 is never node 0", func(t *testing.T) {
		inv := mustInv(t, "n", gpuDev(0, "pci0000:17", 0),
			nic(0, "0000:3b:00.0", "pci0000:3a", -1, nil), nic(1, "0000:af:00.0", "pci0000:ae", 0, nil))
		a, err := Allocate(inv, nil, Request{Count: 1, GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		if a.NICs[0].BDF.String() != "0000:af:00.0" {
			t.Fatalf("took %s, the NIC of unknown NUMA node, over the GPU's NUMA node 0", a.NICs[0].BDF)
		}
		_, err = Allocate(inv, nil, Request{Count: 2, Scope: ScopeNUMANode})
		if err == nil || !strings.Contains(err.Error(), "none has more than 1 (NUMA node 0: 1)") {
			t.Fatalf("got %v", err)
		}
	})
}

// Found by TestAllocateErrorKindMatchesAnIdleNode: the designated VF already gives its
// PCIe root a NIC, so the other GPU's root must get the second one.
func TestSamePCIeCountsADesignatedVFAsItsRootsNIC(t *testing.T) {
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:3a", 0), gpuDev(1, "pci0000:ae", 1),
		nic(0, "0000:3b:00.0", "pci0000:3a", 0, nil, vfRange(0, 0x3b, 2)...),
		nic(1, "0000:af:00.0", "pci0000:ae", 1, nil, vfRange(0, 0xaf, 2)...))
	a, err := Allocate(inv, nil, Request{Count: 2, GPUs: 2, Joint: JointSamePCIe, DesignatedVFs: []BDF{mustBDF("0000:3b:00.2")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(vfBDFsOf(a)); got != "[0000:3b:00.2 0000:af:00.2]" {
		t.Fatalf("VFs %s, want the designated one and one on the other GPU's root", got)
	}
}

// vfBDFsOf lists an allocation's VF BDFs.
func vfBDFsOf(a Allocation) []string {
	var out []string
	for _, n := range a.NICs {
		for _, v := range n.VFs {
			out = append(out, v.BDF.String())
		}
	}
	return out
}
