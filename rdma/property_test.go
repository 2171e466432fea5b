package rdma

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

var genRoots = []string{"pci0000:00", "pci0000:40", "pci0000:00", "pci0000:40", ""}

// genNode draws a small node: 1-4 PFs all in PF mode or all with 1-3 VFs, labels,
// rails, topology with unknowns, a few unhealthy devices, and 0-3 GPUs.
func genNode(t *rapid.T) Node {
	n := Node{Name: "n"}
	vfMode := rapid.Bool().Draw(t, "vfMode")
	nPF := rapid.IntRange(1, 5).Draw(t, "pfs")
	for i := 0; i < nPF; i++ {
		bus := uint8(0x10 * (i + 1))
		lbl := map[string]string{"t": rapid.SampledFrom([]string{"a", "b"}).Draw(t, "t")}
		if rapid.IntRange(0, 4).Draw(t, "hasRail") > 0 {
			lbl["rail"] = rapid.SampledFrom([]string{"0", "1", "2"}).Draw(t, "rail")
		}
		d := nic(int32(i), BDF{Bus: bus}.String(), rapid.SampledFrom(genRoots).Draw(t, "root"),
			int32(rapid.IntRange(-1, 1).Draw(t, "numa")), lbl)
		d.Health = rapid.IntRange(0, 9).Draw(t, "health") > 0
		if vfMode {
			nv := rapid.IntRange(1, 3).Draw(t, "vfs")
			groups := []VirtualFunctionGroup{{Labels: map[string]string{"g": "x"}}, {Labels: map[string]string{"g": "y"}}}
			for j := 0; j < nv; j++ {
				g := rapid.IntRange(0, 1).Draw(t, "group")
				groups[g].VFs = append(groups[g].VFs, VirtualFunction{Minor: int32(j), BusID: BDF{Bus: bus, Device: 1, Function: uint8(j)}.String()})
			}
			for _, g := range groups {
				if len(g.VFs) > 0 {
					d.VFGroups = append(d.VFGroups, g)
				}
			}
		}
		n.Devices = append(n.Devices, d)
	}
	for g := 0; g < rapid.SampledFrom([]int{0, 2, 3, 4}).Draw(t, "gpus"); g++ {
		d := gpuDev(int32(g), rapid.SampledFrom(genRoots).Draw(t, "groot"), int32(rapid.IntRange(-1, 1).Draw(t, "gnuma")))
		d.Health = rapid.IntRange(0, 9).Draw(t, "ghealth") > 0
		n.Devices = append(n.Devices, d)
	}
	return n
}

func genUsed(t *rapid.T, n Node) *Used {
	u := new(Used)
	for _, d := range n.Devices {
		if d.Type == GPU {
			if rapid.IntRange(0, 4).Draw(t, "gpuUsed") == 0 {
				u.HoldGPU(*d.Minor)
			}
			continue
		}
		b := mustBDF(d.Topology.BusID)
		anyVF := false
		for _, g := range d.VFGroups {
			for _, v := range g.VFs {
				if rapid.IntRange(0, 5).Draw(t, "vfUsed") == 0 {
					u.HoldVF(mustBDF(v.BusID))
					anyVF = true
				}
			}
		}
		switch k := rapid.IntRange(0, 19).Draw(t, "pfUsed"); {
		case k < 1 && !anyVF:
			u.HoldPF(b)
		case k == 2:
			u.HoldPFExclusive(b)
		case k == 3 && d.Topology.PCIEID != "":
			u.HoldRootExclusive(d.Topology.PCIEID)
		}
	}
	return u
}

