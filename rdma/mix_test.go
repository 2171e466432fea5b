package rdma_test

import (
	"fmt"
	"math/rand"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// mixNode is a node of the GPU-and-NIC mix: 4 PCIe roots with 2 GPUs each, root r with
// 1 + (i+r) mod 2 NICs of 8 VFs (4 labelled storage, 4 compute).
func mixNode(i int) rdma.Node {
	minor := func(v int) *int32 { m := int32(v); return &m }
	n := rdma.Node{Name: fmt.Sprintf("n%d", i)}
	g, k := 0, 0
	for r := 0; r < 4; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		for j := 0; j < 2; j++ {
			n.Devices = append(n.Devices, rdma.DeviceInfo{UUID: fmt.Sprintf("GPU-%d", g), Minor: minor(g), Type: rdma.GPU, Health: true,
				Topology: &rdma.DeviceTopology{NodeID: int32(r / 2), PCIEID: root}})
			g++
		}
		for j := 0; j < 1+(i+r)%2; j++ {
			bus := 0x10 + 4*k
			d := rdma.DeviceInfo{UUID: fmt.Sprintf("0000:%02x:00.0", bus), Minor: minor(k), Type: rdma.RDMA, Health: true,
				Topology: &rdma.DeviceTopology{NodeID: int32(r / 2), PCIEID: root, BusID: fmt.Sprintf("0000:%02x:00.0", bus)}}
			for gi, label := range []string{"storage", "compute"} {
				grp := rdma.VirtualFunctionGroup{Labels: map[string]string{"rdma-type": label}}
				for v := 4 * gi; v < 4*gi+4; v++ {
					grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(v), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+v/8, v%8)})
				}
				d.VFGroups = append(d.VFGroups, grp)
			}
			n.Devices = append(n.Devices, d)
			k++
		}
	}
	return n
}

// TestMixPlacesEveryJointPodThatFits places the GPU-and-NIC mix the way a scheduler
// does, pod after pod: 10 nodes of 8 GPUs on 4 PCIe roots with 1-2 NICs per root, 60
// VF-only pods of 4 VFs, 25 joint pods of 4 GPUs and 2 VFs on their roots (SamePCIe),
// 15 pods of 2 storage VFs, in 20 random orders; each pod goes to the node where it
// fits with the best Score (ties broken at random, as the scheduler does). The 80 GPUs
// take 20 joint pods, and every order places all 20 and every other pod: VF-only pods
// leave a VF beside free GPUs.
func TestMixPlacesEveryJointPodThatFits(t *testing.T) {
	var reqs []rdma.Request
	for i := 0; i < 60; i++ {
		reqs = append(reqs, rdma.Request{Count: 4})
	}
	for i := 0; i < 25; i++ {
		reqs = append(reqs, rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 4, Joint: rdma.JointSamePCIe, NICPerGPURoot: true, VFSelector: &metav1.LabelSelector{}})
	}
	for i := 0; i < 15; i++ {
		reqs = append(reqs, rdma.Request{Kind: rdma.VFs, Count: 2, VFSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rdma-type": "storage"}}})
	}
	for seed := int64(0); seed < 20; seed++ {
		t.Run(fmt.Sprintf("order %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			order := append([]rdma.Request(nil), reqs...)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			invs := make([]*rdma.Inventory, 10)
			used := make([]*rdma.Used, 10)
			for i := range invs {
				inv, err := rdma.NewInventory(mixNode(i))
				if err != nil {
					t.Fatal(err)
				}
				invs[i], used[i] = inv, new(rdma.Used)
			}
			joint, other := 0, 0
			for _, req := range order {
				best, bestScore, ties := -1, int64(-1), 0
				for i, inv := range invs {
					s, err := rdma.Score(inv, used[i], req, rdma.ScoreOptions{})
					switch {
					case err != nil:
					case s > bestScore:
						best, bestScore, ties = i, s, 1
					case s == bestScore:
						if ties++; rng.Intn(ties) == 0 {
							best = i
						}
					}
				}
				if best < 0 {
					continue
				}
				a, err := rdma.Allocate(invs[best], used[best], req)
				if err != nil {
					t.Fatal(err)
				}
				used[best].Add(a)
				if req.GPUs > 0 {
					joint++
				} else {
					other++
				}
			}
			if joint != 20 || other != 75 {
				t.Fatalf("placed %d joint pods (20 fit) and %d of the 75 others", joint, other)
			}
		})
	}
}
