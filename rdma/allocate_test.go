package rdma

import (
	"strings"
	"testing"
)

func nicBDFs(a Allocation) []string {
	var out []string
	for _, n := range a.NICs {
		if n.Whole {
			out = append(out, n.BDF.String())
		}
		for _, v := range n.VFs {
			out = append(out, v.BDF.String())
		}
	}
	return out
}

func gpuMinors(a Allocation) []int32 {
	var out []int32
	for _, g := range a.GPUs {
		out = append(out, g.Minor)
	}
	return out
}

func TestErrorSaysWhatRanOut(t *testing.T) {
	// PF 3b has 8 storage VFs, all in use; PF af has 2 storage VFs, one in use.
	inv := mustInv(t, "n1",
		nic(0, "0000:3b:00.0", "pci0000:3a", 0, map[string]string{"rdma-type": "storage"}, vfRange(0, 0x3b, 8)...),
		nic(1, "0000:af:00.0", "pci0000:ae", 1, map[string]string{"rdma-type": "storage"}, vfRange(0, 0xaf, 2)...),
		nic(2, "0000:5e:00.0", "pci0000:5d", 0, map[string]string{"rdma-type": "compute"}, vfRange(0, 0x5e, 8)...),
	)
	used := new(Used)
	for _, v := range vfRange(0, 0x3b, 8) {
		used.HoldVF(mustBDF(v))
	}
	used.HoldVF(mustBDF(vfRange(0, 0xaf, 1)[0]))
	_, err := Allocate(inv, used, Request{Count: 2, Selector: sel("rdma-type", "storage")})
	want := "node n1: rdma: need 2 VFs matching {rdma-type=storage}, 1 free (PF 0000:3b:00.0: 0 of 8 free)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestDesignStories(t *testing.T) {
	// A GPU server: RDMA1 (PF mode, for GPUs) and RDMA2 (VF mode, for storage).
	server := func(t *testing.T) *Inventory {
		return mustInv(t, "gpu-server",
			gpuDev(0, "pci0000:17", 0), gpuDev(1, "pci0000:17", 0),
			nic(0, "0000:18:00.0", "pci0000:17", 0, map[string]string{"rdma": "RDMA1"}),
			nic(1, "0000:af:00.0", "pci0000:ae", 1, map[string]string{"rdma": "RDMA2"}, vfRange(0, 0xaf, 4)...),
		)
	}
	t.Run("pod 1 gets a GPU and the RDMA1 PF beside it, pod 2 a VF of RDMA2", func(t *testing.T) {
		inv := server(t)
		used := new(Used)
		a1, err := Allocate(inv, used, Request{Kind: WholePF, Count: 1, Selector: sel("rdma", "RDMA1"), GPUs: 1, Joint: JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(nicBDFs(a1), ","); got != "0000:18:00.0" || len(a1.GPUs) != 1 || a1.GPUs[0].Minor != 0 {
			t.Fatalf("pod 1: got %v gpus %v", got, gpuMinors(a1))
		}
		used.Add(a1)
		a2, err := Allocate(inv, used, Request{Kind: VFs, Count: 1, Selector: sel("rdma", "RDMA2")})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(nicBDFs(a2), ","); got != "0000:af:00.2" {
			t.Fatalf("pod 2: got %v", got)
		}
		used.Add(a2)
		// A second PF request for RDMA1 finds it held whole.
		_, err = Allocate(inv, used, Request{Kind: WholePF, Count: 1, Selector: sel("rdma", "RDMA1")})
		if err == nil || !strings.Contains(err.Error(), "PF 0000:18:00.0: held whole") {
			t.Fatalf("got %v", err)
		}
		// RDMA2 cannot be given whole while a VF of it is in use.
		_, err = Allocate(inv, used, Request{Kind: WholePF, Count: 1, Selector: sel("rdma", "RDMA2")})
		if err == nil || !strings.Contains(err.Error(), "has VFs in use") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a kind-auto request on a node mixing PF and VF mode is an error", func(t *testing.T) {
		_, err := Allocate(server(t), nil, Request{Count: 1})
		if err == nil || !strings.Contains(err.Error(), "set the request's kind") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("VFs with PCIe topology affinity come from one root", func(t *testing.T) {
		inv := mustInv(t, "n",
			nic(0, "0000:3b:00.0", "pci0000:3a", 0, nil, vfRange(0, 0x3b, 2)...),
			nic(1, "0000:5e:00.0", "pci0000:5d", 0, nil, vfRange(0, 0x5e, 2)...),
			nic(2, "0000:5e:00.1", "pci0000:5d", 0, nil, vfRange(0, 0x5f, 2)...),
		)
		a, err := Allocate(inv, nil, Request{Count: 3, Scope: ScopePCIe})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range a.NICs {
			if n.PCIeRoot != "pci0000:5d" {
				t.Fatalf("got %+v", a)
			}
		}
		if a.Units() != 3 {
			t.Fatalf("got %d units", a.Units())
		}
		_, err = Allocate(inv, nil, Request{Count: 5, Scope: ScopePCIe})
		want := "node n: rdma: need 5 VFs within one PCIe root, none has more than 4 (pci0000:3a: 2; pci0000:5d: 4)"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
}

func TestRailOptimisedNode(t *testing.T) {
	inv := railNode(t)
	compute := sel("rdma-type", "compute")
	t.Run("8 GPUs get the 8 compute NICs, one per rail, never the storage NIC", func(t *testing.T) {
		a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 8, Selector: compute, GPUs: 8, Joint: JointSamePCIe, RailLabel: "rail"})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.GPUs) != 8 || a.Units() != 8 {
			t.Fatalf("got %+v", a)
		}
		for _, n := range a.NICs {
			if n.BDF.String() == "0000:19:00.0" {
				t.Fatal("storage NIC allocated")
			}
		}
	})
	t.Run("without a selector, round-robin still spreads NICs over all four switches", func(t *testing.T) {
		a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 4, GPUs: 8, Joint: JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		roots := map[string]int{}
		for _, n := range a.NICs {
			roots[n.PCIeRoot]++
		}
		if len(roots) != 4 {
			t.Fatalf("NICs on %v", roots)
		}
	})
	t.Run("2 GPUs and 2 NICs fit under one switch", func(t *testing.T) {
		a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 2, Selector: compute, GPUs: 2, Joint: JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(nicBDFs(a), ","); got != "0000:18:00.0,0000:18:00.1" {
			t.Fatalf("got %s gpus %v", got, gpuMinors(a))
		}
		if g := gpuMinors(a); len(g) != 2 || g[0] != 0 || g[1] != 1 {
			t.Fatalf("gpus %v", g)
		}
	})
	t.Run("SamePCIe fails when a GPU switch has no free NIC, preferred still allocates", func(t *testing.T) {
		used := new(Used)
		for _, g := range []int32{0, 1, 2, 3, 4, 5} {
			used.HoldGPU(g)
		}
		used.HoldPF(mustBDF("0000:81:00.0"))
		used.HoldPF(mustBDF("0000:81:00.1"))
		_, err := Allocate(inv, used, Request{Kind: WholePF, Count: 1, Selector: compute, GPUs: 2, Joint: JointSamePCIe})
		if err == nil || !strings.Contains(err.Error(), "SamePCIe") {
			t.Fatalf("got %v", err)
		}
		a, err := Allocate(inv, used, Request{Kind: WholePF, Count: 1, Selector: compute, GPUs: 2})
		if err != nil {
			t.Fatal(err)
		}
		// GPUs 6,7 are on NUMA 1 (pci0000:80); the NIC comes from NUMA 1's other switch.
		if got := strings.Join(nicBDFs(a), ","); got != "0000:5e:00.0" {
			t.Fatalf("got %s", got)
		}
	})
}
