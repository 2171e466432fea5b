package rdmaplugin

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

// BenchmarkNode measures what the plugin does per node and pod on the node
// shape (2 PCIe roots x 4 GPUs x 2 PFs x 8 VFs) with two joint pods bound: Filter
// (state lookup and rdma.Fits) and Score (rdma.Score), for a joint request of 2 GPUs
// and 2 VFs. A full node (4 pods) is the failing case Filter also meets.
func BenchmarkNode(b *testing.B) {
	req := rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Joint: rdma.JointSamePCIe}
	for _, pods := range []int{0, 2, 4} {
		c := newCluster()
		c.setDevice(device(b, "n", 2, 4, 2, 8))
		for p := 0; p < pods; p++ {
			uid := fmt.Sprintf("p%d", p)
			a, err := c.reserve(types.UID(uid), "n", nil, req)
			if err != nil {
				b.Fatal(err)
			}
			c.setPod(boundPod(b, uid, "n", a))
		}
		b.Run(fmt.Sprintf("filter/%d-pods", pods), func(b *testing.B) {
			for b.Loop() {
				inv, used, err := c.state("n", nil)
				if err != nil {
					b.Fatal(err)
				}
				_ = rdma.Fits(inv, used, req)
			}
		})
		if pods == 4 {
			continue
		}
		b.Run(fmt.Sprintf("score/%d-pods", pods), func(b *testing.B) {
			for b.Loop() {
				inv, used, _ := c.state("n", nil)
				if _, err := rdma.Score(inv, used, req, rdma.ScoreOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNodeCached is BenchmarkNode for a request the node has already answered
// (the next pod of the same workload): the plugin's per-node cache.
func BenchmarkNodeCached(b *testing.B) {
	req := rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Joint: rdma.JointSamePCIe}
	c := newCluster()
	c.setDevice(device(b, "n", 2, 4, 2, 8))
	_ = c.filter("n", nil, "k", req)
	b.Run("filter", func(b *testing.B) {
		for b.Loop() {
			_ = c.filter("n", nil, "k", req)
		}
	})
	b.Run("score", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.score("n", nil, "k", req, rdma.ScoreOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