func genRequest(t *rapid.T, n Node) Request {
	r := Request{
		Kind:       rapid.SampledFrom([]Kind{Auto, Auto, Auto, WholePF, VFs}).Draw(t, "kind"),
		Count:      rapid.SampledFrom([]int{0, 1, 1, 1, 2, 2, 3}).Draw(t, "count"),
		All:        rapid.IntRange(0, 5).Draw(t, "all") == 0,
		OneVFPerPF: rapid.IntRange(0, 3).Draw(t, "onePerPF") == 0,
		Scope:      rapid.SampledFrom([]Scope{"", "", "", ScopeNode, ScopeNUMANode, ScopePCIe, ScopeDevice}).Draw(t, "scope"),
		Exclusive:  rapid.SampledFrom([]Exclusive{ExclusiveNone, ExclusiveNone, ExclusiveNone, ExclusiveNone, ExclusiveDevice, ExclusivePCIe}).Draw(t, "excl"),
		GPUs:       rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "reqGPUs"),
		Joint:      rapid.SampledFrom([]Joint{"", JointPreferred, JointSamePCIe}).Draw(t, "joint"),
	}
	r.NICPerGPURoot = r.GPUs > 0 && rapid.IntRange(0, 2).Draw(t, "perRoot") == 0
	if rapid.IntRange(0, 2).Draw(t, "hasSel") == 0 {
		r.Selector = sel("t", rapid.SampledFrom([]string{"a", "b"}).Draw(t, "selT"))
	}
	if r.Kind != WholePF && rapid.IntRange(0, 3).Draw(t, "hasVFSel") == 0 {
		r.VFSelector = sel("g", "x")
	}
	if rapid.IntRange(0, 7).Draw(t, "hasRailLabel") == 0 {
		r.RailLabel = "rail"
	}
	if r.Kind != WholePF && rapid.IntRange(0, 5).Draw(t, "hasDesig") == 0 {
		var vfs []BDF
		for _, d := range n.Devices {
			for _, g := range d.VFGroups {
				for _, v := range g.VFs {
					vfs = append(vfs, mustBDF(v.BusID))
				}
			}
		}
		if len(vfs) > 0 {
			r.DesignatedVFs = []BDF{rapid.SampledFrom(vfs).Draw(t, "desig")}
		}
	}
	return r
}

func TestAllocateIsValidAndComplete(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		used := genUsed(t, n)
		req := genRequest(t, n)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSpec(n, used, req)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Allocate(inv, used, req)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "node n: rdma: ") {
				t.Fatalf("error does not name the node: %v", err)
			}
			if req.RailLabel != "" && req.joint() && req.Joint == JointSamePCIe && railSpansRoots(n) {
				return // the documented bound: a rail value on two PCIe roots
			}
			if s.feasible() {
				t.Fatalf("Allocate failed (%v) but brute force finds an allocation", err)
			}
			return
		}
		if err := s.check(s.unitsOf(a), gpuMinors(a)); err != nil {
			t.Fatalf("invalid allocation %+v: %v", a, err)
		}
		var wantPFs []BDF
		var wantRoots []string
		for _, x := range a.NICs {
			if req.Exclusive == ExclusiveDevice {
				wantPFs = append(wantPFs, x.BDF)
			}
			if req.Exclusive == ExclusivePCIe && !slices.Contains(wantRoots, x.PCIeRoot) {
				wantRoots = append(wantRoots, x.PCIeRoot)
			}
		}
		slices.Sort(wantRoots)
		if diff := cmp.Diff(wantPFs, a.ExclusivePFs); diff != "" {
			t.Fatalf("ExclusivePFs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantRoots, a.ExclusiveRoots); diff != "" {
			t.Fatalf("ExclusiveRoots (-want +got):\n%s", diff)
		}
	})
}

// shuffleNode reorders devices, VF groups and VFs; the inventory is the same.
func shuffleNode(t *rapid.T, n Node) Node {
	out := Node{Name: n.Name}
	perm := rapid.Permutation(n.Devices).Draw(t, "perm")
	for _, d := range perm {
		d.VFGroups = slices.Clone(d.VFGroups)
		if len(d.VFGroups) > 1 && rapid.Bool().Draw(t, "swapGroups") {
			slices.Reverse(d.VFGroups)
		}
		for i := range d.VFGroups {
			d.VFGroups[i].VFs = slices.Clone(d.VFGroups[i].VFs)
			slices.Reverse(d.VFGroups[i].VFs)
		}
		out.Devices = append(out.Devices, d)
	}
	return out
}

