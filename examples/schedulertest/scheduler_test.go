package schedulertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// boundWithDevices reports whether the pod is bound and carries the annotation.
func boundWithDevices(p *corev1.Pod) bool {
	_, ok := p.Annotations[rdma.AnnotationDeviceAllocated]
	return p.Spec.NodeName != "" && ok
}

// TestPlacementMatchesAllocate creates pods one at a time (PF, VF, label selectors,
// exclusive, joint GPU+RDMA) and checks each lands on a node where it fits, on the
// node its selectors leave, with exactly the devices rdma.Allocate picks given the
// pods already bound there, and that its annotation decodes.
func TestPlacementMatchesAllocate(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "placement")
	nodes := createNodes(t, ctx,
		makeNode("place-a", shape{roots: 2, gpus: 2, pfs: 1, vfs: 8, pfLabels: map[string]string{"rdma-type": "compute"}}),
		makeNode("place-b", shape{roots: 2, gpus: 2, pfs: 1, vfs: 8, pfLabels: map[string]string{"rdma-type": "storage"}}),
		makeNode("place-c", shape{roots: 2, gpus: 2, pfs: 2, pfLabels: map[string]string{"rdma-type": "compute", "nic-mode": "pf"}}),
	)
	startScheduler(t, nil)

	steps := []struct {
		name string
		spec podSpec
		node string // "" when more than one node fits
	}{
		{name: "two-units", spec: podSpec{rdma: 2}},
		{name: "storage-vf", spec: podSpec{rdma: 1, hint: &rdma.DeviceHint{Selector: selector("rdma-type", "storage")}}, node: "place-b"},
		{name: "whole-pf", spec: podSpec{rdma: 1, hint: &rdma.DeviceHint{Selector: selector("nic-mode", "pf")}}, node: "place-c"},
		{name: "exclusive-vfs", spec: podSpec{rdma: 2, hint: &rdma.DeviceHint{Selector: selector("rdma-type", "storage"), ExclusivePolicy: rdma.ExclusiveDevice}}, node: "place-b"},
		{name: "same-pf-vfs", spec: podSpec{rdma: 3, hint: &rdma.DeviceHint{RequiredTopologyScope: rdma.ScopeDevice}}},
		{name: "joint-gpu-rdma", spec: podSpec{rdma: 2, gpus: 2, joint: &rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe}}},
		{name: "joint-on-pf-node", spec: podSpec{rdma: 2, gpus: 2, hint: &rdma.DeviceHint{Selector: selector("nic-mode", "pf")}, joint: &rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe}}, node: "place-c"},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			pod := makePod(t, ns, step.name, step.spec)
			// What every node holds before this pod, from the pods bound so far.
			before, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got *corev1.Pod
			waitFor(t, ctx, time.Minute, "pod "+step.name+" bound with devices", func(ctx context.Context) (bool, error) {
				got, err = cs.CoreV1().Pods(ns).Get(ctx, step.name, metav1.GetOptions{})
				return err == nil && boundWithDevices(got), err
			})
			node := got.Spec.NodeName
			if step.node != "" && node != step.node {
				t.Fatalf("pod landed on %s, want %s (the only node its selectors allow)", node, step.node)
			}
			tn := nodes[node]
			if tn == nil {
				t.Fatalf("pod landed on %s, not a node of this test", node)
			}
			var onNode []*corev1.Pod
			for i := range before.Items {
				if before.Items[i].Spec.NodeName == node {
					onNode = append(onNode, &before.Items[i])
				}
			}
			used, err := rdma.UsedByPods(tn.inv, onNode)
			if err != nil {
				t.Fatal(err)
			}
			req, err := rdma.RequestFromPod(pod, rdma.CountModel)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rdma.Allocate(tn.inv, used, req)
			if err != nil {
				t.Fatalf("the scheduler placed the pod on %s but rdma.Allocate refuses it there: %v", node, err)
			}
			dec, err := rdma.DecodeAllocated(got.Annotations[rdma.AnnotationDeviceAllocated])
			if err != nil {
				t.Fatalf("annotation does not decode: %v", err)
			}
			if diff := cmp.Diff(rdma.Entries(want, rdma.CountModel), dec.RDMA); diff != "" {
				t.Errorf("rdma entries on %s differ from rdma.Allocate (-want +got):\n%s", node, diff)
			}
			gpus, err := dec.GPUMinors()
			if err != nil {
				t.Fatal(err)
			}
			var wantGPUs []int32
			for _, g := range want.GPUs {
				wantGPUs = append(wantGPUs, g.Minor)
			}
			if diff := cmp.Diff(wantGPUs, gpus); diff != "" {
				t.Errorf("GPUs differ from rdma.Allocate (-want +got):\n%s", diff)
			}
			if step.spec.gpus > 0 && len(gpus) != step.spec.gpus {
				t.Errorf("got %d GPUs, want %d", len(gpus), step.spec.gpus)
			}
		})
	}
}

