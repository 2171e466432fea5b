package rdma

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkAllocate: a rail-optimised node with 4 PCIe switches, each with 2 GPUs and
// 2 NICs of 8 VFs (8 PFs, 64 VFs, 8 GPUs); one pod asks for all 8 GPUs and one VF on
// every rail, SamePCIe.
func BenchmarkAllocate(b *testing.B) {
	inv := bigNode(b, 4, 2, 2, 8)
	req := Request{Kind: VFs, Count: 8, GPUs: 8, Joint: JointSamePCIe, RailLabel: "rail"}
	if a, err := Allocate(inv, nil, req); err != nil || a.Units() != 8 || len(a.GPUs) != 8 {
		b.Fatalf("%+v %v", a, err)
	}
	b.Run("pfs=8,vfs=64,gpus=8", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Allocate(inv, nil, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A large node for the SamePCIe root search: 64 roots with 2 GPUs and 1 NIC each,
	// every even root's NIC taken, 32 GPUs and 32 NICs wanted (only the 32 odd roots
	// qualify).
	big := bigNode(b, 64, 2, 1, 0)
	used := new(Used)
	for r := 0; r < 64; r += 2 {
		used.HoldPF(big.pfs[r].bdf)
	}
	bigReq := Request{Kind: WholePF, Count: 32, GPUs: 32, Joint: JointSamePCIe}
	b.Run("roots=64,pfs=64,gpus=128", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Allocate(big, used, bigReq); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// filterCluster is nodes VF-mode nodes (8 PFs x 8 VFs) where every node is half full:
// 8 pods hold 4 VFs each, allocated through Allocate and encoded into annotations.
type filterNode struct {
	inv  *Inventory
	pods []*corev1.Pod
}

func filterCluster(b *testing.B, nodes int) []filterNode {
	proto := bigNode(b, 4, 0, 2, 8)
	var pods []*corev1.Pod
	used := new(Used)
	for p := 0; p < 8; p++ {
		a, err := Allocate(proto, used, Request{Count: 4})
		if err != nil {
			b.Fatal(err)
		}
		used.Add(a)
		v, err := EncodeAllocated("", a, CountModel)
		if err != nil {
			b.Fatal(err)
		}
		pods = append(pods, pod(fmt.Sprint("p", p), map[string]string{AnnotationDeviceAllocated: v}, 4))
	}
	out := make([]filterNode, nodes)
	for i := range out {
		// Every node has its own inventory and pods (no sharing that a cache could hide).
		inv := *proto
		inv.name = fmt.Sprint("node-", i)
		ps := make([]*corev1.Pod, len(pods))
		for j, p := range pods {
			ps[j] = p.DeepCopy()
		}
		out[i] = filterNode{inv: &inv, pods: ps}
	}
	return out
}

// BenchmarkFilter runs the Filter phase for one pod (4 VFs) over every node: what is
// used (decoding the pods' annotations) and whether the pod fits.
func BenchmarkFilter(b *testing.B) {
	nodes := filterCluster(b, 5000)
	req := Request{Count: 4}
	b.Run("nodes=5000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fit := 0
			for _, n := range nodes {
				used, err := UsedByPods(n.inv, n.pods)
				if err != nil {
					b.Fatal(err)
				}
				if Fits(n.inv, used, req) == nil {
					fit++
				}
			}
			if fit != len(nodes) {
				b.Fatalf("%d fit", fit)
			}
		}
	})
}

// BenchmarkDecodeFloor only decodes every pod's device-allocated annotation on every
// node: the least any Filter reading the annotations must do.
func BenchmarkDecodeFloor(b *testing.B) {
	nodes := filterCluster(b, 5000)
	b.Run("nodes=5000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, n := range nodes {
				for _, p := range n.pods {
					if _, err := DecodeAllocated(p.Annotations[AnnotationDeviceAllocated]); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
}