func deepCopyNode(n Node) Node {
	out := Node{Name: n.Name}
	for _, d := range n.Devices {
		c := d
		c.Minor = i32(*d.Minor)
		t := *d.Topology
		c.Topology = &t
		c.Labels = cloneMap(d.Labels)
		c.VFGroups = nil
		for _, g := range d.VFGroups {
			c.VFGroups = append(c.VFGroups, VirtualFunctionGroup{Labels: cloneMap(g.Labels), VFs: slices.Clone(g.VFs)})
		}
		out.Devices = append(out.Devices, c)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestAllocateIsDeterministicAndPure(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		used := genUsed(t, n)
		req := genRequest(t, n)
		nCopy, usedCopy := deepCopyNode(n), used.Clone()
		reqCopy := req
		reqCopy.DesignatedVFs = slices.Clone(req.DesignatedVFs)
		if req.Selector != nil {
			reqCopy.Selector = req.Selector.DeepCopy()
		}
		if req.VFSelector != nil {
			reqCopy.VFSelector = req.VFSelector.DeepCopy()
		}
		if req.GPUSelector != nil {
			reqCopy.GPUSelector = req.GPUSelector.DeepCopy()
		}
		reqCopy.WithGPUs = slices.Clone(req.WithGPUs)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := Allocate(inv, used, req)
		inv2, err := NewInventory(shuffleNode(t, n))
		if err != nil {
			t.Fatal(err)
		}
		b, errB := Allocate(inv2, used, req)
		if fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Fatalf("order changed the error: %v -> %v", errA, errB)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("order changed the answer (-node as given +shuffled):\n%s", diff)
		}
		if diff := cmp.Diff(nCopy, n); diff != "" {
			t.Fatalf("Allocate mutated the node (-before +after):\n%s", diff)
		}
		if !sameUsed(usedCopy, used) {
			t.Fatalf("Allocate mutated used: before %+v, after %+v", usedCopy, used)
		}
		if diff := cmp.Diff(reqCopy, req); diff != "" {
			t.Fatalf("Allocate mutated the request (-before +after):\n%s", diff)
		}
		if errA == nil {
			ea, _ := EncodeAllocated("", a, CountModel)
			eb, _ := EncodeAllocated("", b, CountModel)
			if ea != eb {
				t.Fatalf("encodings differ:\n%s\n%s", ea, eb)
			}
		}
	})
}

// TestAllocationSequences allocates request after request, recording each result in
// Used and, through the annotations, in pods; nothing is ever handed out twice and the
// annotation round trip rebuilds the same Used.
func TestAllocationSequences(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		inv, err := NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		used := new(Used)
		var pods []*corev1.Pod
		taken := map[BDF]bool{} // PFs whole and VFs
		steps := rapid.IntRange(1, 6).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			req := genRequest(t, n)
			a, err := Allocate(inv, used, req)
			if err != nil {
				continue
			}
			for _, x := range a.NICs {
				if x.Whole {
					if taken[x.BDF] {
						t.Fatalf("PF %s handed out twice", x.BDF)
					}
					for _, v := range inv.pfs[inv.byBDF[x.BDF]].vfs {
						if taken[v.bdf] {
							t.Fatalf("PF %s given whole while its VF %s is taken", x.BDF, v.bdf)
						}
					}
					taken[x.BDF] = true
				}
				for _, v := range x.VFs {
					if taken[v.BDF] || taken[x.BDF] {
						t.Fatalf("VF %s handed out twice or its PF is whole", v.BDF)
					}
					taken[v.BDF] = true
				}
			}
			used.Add(a)
			value, err := EncodeAllocated("", a, CountModel)
			if err != nil {
				t.Fatal(err)
			}
			ann := map[string]string{AnnotationDeviceAllocated: value}
			if req.Exclusive != ExclusiveNone {
				ann[AnnotationDeviceAllocateHint] = fmt.Sprintf(`{"rdma":{"exclusivePolicy":%q}}`, req.Exclusive)
			}
			pods = append(pods, pod(fmt.Sprint("p", i), ann, 1))
			dec, err := DecodeAllocated(value)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(dec.RDMA)
			want, _ := json.Marshal(Entries(a, CountModel))
			if a.Units() > 0 && string(got) != string(want) {
				t.Fatalf("round trip:\n%+v\n%+v", got, want)
			}
		}
		fromPods, err := UsedByPods(inv, pods)
		if err != nil {
			t.Fatal(err)
		}
		if !sameUsed(fromPods, used) {
			t.Fatalf("pods give %+v, Add gave %+v", fromPods, used)
		}
	})
}

// railSpansRoots reports whether some rail label value is on PFs under two roots.
func railSpansRoots(n Node) bool {
	root := map[string]string{}
	for _, d := range n.Devices {
		r, ok := d.Labels["rail"]
		if !ok || d.Type != RDMA {
			continue
		}
		if prev, seen := root[r]; seen && prev != d.Topology.PCIEID {
			return true
		}
		root[r] = d.Topology.PCIEID
	}
	return false
}