// checkNoDeviceTwice lists every device (VF or whole PF, by BDF, and GPU) each bound
// pod holds per node (rdmaKeys), failing the test when one is held by two pods.
func checkNoDeviceTwice(t *testing.T, pods []corev1.Pod) (bound int) {
	t.Helper()
	holder := map[string]string{}
	for i := range pods {
		p := &pods[i]
		if !boundWithDevices(p) {
			continue
		}
		bound++
		keys := rdmaKeys(t, p)
		for _, k := range keys {
			k = p.Spec.NodeName + " " + k
			if other, ok := holder[k]; ok {
				t.Errorf("%s is held by both %s and %s", k, other, p.Name)
			}
			holder[k] = p.Name
		}
	}
	return bound
}

// storageNodes are three VF-mode nodes with 8 VFs each, 4 of them labelled storage:
// NodeResourcesFit admits 8 one-VF pods per node, the plugin only 4 storage ones.
func storageNodes(prefix string) []rdma.Node {
	s := shape{roots: 1, gpus: 0, pfs: 2, vfs: 4, vfGroups: []map[string]string{{"rdma-type": "storage"}, {"rdma-type": "compute"}}}
	return []rdma.Node{makeNode(prefix+"-1", s), makeNode(prefix+"-2", s), makeNode(prefix+"-3", s)}
}

func storagePod(t *testing.T, ns string, i int) *corev1.Pod {
	return makePod(t, ns, fmt.Sprintf("vf-%02d", i), podSpec{rdma: 1, hint: &rdma.DeviceHint{VFSelector: selector("rdma-type", "storage")}})
}

func listPods(t *testing.T, ctx context.Context, ns string) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// waitSettled waits until want pods are bound with devices and every other pod has
// been tried (PodScheduled false), and returns the pods.
func waitSettled(t *testing.T, ctx context.Context, ns string, want int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, ctx, 2*time.Minute, fmt.Sprintf("%d pods bound, the rest unschedulable", want), func(ctx context.Context) (bool, error) {
		pods = listPods(t, ctx, ns)
		bound, tried := 0, 0
		for i := range pods {
			if boundWithDevices(&pods[i]) {
				bound++
			} else if c := scheduledCondition(&pods[i]); c != nil && c.Status == corev1.ConditionFalse {
				tried++
			}
		}
		if bound > want {
			return false, fmt.Errorf("%d pods bound, more than the %d storage VFs", bound, want)
		}
		return bound == want && bound+tried == len(pods), nil
	})
	return pods
}

// TestConcurrentPodsNeverShareDevices creates 50 one-VF pods at once on three nodes
// with 12 storage VFs: exactly 12 bind, no VF is held twice, the rest stay Pending
// with the plugin's reason; deleting bound pods lets Pending ones take their VFs.
func TestConcurrentPodsNeverShareDevices(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "concurrent")
	createNodes(t, ctx, storageNodes("conc")...)
	startScheduler(t, nil)
	for i := 0; i < 50; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, storagePod(t, ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := waitSettled(t, ctx, ns, 12)
	if n := checkNoDeviceTwice(t, pods); n != 12 {
		t.Fatalf("%d pods bound, want 12", n)
	}
	for i := range pods {
		if boundWithDevices(&pods[i]) {
			continue
		}
		c := scheduledCondition(&pods[i])
		if c == nil || c.Reason != corev1.PodReasonUnschedulable || !strings.Contains(c.Message, string(rdma.ReasonInsufficientDevices)) ||
			!strings.Contains(c.Message, "need 1 VF matching {rdma-type=storage}, 0 free") {
			t.Fatalf("pending pod %s: PodScheduled %+v, want Unschedulable with reason %s naming the storage VFs that ran out", pods[i].Name, c, rdma.ReasonInsufficientDevices)
		}
	}
	// Free five VFs: five Pending pods take them.
	deleted := 0
	for i := range pods {
		if deleted < 5 && boundWithDevices(&pods[i]) {
			deletePod(t, ctx, ns, pods[i].Name)
			deleted++
		}
	}
	pods = waitSettled(t, ctx, ns, 12)
	if n := checkNoDeviceTwice(t, pods); n != 12 || len(pods) != 45 {
		t.Fatalf("%d of %d pods bound after deleting 5, want 12 of 45", n, len(pods))
	}
}

