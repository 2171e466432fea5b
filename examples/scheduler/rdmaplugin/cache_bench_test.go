package rdmaplugin

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// The per-node cache's costs, through the plugin's extension points, on the node shape
// of BenchmarkNode (2 PCIe roots x 4 GPUs x 2 PFs x 8 VFs) holding three joint pods (2
// GPUs and 2 VFs each: a fourth fits), with 100 more pods without devices on the node.

// benchPod is a pending pod asking for 2 GPUs and 2 VFs on their PCIe roots.
func benchPod(b *testing.B, name string) *corev1.Pod {
	b.Helper()
	res := corev1.ResourceList{
		corev1.ResourceCPU:     resource.MustParse("100m"),
		rdma.ResourceRDMA:      resource.MustParse("2"),
		rdma.ResourceNvidiaGPU: resource.MustParse("2"),
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), ResourceVersion: "1", Annotations: map[string]string{
			rdma.AnnotationDeviceAllocateHint:  `{"rdma":{"vfSelector":{}}}`,
			rdma.AnnotationDeviceJointAllocate: `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

// benchNode sets up node n with its three joint pods bound (and, on reservedNodes other
// nodes, four joint pods each reserved and not yet bound) and returns the plugin, the
// scheduler's NodeInfo of n (the snapshot the plugin sees) and a pod to schedule.
func benchNode(b *testing.B, reservedNodes int) (*Plugin, fwk.NodeInfo, *corev1.Pod) {
	b.Helper()
	p, err := newPlugin(Args{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Joint: rdma.JointSamePCIe}
	p.state.setDevice(device(b, "n", 2, 4, 2, 8))
	var onNode []*corev1.Pod
	for i := 0; i < 3; i++ {
		uid := fmt.Sprintf("held-%d", i)
		a, err := p.state.reserve(types.UID(uid), "n", nil, req)
		if err != nil {
			b.Fatal(err)
		}
		pod := boundPod(b, uid, "n", a)
		p.onPod(pod)
		onNode = append(onNode, pod)
	}
	for i := 0; i < 100; i++ {
		onNode = append(onNode, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("plain-%d", i))}, Spec: corev1.PodSpec{NodeName: "n"}})
	}
	for k := 0; k < reservedNodes; k++ {
		node := fmt.Sprintf("other-%d", k)
		p.state.setDevice(device(b, node, 2, 4, 2, 8))
		for i := 0; i < 4; i++ {
			if _, err := p.state.reserve(types.UID(fmt.Sprintf("%s-%d", node, i)), node, nil, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	ni := framework.NewNodeInfo(onNode...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	p.snapshot = func(string) fwk.NodeInfo { return ni }
	return p, ni, benchPod(b, "pending")
}

func benchPreFilter(b *testing.B, p *Plugin, pod *corev1.Pod) fwk.CycleState {
	b.Helper()
	state := framework.NewCycleState()
	if _, s := p.PreFilter(context.Background(), state, pod, nil); !s.IsSuccess() {
		b.Fatal(s)
	}
	return state
}

// measure runs op in a benchmark loop and reports, besides wall time, the process CPU
// time per op as cpu-ns/op.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkFilterWithWhatIf: the scheduler filters the node on a what-if copy of its
// NodeInfo (a preemption dry run without a victim), then on its own NodeInfo (the next
// pod's Filter). The second finds its answer cached unless the copy replaced the
// node's entry.
func BenchmarkFilterWithWhatIf(b *testing.B) {
	p, ni, pod := benchNode(b, 0)
	state := benchPreFilter(b, p, pod)
	ctx := context.Background()
	whatIf := ni.Snapshot()
	if err := whatIf.RemovePod(klog.Background(), ni.GetPods()[0].GetPod()); err != nil {
		b.Fatal(err)
	}
	if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
		b.Fatal(s)
	}
	measure(b, func() {
		p.Filter(ctx, state, pod, whatIf)
		if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			b.Fatal(s)
		}
	})
}

// BenchmarkFilterMiss: Filter when the node's entry is not cached (after any change of
// the node), with 103 pods on the node and reservations of pods still binding on
// other nodes.
func BenchmarkFilterMiss(b *testing.B) {
	for _, nodes := range []int{0, 250} {
		b.Run(fmt.Sprintf("reserved=%d", 4*nodes), func(b *testing.B) {
			p, ni, pod := benchNode(b, nodes)
			state := benchPreFilter(b, p, pod)
			ctx := context.Background()
			measure(b, func() {
				p.state.mu.Lock()
				p.state.invalidate("n")
				p.state.mu.Unlock()
				if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
					b.Fatal(s)
				}
			})
		})
	}
}

// BenchmarkAddPod: the scheduler adds a pod nominated to the node (after its
// preemption) to a copy of the cycle state, for every pod it filters on that node,
// and removes it again.
func BenchmarkAddPod(b *testing.B) {
	p, ni, pod := benchNode(b, 0)
	state := benchPreFilter(b, p, pod)
	ctx := context.Background()
	nominated, err := framework.NewPodInfo(benchPod(b, "nominated"))
	if err != nil {
		b.Fatal(err)
	}
	measure(b, func() {
		if s := p.AddPod(ctx, state, pod, nominated, ni); !s.IsSuccess() {
			b.Fatal(s)
		}
		if s := p.RemovePod(ctx, state, pod, nominated, ni); !s.IsSuccess() {
			b.Fatal(s)
		}
	})
}

// BenchmarkCachedCycle: what one pod's scheduling cycle costs the plugin on a
// 5000-node cluster whose nodes have all answered its request before (pods of one
// workload): PreFilter, then Filter and Score on 500 nodes (the scheduler's share of
// nodes to score at 5000 nodes), from the next node on for each pod, as the
// scheduler rotates its start. Nodes as BenchmarkNode's, each holding one joint pod.
func BenchmarkCachedCycle(b *testing.B) {
	const nodes, perPod = 5000, 500
	p, err := newPlugin(Args{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Joint: rdma.JointSamePCIe}
	dev := device(b, "template", 2, 4, 2, 8)
	infos := make([]fwk.NodeInfo, nodes)
	for i := range infos {
		name := fmt.Sprintf("node-%04d", i)
		d := dev.DeepCopy()
		d.SetName(name)
		p.state.setDevice(d)
		a, err := p.state.reserve(types.UID(name+"-held"), name, nil, req)
		if err != nil {
			b.Fatal(err)
		}
		held := boundPod(b, name+"-held", name, a)
		p.onPod(held)
		ni := framework.NewNodeInfo(held)
		ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		infos[i] = ni
	}
	byName := map[string]fwk.NodeInfo{}
	for _, ni := range infos {
		byName[ni.Node().Name] = ni
	}
	p.snapshot = func(node string) fwk.NodeInfo { return byName[node] }
	pod := benchPod(b, "pending")
	ctx := context.Background()
	cycle := func(start int) {
		state := framework.NewCycleState()
		if _, s := p.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
			b.Fatal(s)
		}
		for k := 0; k < perPod; k++ {
			ni := infos[(start+k)%nodes]
			if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
				b.Fatal(s)
			}
			if _, s := p.Score(ctx, state, pod, ni); !s.IsSuccess() {
				b.Fatal(s)
			}
		}
	}
	for i := 0; i < nodes; i += perPod {
		cycle(i) // every node answers once
	}
	start := 0
	measure(b, func() {
		cycle(start)
		start = (start + 1) % nodes
	})
}
