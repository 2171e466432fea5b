package schedulertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

// Reasons of the plugin's events (examples/scheduler/rdmaplugin).
const (
	reasonUnusable     = "RDMAAllocationUnusable"
	reasonChanged      = "RDMAAllocationChanged"
	reasonIgnored      = "RDMAAllocationIgnored"
	reasonNotRequested = "RDMAAllocationNotRequested"
	reasonDeviceSkip   = "RDMADeviceVFsSkipped"
	reasonDeviceBad    = "RDMADeviceInvalid"
)

// pinned keeps a pod to one node (NodeAffinity rejects the others).
func pinned(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return p
}

// createPod creates a pod, failing the test on error.
func createPod(t *testing.T, ctx context.Context, p *corev1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setAllocated sets (value non-nil) or removes a pod's device-allocated annotation.
func setAllocated(t *testing.T, ctx context.Context, ns, name string, value *string) {
	t.Helper()
	var v any
	if value != nil {
		v = *value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{rdma.AnnotationDeviceAllocated: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventsFor lists the events (events.k8s.io) in namespace ns about the object named
// name (and, unless uid is empty, with that UID) with the given reason.
func eventsFor(ctx context.Context, ns, name string, uid types.UID, reason string) ([]eventsv1.Event, error) {
	l, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range l.Items {
		if e.Regarding.Name == name && (uid == "" || e.Regarding.UID == uid) && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// waitEvents waits until n events with the reason are about the object, and returns
// them; it fails on more.
func waitEvents(t *testing.T, ctx context.Context, ns, name, reason string, n int) []eventsv1.Event {
	t.Helper()
	return waitEventsUID(t, ctx, ns, name, "", reason, n)
}

// waitDeviceEvents is waitEvents for the node's Device object as it is now: the
// events of an earlier object of the same name (a test run again with go test -count
// recreates its nodes; events stay behind in namespace default) do not count.
func waitDeviceEvents(t *testing.T, ctx context.Context, node, reason string, n int) []eventsv1.Event {
	t.Helper()
	obj, err := dyn.Resource(deviceGVR).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return waitEventsUID(t, ctx, metav1.NamespaceDefault, node, obj.GetUID(), reason, n)
}

func waitEventsUID(t *testing.T, ctx context.Context, ns, name string, uid types.UID, reason string, n int) []eventsv1.Event {
	t.Helper()
	var got []eventsv1.Event
	waitFor(t, ctx, 30*time.Second, fmt.Sprintf("%d %s events on %s", n, reason, name), func(ctx context.Context) (bool, error) {
		var err error
		if got, err = eventsFor(ctx, ns, name, uid, reason); err != nil {
			return false, nil // the poll's deadline, reported with what was waited for
		}
		if len(got) > n {
			return false, fmt.Errorf("%d %s events on %s, want %d: %+v", len(got), reason, name, n, got)
		}
		return len(got) == n, nil
	})
	for _, e := range got {
		if e.Type != corev1.EventTypeWarning {
			t.Errorf("event %s on %s is %s, want Warning", e.Reason, name, e.Type)
		}
		if e.Series != nil {
			t.Errorf("event %s on %s was repeated %d times, want once: %s", e.Reason, name, e.Series.Count, e.Note)
		}
	}
	return got
}

// allocatedEdit turns a pod's device-allocated annotation into an edited one (nil:
// removed).
type allocatedEdit func(t *testing.T, orig string) *string

func literal(v string) allocatedEdit { return func(*testing.T, string) *string { return &v } }

// decodedEdit edits the decoded annotation and encodes it again.
func decodedEdit(f func(a *rdma.Allocated)) allocatedEdit {
	return func(t *testing.T, orig string) *string {
		a, err := rdma.DecodeAllocated(orig)
		if err != nil {
			t.Fatal(err)
		}
		f(&a)
		v, err := a.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
}

// TestAnnotationEditsAfterBinding: on nodes with one PF of 4 VFs, pod a holds 2 VFs
// and pod b 1; a's device-allocated annotation is then edited (malformed, naming
// devices the node does not have, or valid but wrong) or removed. Each edit gets one
// Warning event on pod a and one log line; a still holds its 2 VFs (its containers
// use them), so a new 1-VF pod c binds to the one free VF: the node is neither
// blocked nor handed out twice. The scheduler's metric counts one report per change.
func TestAnnotationEditsAfterBinding(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "edits")
	edits := []struct {
		name string
		edit allocatedEdit
	}{
		{"garbage", literal("garbage{")},
		{"unknown-pf", literal(`{"rdma":[{"minor":0,"id":"0000:99:00.0","busID":"0000:99:00.0","resources":{"koordinator.sh/rdma":"2"},"extension":{"vfs":[{"minor":-1,"busID":"0000:99:01.0"},{"minor":-1,"busID":"0000:99:01.1"}]}}]}`)},
		{"vf-not-on-pf", decodedEdit(func(a *rdma.Allocated) { a.RDMA[0].Extension.VirtualFunctions[1].BusID = "0000:10:07.7" })},
		{"empty", literal("")},
		{"empty-object", literal("{}")},
		{"empty-rdma", literal(`{"rdma":[]}`)},
		{"minor", decodedEdit(func(a *rdma.Allocated) { a.RDMA[0].Minor = 7 })},
		{"vf-twice", decodedEdit(func(a *rdma.Allocated) {
			vfs := a.RDMA[0].Extension.VirtualFunctions
			vfs[1] = vfs[0]
		})},
		{"removed", func(*testing.T, string) *string { return nil }},
	}
	var nodes []rdma.Node
	for _, e := range edits {
		nodes = append(nodes, makeNode("edit-"+e.name, shape{roots: 1, pfs: 1, vfs: 4}))
	}
	createNodes(t, ctx, nodes...)
	port := freePort(t)
	s := startScheduler(t, nil, metricsArgs(port)...)
	for _, e := range edits {
		node := "edit-" + e.name
		createPod(t, ctx, pinned(makePod(t, ns, "a-"+e.name, podSpec{rdma: 2}), node))
		createPod(t, ctx, pinned(makePod(t, ns, "b-"+e.name, podSpec{rdma: 1}), node))
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			node, a := "edit-"+e.name, "a-"+e.name
			orig := waitBound(t, ctx, ns, a)
			held := append(rdmaKeys(t, orig), rdmaKeys(t, waitBound(t, ctx, ns, "b-"+e.name))...)
			setAllocated(t, ctx, ns, a, e.edit(t, orig.Annotations[rdma.AnnotationDeviceAllocated]))
			createPod(t, ctx, pinned(makePod(t, ns, "c-"+e.name, podSpec{rdma: 1}), node))
			got := rdmaKeys(t, waitBound(t, ctx, ns, "c-"+e.name))
			for _, k := range got {
				if slices.Contains(held, k) {
					t.Errorf("pod c got %s, which pod a or b holds (%v)", k, held)
				}
			}
			ev := waitEvents(t, ctx, ns, a, reasonChanged, 1)
			if !strings.Contains(ev[0].Note, "still holds") {
				t.Errorf("event note %q does not say the pod still holds its devices", ev[0].Note)
			}
			if n := s.logCount(`reason="`+reasonChanged+`"`, ns+"/"+a); n != 1 {
				t.Errorf("%d log lines report the edit of %s, want 1", n, a)
			}
		})
	}
	t.Run("each change is reported once", func(t *testing.T) {
		a := "a-garbage"
		// An update that does not touch the annotations: no new report.
		patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, a, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		waitEvents(t, ctx, ns, a, reasonChanged, 1)
		v := "garbage again{"
		setAllocated(t, ctx, ns, a, &v)
		waitEvents(t, ctx, ns, a, reasonChanged, 2)
	})
	// One report per change: the nine edits and the second edit above.
	waitMetrics(t, ctx, port, "kplan_rdma_annotation_problems_total", `kplan_rdma_annotation_problems_total{reason="`+reasonChanged+`"} 10`)
}

// TestUnusableAnnotationBlocksItsNodeUntilFixed: pods bound without the plugin (as
// after an edit while no scheduler ran, or bound by hand with spec.nodeName).
//
//   - Pod a asks for 2 RDMA devices and carries a malformed annotation: what it holds
//     is unknown, so its node takes no RDMA pod. The plugin logs it and writes a
//     Warning event on a as soon as it sees it (before any pod tries the node); a
//     waiting pod's condition names a. Fixing a's annotation retries the waiting
//     pod at once (the delay is logged), and it binds to a VF a does not hold.
//   - Pods u1 and u2 ask for no RDMA devices: u1's malformed annotation is ignored
//     (with an event), u2's valid one naming a VF with a PCIe-level exclusive hint
//     is counted (with an event) without its exclusivity. A 3-VF pod binds beside
//     them on the same PCIe root, not on u2's VF.
func TestUnusableAnnotationBlocksItsNodeUntilFixed(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "unusable")
	nodes := createNodes(t, ctx,
		makeNode("unusable-1", shape{roots: 1, pfs: 1, vfs: 4}),
		makeNode("unusable-2", shape{roots: 1, pfs: 1, vfs: 4}),
	)
	bound := func(name, node string, spec podSpec, annotations map[string]string) *corev1.Pod {
		p := makePod(t, ns, name, spec)
		p.Spec.NodeName = node
		for k, v := range annotations {
			p.Annotations[k] = v
		}
		createPod(t, ctx, p)
		return p
	}
	bound("a", "unusable-1", podSpec{rdma: 2}, map[string]string{rdma.AnnotationDeviceAllocated: "garbage{"})
	inv2 := nodes["unusable-2"].inv
	one, err := rdma.Allocate(inv2, nil, rdma.Request{Kind: rdma.VFs, Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	u2value, err := rdma.EncodeAllocated("", one, rdma.CountModel)
	if err != nil {
		t.Fatal(err)
	}
	exclusive, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: {ExclusivePolicy: rdma.ExclusivePCIe}})
	if err != nil {
		t.Fatal(err)
	}
	bound("u1", "unusable-2", podSpec{}, map[string]string{rdma.AnnotationDeviceAllocated: `{"rdma":[{"minor":0,"busID":"not a PCI address"}]}`})
	bound("u2", "unusable-2", podSpec{}, map[string]string{rdma.AnnotationDeviceAllocated: u2value, rdma.AnnotationDeviceAllocateHint: string(exclusive)})

	s := startScheduler(t, nil)
	waitFor(t, ctx, 30*time.Second, "the plugin to log pod a's annotation", func(context.Context) (bool, error) {
		return s.logCount(`reason="`+reasonUnusable+`"`, ns+"/a") == 1, nil
	})
	waitEvents(t, ctx, ns, "a", reasonUnusable, 1)
	waitEvents(t, ctx, ns, "u1", reasonIgnored, 1)
	waitEvents(t, ctx, ns, "u2", reasonNotRequested, 1)

	t.Run("pods asking for none are not trusted", func(t *testing.T) {
		createPod(t, ctx, pinned(makePod(t, ns, "beside-u", podSpec{rdma: 3}), "unusable-2"))
		got := rdmaKeys(t, waitBound(t, ctx, ns, "beside-u"))
		for _, k := range got {
			if k == "vf "+one.NICs[0].VFs[0].BDF.String() {
				t.Errorf("beside-u got %s, which u2's annotation names", k)
			}
		}
	})

	t.Run("the node of an unusable annotation waits for its fix", func(t *testing.T) {
		createPod(t, ctx, pinned(makePod(t, ns, "c", podSpec{rdma: 1}), "unusable-1"))
		waitFor(t, ctx, time.Minute, "pod c unschedulable, naming pod a", func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "c", metav1.GetOptions{})
			if err != nil || p.Spec.NodeName != "" {
				return false, fmt.Errorf("pod c: %v, bound to %q", err, p.Spec.NodeName)
			}
			c := scheduledCondition(p)
			return c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "pod "+ns+"/a"), nil
		})
		two, err := rdma.Allocate(nodes["unusable-1"].inv, nil, rdma.Request{Kind: rdma.VFs, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		fixed, err := rdma.EncodeAllocated("", two, rdma.CountModel)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // c waits in the unschedulable pool, past its backoff
		start := time.Now()
		setAllocated(t, ctx, ns, "a", &fixed)
		got := waitBound(t, ctx, ns, "c")
		t.Logf("pod c bound %s after pod a's annotation was fixed", time.Since(start).Round(10*time.Millisecond))
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("pod c bound %s after the fix; the fix did not retry it", d)
		}
		a, err := cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range rdmaKeys(t, got) {
			if slices.Contains(rdmaKeys(t, a), k) {
				t.Errorf("pod c got %s, which pod a holds", k)
			}
		}
	})
}
