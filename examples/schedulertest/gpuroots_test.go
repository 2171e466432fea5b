package schedulertest

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// mixNode is a node of the GPU-and-NIC mix: 4 PCIe roots with 2 GPUs each; root r has
// nics[r] NICs of 8 VFs (4 labelled rdma-type=storage, 4 rdma-type=compute).
func mixNode(name string, nics [4]int) rdma.Node {
	n := rdma.Node{Name: name}
	g, k := 0, 0
	for r := 0; r < 4; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		topo := func(bdf string) *rdma.DeviceTopology {
			return &rdma.DeviceTopology{SocketID: int32(r / 2), NodeID: int32(r / 2), PCIEID: root, BusID: bdf}
		}
		for i := 0; i < 2; i++ {
			n.Devices = append(n.Devices, rdma.DeviceInfo{UUID: fmt.Sprintf("GPU-%s-%d", name, g), Minor: i32(g), Type: rdma.GPU, Health: true,
				Topology: topo(fmt.Sprintf("0000:%02x:00.0", 0x80+g))})
			g++
		}
		for i := 0; i < nics[r]; i++ {
			bus := 0x10 + 4*k
			bdf := fmt.Sprintf("0000:%02x:00.0", bus)
			d := rdma.DeviceInfo{UUID: bdf, Minor: i32(k), Type: rdma.RDMA, Health: true, Topology: topo(bdf)}
			for gi, label := range []string{"storage", "compute"} {
				grp := rdma.VirtualFunctionGroup{Labels: map[string]string{"rdma-type": label}}
				for j := 4 * gi; j < 4*gi+4; j++ {
					grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(j), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+j/8, j%8)})
				}
				d.VFGroups = append(d.VFGroups, grp)
			}
			n.Devices = append(n.Devices, d)
			k++
		}
	}
	return n
}

// mixNodes are the mix's 10 nodes: on node i, root r has 1 + (i+r)%2 NICs (6 NICs,
// 48 VFs and 8 GPUs per node).
func mixNodes(prefix string) []rdma.Node {
	var out []rdma.Node
	for i := 0; i < 10; i++ {
		var nics [4]int
		for r := range nics {
			nics[r] = 1 + (i+r)%2
		}
		out = append(out, mixNode(fmt.Sprintf("%s-%02d", prefix, i), nics))
	}
	return out
}

// mixPods are the mix's 100 pods in a fixed shuffled order (their names sort in that
// order, so a scheduler started after they exist takes them in it): 60 VF-only pods of
// 4 VFs, 25 joint pods of 4 GPUs and 2 VFs on the GPUs' PCIe roots, 15 pods of 2
// storage VFs. At most 20 joint pods fit (80 GPUs); every other pod fits (310 of the
// 480 VFs are asked for).
func mixPods(t *testing.T, ns string) []*corev1.Pod {
	type kind struct {
		name string
		n    int
		spec podSpec
	}
	kinds := []kind{
		{"vf", 60, podSpec{rdma: 4}},
		{"joint", 25, podSpec{rdma: 2, gpus: 4, hint: &rdma.DeviceHint{VFSelector: &metav1.LabelSelector{}},
			joint: &rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe}}},
		{"storage", 15, podSpec{rdma: 2, hint: &rdma.DeviceHint{VFSelector: selector("rdma-type", "storage")}}},
	}
	var order []kind
	for _, k := range kinds {
		for i := 0; i < k.n; i++ {
			order = append(order, k)
		}
	}
	rand.New(rand.NewSource(24)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	pods := make([]*corev1.Pod, len(order))
	for i, k := range order {
		pods[i] = makePod(t, ns, fmt.Sprintf("p%03d-%s", i, k.name), k.spec)
	}
	return pods
}

// mixResult counts the pods bound with devices per kind (the name's suffix).
func mixResult(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for i := range pods {
		if boundWithDevices(&pods[i]) {
			out[pods[i].Name[strings.IndexByte(pods[i].Name, '-')+1:]]++
		}
	}
	return out
}

// waitMixSettled waits until every pod is bound with devices or was found
// unschedulable, with no change over 3 s, and returns the pods.
func waitMixSettled(t *testing.T, ctx context.Context, ns string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	last := ""
	waitFor(t, ctx, 3*time.Minute, "every pod bound or unschedulable", func(ctx context.Context) (bool, error) {
		pods = listPods(t, ctx, ns)
		var state strings.Builder
		for i := range pods {
			switch c := scheduledCondition(&pods[i]); {
			case boundWithDevices(&pods[i]):
				state.WriteString("b")
			case c != nil && c.Status == corev1.ConditionFalse:
				state.WriteString("u")
			default:
				return false, nil
			}
		}
		if state.String() != last {
			last = state.String()
			time.Sleep(3 * time.Second)
			return false, nil
		}
		return true, nil
	})
	return pods
}

// TestJointPodsKeepTheirGPUs runs the GPU-and-NIC mix, all pods at once: 10 nodes of 8
// GPUs on 4 PCIe roots with 1-2 NICs per root, 60 VF-only, 25 joint GPU+RDMA and 15
// storage pods. VF-only pods must not use up the NICs beside free GPUs: every pod but
// the joint pods that find no GPUs fits, and the joint pods placed are the most that
// fit (20). No device is held twice.
func TestJointPodsKeepTheirGPUs(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "gpuroots")
	createNodesParallel(t, ctx, mixNodes("mix"))
	for _, p := range mixPods(t, ns) {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(t, nil)
	pods := waitMixSettled(t, ctx, ns)
	checkNoDeviceTwice(t, pods)
	got := mixResult(pods)
	t.Logf("bound: %d of 60 VF-only, %d of 25 joint (20 fit), %d of 15 storage", got["vf"], got["joint"], got["storage"])
	if got["vf"] != 60 || got["storage"] != 15 || got["joint"] != 20 {
		for i := range pods {
			if c := scheduledCondition(&pods[i]); !boundWithDevices(&pods[i]) && c != nil && !strings.HasSuffix(pods[i].Name, "joint") {
				t.Logf("%s: %s", pods[i].Name, c.Message)
			}
		}
		t.Fatalf("bound %v, want vf:60 joint:20 storage:15", got)
	}
}

// TestJointPodsKeepTheirGPUsAcrossRestarts runs the mix with the pods trickling in
// (one every 50 ms) while the scheduler is killed (SIGKILL) and restarted three times:
// a restarted scheduler rebuilds what is held from the annotations, so still no
// device is held twice and the joint pods placed are the most that fit.
func TestJointPodsKeepTheirGPUsAcrossRestarts(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "gpuroots-restart")
	createNodesParallel(t, ctx, mixNodes("mixr"))
	pods := mixPods(t, ns)
	s := startScheduler(t, nil)
	for i, p := range pods {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if i%25 == 24 && i < len(pods)-1 {
			s.stop()
			s = startScheduler(t, nil)
		}
	}
	got := waitMixSettled(t, ctx, ns)
	checkNoDeviceTwice(t, got)
	n := mixResult(got)
	t.Logf("bound: %d of 60 VF-only, %d of 25 joint (20 fit), %d of 15 storage", n["vf"], n["joint"], n["storage"])
	if n["vf"] != 60 || n["storage"] != 15 || n["joint"] != 20 {
		t.Fatalf("bound %v, want vf:60 joint:20 storage:15", n)
	}
}
