package rdma

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestNICOnlyKeepsGPURoots: a request without GPUs takes its NIC units where they do
// not leave free GPUs without a NIC on their PCIe root.
func TestNICOnlyKeepsGPURoots(t *testing.T) {
	// Root 10: 2 GPUs, NIC 11 (4 VFs). Root 20: 1 GPU, NIC 21 (4 VFs). Root 30: no
	// GPU, NIC 31 (2 VFs).
	vfNode := func() []DeviceInfo {
		return []DeviceInfo{
			gpuDev(0, "pci0000:10", 0), gpuDev(1, "pci0000:10", 0), gpuDev(2, "pci0000:20", 0),
			nic(0, "0000:11:00.0", "pci0000:10", 0, nil, vfRange(0, 0x11, 4)...),
			nic(1, "0000:21:00.0", "pci0000:20", 0, nil, vfRange(0, 0x21, 4)...),
			nic(2, "0000:31:00.0", "pci0000:30", 0, nil, vfRange(0, 0x31, 2)...),
		}
	}
	// The same roots in PF mode: root 10 has two PFs, root 20 one, root 30 one.
	pfNode := func() []DeviceInfo {
		return []DeviceInfo{
			gpuDev(0, "pci0000:10", 0), gpuDev(1, "pci0000:10", 0), gpuDev(2, "pci0000:20", 0),
			nic(0, "0000:11:00.0", "pci0000:10", 0, nil), nic(1, "0000:12:00.0", "pci0000:10", 0, nil),
			nic(2, "0000:21:00.0", "pci0000:20", 0, nil),
			nic(3, "0000:31:00.0", "pci0000:30", 0, nil),
		}
	}
	holdVFs := func(u *Used, bdfs ...string) {
		for _, b := range bdfs {
			u.HoldVF(mustBDF(b))
		}
	}
	cases := []struct {
		name string
		devs []DeviceInfo
		used func(*Used)
		req  Request
		want []string // NIC units, in allocation order (PF BDF order, then VF BDF)
	}{
		{
			name: "VFs come from the root without GPUs first",
			devs: vfNode(), req: Request{Count: 2},
			want: []string{"0000:31:00.2", "0000:31:00.3"},
		},
		{
			// Root 30 gives 2; root 20 (1 free GPU) gives 3 of its 4, then root 10 (2
			// free GPUs) 1 of its 4: both keep a VF.
			name: "then from roots with fewer free GPUs, each keeping one VF",
			devs: vfNode(), req: Request{Count: 6},
			want: []string{"0000:11:00.2", "0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:31:00.2", "0000:31:00.3"},
		},
		{
			// 10 units are free: root 30's 2, then 3 + 3 while keeping one on each GPU
			// root (8), then the last: root 20's (fewer free GPUs) and root 10's.
			name: "the last VF beside free GPUs is taken only when nothing else is left",
			devs: vfNode(), req: Request{Count: 9},
			want: []string{"0000:11:00.2", "0000:11:00.3", "0000:11:00.4", "0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:21:00.5", "0000:31:00.2", "0000:31:00.3"},
		},
		{
			name: "a root whose GPUs are all held counts as a root without GPUs",
			devs: vfNode(), used: func(u *Used) { u.HoldGPU(2); holdVFs(u, "0000:31:00.2", "0000:31:00.3") },
			req:  Request{Count: 4},
			want: []string{"0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:21:00.5"},
		},
		{
			name: "an unhealthy GPU counts as no GPU",
			devs: func() []DeviceInfo {
				d := vfNode()
				d[2].Health = false
				return d
			}(),
			used: func(u *Used) { holdVFs(u, "0000:31:00.2", "0000:31:00.3") },
			req:  Request{Count: 4},
			want: []string{"0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:21:00.5"},
		},
		{
			// Root 20's last VF is held by someone else's pod: its GPU is stranded
			// already, so its VFs are as good as any.
			name: "a root with no free VF left has nothing to keep",
			devs: vfNode(), used: func(u *Used) {
				holdVFs(u, "0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:21:00.5", "0000:31:00.2", "0000:31:00.3")
			},
			req:  Request{Count: 3},
			want: []string{"0000:11:00.2", "0000:11:00.3", "0000:11:00.4"},
		},
		{
			name: "shared PFs first still holds among roots without free GPUs",
			devs: []DeviceInfo{
				gpuDev(0, "pci0000:10", 0),
				nic(0, "0000:11:00.0", "pci0000:10", 0, nil, vfRange(0, 0x11, 2)...),
				nic(1, "0000:31:00.0", "pci0000:30", 0, nil, vfRange(0, 0x31, 2)...),
				nic(2, "0000:41:00.0", "pci0000:40", 0, nil, vfRange(0, 0x41, 2)...),
			},
			used: func(u *Used) { holdVFs(u, "0000:41:00.2", "0000:11:00.2") },
			req:  Request{Count: 1},
			want: []string{"0000:41:00.3"},
		},
		{
			// Root 20 gives the designated VF and two more, keeping its fourth.
			name: "a designated VF beside a GPU counts as taken",
			devs: vfNode(), used: func(u *Used) { holdVFs(u, "0000:31:00.2", "0000:31:00.3") },
			req:  Request{Count: 4, DesignatedVFs: []BDF{mustBDF("0000:21:00.2")}},
			want: []string{"0000:11:00.2", "0000:21:00.2", "0000:21:00.3", "0000:21:00.4"},
		},
		{
			name: "whole PFs: the root without GPUs, then a second PF of a GPU root",
			devs: pfNode(), req: Request{Count: 2},
			want: []string{"0000:11:00.0", "0000:31:00.0"},
		},
		{
			// Root 20's only NIC would go with its VF; root 10 keeps NIC 12.
			name: "device-exclusive VFs: a NIC of a GPU root is spent only when the root has another",
			devs: []DeviceInfo{
				gpuDev(0, "pci0000:10", 0), gpuDev(1, "pci0000:20", 0),
				nic(0, "0000:11:00.0", "pci0000:10", 0, nil, vfRange(0, 0x11, 4)...),
				nic(1, "0000:12:00.0", "pci0000:10", 0, nil, vfRange(0, 0x12, 2)...),
				nic(2, "0000:21:00.0", "pci0000:20", 0, nil, vfRange(0, 0x21, 4)...),
			},
			req:  Request{Count: 1, Exclusive: ExclusiveDevice},
			want: []string{"0000:11:00.2"},
		},
		{
			name: "PCIe-exclusive VFs go to the root without GPUs",
			devs: vfNode(), req: Request{Count: 1, Exclusive: ExclusivePCIe},
			want: []string{"0000:31:00.2"},
		},
		{
			name: "scope PCIe: the root without GPUs although it sorts last",
			devs: vfNode(), req: Request{Count: 2, Scope: ScopePCIe},
			want: []string{"0000:31:00.2", "0000:31:00.3"},
		},
		{
			// Root 30 has 2 VFs; roots 10 and 20 both keep one of 4, root 20 is
			// beside fewer free GPUs.
			name: "scope PCIe: of the roots that keep a VF, the one beside fewer free GPUs",
			devs: vfNode(), req: Request{Count: 3, Scope: ScopePCIe},
			want: []string{"0000:21:00.2", "0000:21:00.3", "0000:21:00.4"},
		},
		{
			name: "scope PCIe: when every root would strand, the one stranding fewer GPUs",
			devs: vfNode(), req: Request{Count: 4, Scope: ScopePCIe},
			want: []string{"0000:21:00.2", "0000:21:00.3", "0000:21:00.4", "0000:21:00.5"},
		},
		{
			name: "scope PCIe with GPUs everywhere held: the first root in key order, as before",
			devs: vfNode(), used: func(u *Used) { u.HoldGPU(0); u.HoldGPU(1); u.HoldGPU(2) },
			req:  Request{Count: 2, Scope: ScopePCIe},
			want: []string{"0000:11:00.2", "0000:11:00.3"},
		},
		{
			name: "joint requests are not affected",
			devs: vfNode(), req: Request{Count: 1, GPUs: 1, Joint: JointSamePCIe},
			want: []string{"0000:21:00.2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := mustInv(t, "n", tc.devs...)
			var used Used
			if tc.used != nil {
				tc.used(&used)
			}
			a, err := Allocate(inv, &used, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := nicBDFs(a); !slices.Equal(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
		})
	}
}

// strandedBy counts, from the raw node, the free healthy GPUs whose known PCIe root has
// a NIC unit another pod could take before the allocation (units, from a non-exclusive
// request) and none after. A unit is a free VF of a usable PF, or a usable PF without
// VFs; usable means healthy and not held whole, exclusively, or on a root held
// exclusively.
func (s *spec) strandedBy(units []nicUnit) int {
	stranded, _ := s.gpuRootCost(units)
	return stranded
}

// gpuRootCost is strandedBy, and the number of free GPUs on the roots that lose units.
func (s *spec) gpuRootCost(units []nicUnit) (stranded, near int) {
	gone := map[BDF]bool{} // VFs taken, and PFs taken whole (with all their VFs)
	for _, u := range units {
		if u.whole {
			gone[u.pf] = true
		} else {
			gone[u.vf] = true
		}
	}
	before, after := map[string]int{}, map[string]int{}
	for b, d := range s.pfs {
		root := rootOf(d)
		if !d.Health || has(s.used.pfs, b) || has(s.used.exPF, b) || has(s.used.exRt, root) {
			continue
		}
		vfs := 0
		for v, p := range s.vfPF {
			if p != b {
				continue
			}
			vfs++
			if !has(s.used.vfs, v) {
				before[root]++
				if !gone[v] && !gone[b] {
					after[root]++
				}
			}
		}
		if vfs == 0 {
			before[root]++
			if !gone[b] {
				after[root]++
			}
		}
	}
	for m, g := range s.gpus {
		if r := rootOf(g); r != "" && g.Health && !has(s.used.gpus, m) && after[r] < before[r] {
			near++
			if after[r] == 0 {
				stranded++
			}
		}
	}
	return stranded, near
}

// TestNICOnlyNeverStrandsAvoidably: an allocation of NICs without GPUs leaves a free GPU
// without a free NIC unit on its PCIe root only when every allocation of the request
// would (brute force over all valid ones). Requests without exclusivity or rails, where
// the rule is exact; All takes every unit, so it has no alternative.
func TestNICOnlyNeverStrandsAvoidably(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		used := genUsed(t, n)
		req := genRequest(t, n)
		req.GPUs, req.Joint, req.NICPerGPURoot = 0, "", false
		req.All, req.Exclusive, req.RailLabel = false, ExclusiveNone, ""
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSpec(n, used, req)
		if err != nil {
			t.Skip("mixed-mode node")
		}
		a, err := Allocate(inv, used, req)
		if err != nil {
			return // completeness is TestAllocateIsValidAndComplete's
		}
		got := s.strandedBy(s.unitsOf(a))
		if got == 0 {
			return
		}
		all := s.units()
		forSubsets(len(all), a.Units(), func(idx []int) bool {
			us := make([]nicUnit, len(idx))
			for i, x := range idx {
				us[i] = all[x]
			}
			if s.check(us, nil) == nil && s.strandedBy(us) == 0 {
				t.Fatalf("Allocate strands %d free GPUs with %v, but %v strands none", got, s.unitsOf(a), us)
			}
			return true
		})
	})
}

// TestGPURootCostMatchesChecker: the planner's count of stranded GPUs and of GPUs beside
// the units taken (used to choose among scope groups) agrees with the checker's on any
// allocation of a request without exclusivity.
func TestGPURootCostMatchesChecker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		used := genUsed(t, n)
		req := genRequest(t, n)
		req.Exclusive, req.All = ExclusiveNone, false
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSpec(n, used, req)
		if err != nil {
			t.Skip("mixed-mode node")
		}
		a, err := Allocate(inv, used, req)
		if err != nil {
			return
		}
		gs, gn := gpuRootCost(inv, used, a)
		ws, wn := s.gpuRootCost(s.unitsOf(a))
		if gs != ws || gn != wn {
			t.Fatalf("gpuRootCost = %d stranded, %d near; checker %d, %d; for %+v", gs, gn, ws, wn, a)
		}
	})
}
