package rdmaplugin

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

func hintName(h fwk.QueueingHint) string {
	if h == fwk.Queue {
		return "Queue"
	}
	return "QueueSkip"
}

// The queueing hints retry a waiting pod on the events that can make it fit, and
// skip the others.
func TestQueueingHints(t *testing.T) {
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4))
	waiting := rdmaPod(t, "waiting", 1, 0)
	never := rdmaPod(t, "never", 5, 0) // the node has 4 VFs
	holder := trustedPod(t, "holder", "n1", 2, 0, "garbage{")
	holder.ResourceVersion = "1"
	fixed := holder.DeepCopy()
	fixed.ResourceVersion = "2"
	a, err := rdma.Allocate(devicesOf(t, p.state, "n1").inv, nil, vfRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	fixed.Annotations[rdma.AnnotationDeviceAllocated] = encode(t, a)
	status := fixed.DeepCopy()
	status.ResourceVersion = "3"
	status.Status.Phase = corev1.PodRunning
	withoutAnnotation := rdmaPod(t, "asks", 1, 0)
	withoutAnnotation.Spec.NodeName = "n1"
	plain := &corev1.Pod{}
	plain.UID, plain.Name, plain.Namespace, plain.Spec.NodeName = types.UID("plain"), "plain", "ns", "n1"
	waitingNewHint := waiting.DeepCopy()
	waitingNewHint.Annotations[rdma.AnnotationDeviceAllocateHint] = `{"rdma":{"vfSelector":{"matchLabels":{"a":"b"}}}}`
	other := rdmaPod(t, "other", 1, 0)
	waitingLabelled := waiting.DeepCopy()
	waitingLabelled.Labels = map[string]string{"x": "y"}

	for _, tc := range []struct {
		name     string
		fn       fwk.QueueingHintFn
		pod      *corev1.Pod
		old, new any
		want     fwk.QueueingHint
	}{
		{"a pod holding devices deleted", p.hintPodDeleted, waiting, holder, nil, fwk.Queue},
		{"a pod holding devices deleted, final state unknown", p.hintPodDeleted, waiting, cache.DeletedFinalStateUnknown{Obj: holder}, nil, fwk.Queue},
		{"a pod asking for devices deleted after its annotation was removed", p.hintPodDeleted, waiting, withoutAnnotation, nil, fwk.Queue},
		{"a pod holding nothing deleted", p.hintPodDeleted, waiting, plain, nil, fwk.QueueSkip},
		{"a pod deleted, for a pod that never fits", p.hintPodDeleted, never, holder, nil, fwk.QueueSkip},
		{"a bound pod's annotation fixed", p.hintPodUpdated, waiting, holder, fixed, fwk.Queue},
		{"a bound pod's status changed", p.hintPodUpdated, waiting, fixed, status, fwk.QueueSkip},
		{"another unbound pod's annotation changed", p.hintPodUpdated, other, waiting, waitingNewHint, fwk.QueueSkip},
		{"the waiting pod's allocate hint changed", p.hintPodUpdated, waiting, waiting, waitingNewHint, fwk.Queue},
		{"the waiting pod's labels changed", p.hintPodUpdated, waiting, waiting, waitingLabelled, fwk.QueueSkip},
		{"a Device object changed", p.hintDevice, waiting, nil, device(t, "n2", 1, 0, 1, 4), fwk.Queue},
		{"a ResourceSlice deleted", p.hintSlice, waiting, (&resourceSliceBuilder{name: "s"}).build(), nil, fwk.Queue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(klog.Background(), tc.pod, tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("hint = %s, want %s", hintName(got), hintName(tc.want))
			}
		})
	}
	// The hints brought the plugin's view up to the events: the fixed annotation and
	// the new Device object are known before the pod is retried.
	if err := p.state.filter("n1", nil, "one", vfRequest(1)); err != nil {
		t.Fatalf("after the fix's hint, filter = %v", err)
	}
	if _, err := p.state.inventory("n2"); err != nil {
		t.Fatalf("after the Device hint: %v", err)
	}
}

// With ResourceSlices watched, a pod with resource claims and no RDMA request goes
// through Filter, which refuses only nodes whose devices are published twice; Reserve
// and Score leave it alone. Without the watch it skips the plugin.
func TestPodsWithClaims(t *testing.T) {
	ctx := context.Background()
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4))
	p.state.setDevice(device(t, "n2", 1, 0, 1, 4))
	node := "n1"
	p.state.setSlice((&resourceSliceBuilder{name: "n1-rdma", node: &node, bdfs: []string{"0000:10:01.0"}}).build())
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "claims", "ns", "claims"
	claim := "c"
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "c", ResourceClaimName: &claim}}

	state := framework.NewCycleState()
	if _, s := p.PreFilter(ctx, state, pod, nil); s.Code() != fwk.Skip {
		t.Fatalf("PreFilter without the ResourceSlice watch = %v, want Skip", s)
	}
	p.watchSlices = true
	state = framework.NewCycleState()
	if _, s := p.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v, want success", s)
	}
	if s := p.Filter(ctx, state, pod, view(t, p, "n1")); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("Filter on the node publishing a VF twice = %v, want UnschedulableAndUnresolvable", s)
	}
	if s := p.Filter(ctx, state, pod, view(t, p, "n2")); !s.IsSuccess() {
		t.Fatalf("Filter on another node = %v, want success", s)
	}
	if s := p.PreScore(ctx, state, pod, nil); s.Code() != fwk.Skip {
		t.Fatalf("PreScore = %v, want Skip", s)
	}
	if s := p.Reserve(ctx, state, pod, "n2"); !s.IsSuccess() {
		t.Fatalf("Reserve = %v", s)
	}
	if n := len(p.state.reserved); n != 0 {
		t.Fatalf("%d reservations, want none", n)
	}
	rdmaPodState := preFilter(t, p, rdmaPod(t, "vf", 1, 0))
	if s := p.Filter(ctx, rdmaPodState, rdmaPod(t, "vf", 1, 0), view(t, p, "n1")); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("Filter of an RDMA pod on the node publishing a VF twice = %v, want UnschedulableAndUnresolvable", s)
	}
}