// TestRestartedSchedulerDoesNotDoubleAllocate kills the scheduler after some pods are
// bound and starts a new one, which must rebuild what is held from the pods'
// annotations: afterwards still exactly 12 storage VFs are handed out, none twice.
func TestRestartedSchedulerDoesNotDoubleAllocate(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "restart")
	createNodes(t, ctx, storageNodes("rst")...)
	first := startScheduler(t, nil)
	for i := 0; i < 25; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, storagePod(t, ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, time.Minute, "some pods bound", func(ctx context.Context) (bool, error) {
		n := 0
		for _, p := range listPods(t, ctx, ns) {
			if boundWithDevices(&p) {
				n++
			}
		}
		return n >= 6, nil
	})
	first.stop() // a crash: no cleanup, reservations lost
	for i := 25; i < 50; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, storagePod(t, ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(t, nil)
	pods := waitSettled(t, ctx, ns, 12)
	if n := checkNoDeviceTwice(t, pods); n != 12 {
		t.Fatalf("%d pods bound, want 12", n)
	}
}

// TestNeverFitIsUnresolvableAndNotRetried: a pod asking for more storage VFs than any
// node has gets UnschedulableAndUnresolvable with the plugin's reason, and freeing
// devices (deleting bound pods) does not retry it, while it does retry a pod that
// only lacked free devices.
func TestNeverFitIsUnresolvableAndNotRetried(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "neverfit")
	createNodes(t, ctx, storageNodes("never")...)
	s := startScheduler(t, nil)
	// 5 storage VFs: every node has 8 VFs (NodeResourcesFit passes) but only 4 storage.
	never := makePod(t, ns, "never", podSpec{rdma: 5, hint: &rdma.DeviceHint{VFSelector: selector("rdma-type", "storage")}})
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, never, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its first attempt must see idle nodes: once a node holds 4 one-VF pods,
	// NodeResourcesFit rejects a 5-VF pod there first (8 VFs), and it retries pods
	// it rejected when pods are deleted.
	waitFor(t, ctx, time.Minute, "pod never tried", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "never", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := scheduledCondition(p)
		return c != nil && c.Status == corev1.ConditionFalse, nil
	})
	// Fill the storage VFs and leave one pod waiting for them.
	for i := 0; i < 13; i++ {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, storagePod(t, ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := waitSettled(t, ctx, ns, 12)
	for i := range pods {
		if pods[i].Name != "never" {
			continue
		}
		c := scheduledCondition(&pods[i])
		if c == nil || !strings.Contains(c.Message, string(rdma.ReasonTooFewDevices)) || !strings.Contains(c.Message, "need 5 VFs matching {rdma-type=storage}, node has 4") {
			t.Fatalf("pod never: PodScheduled %+v, want reason %s and what the node has", c, rdma.ReasonTooFewDevices)
		}
	}
	time.Sleep(3 * time.Second) // let start-up events (nodes, Device objects) pass
	attempts := func(pod string) int { return s.logCount("Unable to schedule pod", `pod="`+ns+"/"+pod+`"`) }
	neverBefore := attempts("never")
	if neverBefore == 0 {
		t.Fatal("the scheduler log shows no failed attempt for pod never; the log format changed?")
	}
	var waiting string
	for i := range pods {
		if !boundWithDevices(&pods[i]) && pods[i].Name != "never" {
			waiting = pods[i].Name
		}
	}
	// Delete two bound pods: the waiting pod is retried and binds; never is not retried.
	deleted := 0
	for i := range pods {
		if deleted < 2 && boundWithDevices(&pods[i]) {
			deletePod(t, ctx, ns, pods[i].Name)
			deleted++
		}
	}
	waitFor(t, ctx, time.Minute, "pod "+waiting+" bound after devices were freed", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, waiting, metav1.GetOptions{})
		return err == nil && boundWithDevices(p), err
	})
	time.Sleep(5 * time.Second)
	if after := attempts("never"); after != neverBefore {
		t.Errorf("pod never was retried after pods were deleted: %d failed attempts, %d before", after, neverBefore)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "never", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Fatalf("pod never was bound to %s", p.Spec.NodeName)
	}
}
