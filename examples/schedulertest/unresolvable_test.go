package schedulertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// TestUnresolvableNodesAreNotPreempted: a high-priority pod asking for one RDMA
// device, and three nodes where it can never fit, each holding a low-priority pod
// (a candidate victim): one whose Device object is invalid (a PF listed twice), one
// without a Device object, one without a VF of the asked label. The plugin reports
// each as UnschedulableAndUnresolvable, so the scheduler's preemption does not try
// them: the pod's condition says preemption is not helpful on all three nodes (a
// node preemption tried repeats its dry run's Filter message there), and no
// low-priority pod is deleted.
func TestUnresolvableNodesAreNotPreempted(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "unresolvable")
	invalid := makeNode("unres-invalid", shape{roots: 1, pfs: 1, vfs: 2})
	invalid.Devices = append(slices.Clone(invalid.Devices), invalid.Devices[0])
	obj, err := deviceObject(invalid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(deviceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(deviceGVR).Delete(context.Background(), invalid.Name, metav1.DeleteOptions{}) })
	small := makeNode("unres-small", shape{roots: 1, pfs: 1, vfs: 2})
	createNodes(t, ctx, small)
	rdmaCapacity := corev1.ResourceList{rdma.ResourceRDMA: *resource.NewQuantity(8, resource.DecimalSI)}
	for _, name := range []string{"unres-invalid", "unres-nodevice"} {
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if err := createNodeObject(ctx, name, rdmaCapacity); err != nil {
			t.Fatal(err)
		}
	}
	priorityClass(t, ctx, "kplan-unres-low", 100)
	priorityClass(t, ctx, "kplan-unres-high", 1000)
	var victims []string
	for _, node := range []string{"unres-invalid", "unres-nodevice", "unres-small"} {
		p := withPriority(makePod(t, ns, "low-"+node, podSpec{}), "kplan-unres-low", 100)
		p.Spec.NodeName = node
		createPod(t, ctx, p)
		victims = append(victims, p.Name)
	}
	startScheduler(t, nil)

	// A storage VF: unres-small has none (and every node has capacity for it).
	storage := &rdma.DeviceHint{VFSelector: selector("rdma-type", "storage")}
	high := withPriority(makePod(t, ns, "high", podSpec{rdma: 1, hint: storage}), "kplan-unres-high", 1000)
	createPod(t, ctx, high)
	var cond *corev1.PodCondition
	waitFor(t, ctx, time.Minute, "pod high rejected on all three nodes", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond = scheduledCondition(p)
		return cond != nil && cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, "preemption"), nil
	})
	t.Logf("pod high: %s", cond.Message)
	for _, want := range []string{"InvalidInventory", "node unres-invalid: [devices[1].minor: Duplicate value", "node unres-nodevice has no Device object", "TooFewDevices", "Preemption is not helpful"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("condition message does not contain %q", want)
		}
	}
	// The preemption part of the message lists, per node, why preemption did not
	// help: a node preemption tried repeats the Filter message of its dry run.
	if pre := cond.Message[strings.Index(cond.Message, "preemption:"):]; !strings.Contains(pre, "3 Preemption is not helpful for scheduling") || strings.Contains(pre, "No preemption victims") {
		t.Errorf("preemption was tried on a node where the pod can never fit: %s", pre)
	}
	time.Sleep(2 * time.Second)
	for _, v := range victims {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, v, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("low-priority pod %s was preempted (%v)", v, err)
		}
	}
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{}); err != nil || p.Status.NominatedNodeName != "" {
		t.Errorf("pod high: %v, nominated to %q", err, p.Status.NominatedNodeName)
	}
}
