package rdmaplugin

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// snapshotPlugin is a plugin whose scheduler snapshot of node n1 is the NodeInfo of the
// pods given (the node has 4 VFs), as the scheduler's own view.
func snapshotPlugin(t *testing.T, pods ...*corev1.Pod) (*Plugin, fwk.NodeInfo) {
	t.Helper()
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4))
	for _, pod := range pods {
		p.onPod(pod)
	}
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	p.snapshot = func(string) fwk.NodeInfo { return ni }
	return p, ni
}

// A preemption dry run (a copy of the NodeInfo without a victim) and a node with a
// nominated pod (a copy with the pod added) are answered from the copy, and the node's
// cache entry stays the one of the scheduler's own view.
func TestWhatIfCopiesDoNotReplaceTheNodesEntry(t *testing.T) {
	ctx := context.Background()
	other := newCluster()
	other.setDevice(device(t, "n1", 1, 0, 1, 4))
	a, err := other.reserve("victim", "n1", nil, vfRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	victim := boundPod(t, "victim", "n1", a)
	p, ni := snapshotPlugin(t, victim)
	pod := rdmaPod(t, "pod", 2, 0)
	state := preFilter(t, p, pod)
	if s := p.Filter(ctx, state, pod, ni); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter with the victim = %v, want Unschedulable (3 of 4 VFs held)", s)
	}
	entry := p.state.cache["n1"]
	if entry == nil || entry.gen != ni.GetGeneration() {
		t.Fatal("the node's own view is not cached")
	}
	withoutVictim := ni.Snapshot()
	if err := withoutVictim.RemovePod(klog.Background(), victim); err != nil {
		t.Fatal(err)
	}
	if s := p.Filter(ctx, state, pod, withoutVictim); !s.IsSuccess() {
		t.Fatalf("Filter on the dry run's copy without the victim = %v, want success", s)
	}
	nominated := rdmaPod(t, "nominated", 1, 0)
	stateWith, niWith := withNominated(t, p, state, pod, nominated, ni)
	if s := p.Filter(ctx, stateWith, pod, niWith); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter on the copy with a nominated pod = %v, want Unschedulable", s)
	}
	if got := p.state.cache["n1"]; got != entry {
		t.Fatalf("the node's entry was replaced by a what-if copy's (generation %d, own view %d)", got.gen, ni.GetGeneration())
	}
	if s := p.Filter(ctx, state, pod, ni); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter on the own view after the copies = %v, want Unschedulable", s)
	}
}

// reservedOn always indexes exactly the reservations, whatever happens to the pods.
func TestReservationIndexFollowsReservations(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	c.setDevice(device(t, "n2", 1, 0, 1, 4))
	check := func(step string) {
		t.Helper()
		want := map[string]map[types.UID]rdma.Allocation{}
		for uid, r := range c.reserved {
			if want[r.node] == nil {
				want[r.node] = map[types.UID]rdma.Allocation{}
			}
			want[r.node][uid] = r.alloc
		}
		if diff := cmp.Diff(want, c.reservedOn); diff != "" {
			t.Fatalf("%s: reservedOn differs from the reservations (-want +got):\n%s", step, diff)
		}
	}
	a, err := c.reserve("a", "n1", nil, vfRequest(1))
	if err != nil {
		t.Fatal(err)
	}
	check("reserved a on n1")
	if _, err := c.reserve("b", "n2", nil, vfRequest(1)); err != nil {
		t.Fatal(err)
	}
	check("reserved b on n2")
	if _, err := c.reserve("b", "n1", nil, vfRequest(1)); err != nil {
		t.Fatal(err)
	}
	check("b retried on n1")
	c.setPod(boundPod(t, "a", "n1", a))
	check("a bound")
	c.unreserve("b")
	check("b unreserved")
	if _, err := c.reserve("c", "n2", nil, vfRequest(1)); err != nil {
		t.Fatal(err)
	}
	c.deletePod("c")
	check("c deleted while reserved")
	if len(c.reservedOn) != 0 {
		t.Fatalf("reservations left: %v", c.reservedOn)
	}
}

// A miss counts the reservations of the node's pods that the NodeInfo has, and no
// other node's.
func TestMissCountsOnlyTheViewsReservations(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	c.setDevice(device(t, "n2", 1, 0, 1, 4))
	for _, r := range []struct {
		uid, node string
	}{{"on-n1", "n1"}, {"gone", "n1"}, {"on-n2", "n2"}} {
		if _, err := c.reserve(types.UID(r.uid), r.node, nil, vfRequest(1)); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler's view of n1 has pod on-n1 (assumed) and a pod without devices;
	// pod gone was reserved there and is no longer in it.
	ni := framework.NewNodeInfo(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-n1", UID: "on-n1"}, Spec: corev1.PodSpec{NodeName: "n1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", UID: "plain"}, Spec: corev1.PodSpec{NodeName: "n1"}},
	)
	_, used, err := c.state("n1", ni)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(used.VFs()); got != 1 {
		t.Fatalf("%d VFs held on n1 as the scheduler sees it, want 1 (pod on-n1's)", got)
	}
	_, used, err = c.state("n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(used.VFs()); got != 2 {
		t.Fatalf("%d VFs held on n1 counting every reservation there, want 2", got)
	}
}

// A nominated pod's request is decoded once per resourceVersion and forgotten once
// the pod is bound or deleted.
func TestNominatedRequestDecodedOncePerVersion(t *testing.T) {
	ctx := context.Background()
	p, ni := snapshotPlugin(t)
	nominated := rdmaPod(t, "nominated", 3, 0)
	nominated.ResourceVersion = "1"
	pod := rdmaPod(t, "pod", 2, 0)
	filterWith := func(nom *corev1.Pod) *fwk.Status {
		t.Helper()
		state := preFilter(t, p, pod)
		niWith := ni.Snapshot()
		niWith.AddPodInfo(podInfo(t, nom))
		if s := p.AddPod(ctx, state, pod, podInfo(t, nom), niWith); !s.IsSuccess() {
			t.Fatal(s)
		}
		return p.Filter(ctx, state, pod, niWith)
	}
	if s := filterWith(nominated); s.Code() != fwk.Unschedulable {
		t.Fatalf("beside a nominated 3-VF pod: %v, want Unschedulable", s)
	}
	// The same resourceVersion is the same pod: its request is not decoded again
	// (this changed copy is what an API server would never serve).
	stale := nominated.DeepCopy()
	stale.Spec.Containers[0].Resources.Limits[rdma.ResourceRDMA] = resource.MustParse("1")
	stale.Spec.Containers[0].Resources.Requests[rdma.ResourceRDMA] = resource.MustParse("1")
	if s := filterWith(stale); s.Code() != fwk.Unschedulable {
		t.Fatalf("the same version decoded again: %v, want the cached 3-VF request", s)
	}
	// A new version is decoded.
	stale.ResourceVersion = "2"
	if s := filterWith(stale); !s.IsSuccess() {
		t.Fatalf("beside the nominated pod's new 1-VF version: %v, want success", s)
	}
	boundNow := stale.DeepCopy()
	boundNow.Spec.NodeName = "n1"
	p.onPod(boundNow)
	if _, ok := p.nominated.pods[nominated.UID]; ok {
		t.Fatal("a bound pod's request is still cached")
	}
	p.nominated.get(stale, p.model)
	p.onPodDelete(stale)
	if len(p.nominated.pods) != 0 {
		t.Fatalf("a deleted pod's request is still cached: %v", p.nominated.pods)
	}
}

// Interned keys are one string per encoding, up to maxKeys encodings; past that the
// encoding is still returned, as a new string.
func TestKeyInterner(t *testing.T) {
	var k keyInterner
	a, b := k.intern([]byte(`{"Count":2}`)), k.intern([]byte(`{"Count":2}`))
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("two interns of one encoding are not one string: %q %q", a, b)
	}
	for i := 0; len(k.keys) < maxKeys; i++ {
		k.intern([]byte(fmt.Sprintf(`{"Count":%d}`, 1000+i)))
	}
	x, y := k.intern([]byte(`{"Count":1}`)), k.intern([]byte(`{"Count":1}`))
	if x != `{"Count":1}` || y != x || len(k.keys) != maxKeys {
		t.Fatalf("past maxKeys: %q %q, %d keys kept", x, y, len(k.keys))
	}
}

// A node keeps at most maxResults answers; asked more requests, it still answers each
// right.
func TestNodeResultsBounded(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	for round := 0; round < 2; round++ {
		for n := 1; n <= maxResults+4; n++ {
			err := c.filter("n1", nil, fmt.Sprintf("vfs=%d", n), vfRequest(n))
			if fits := err == nil; fits != (n <= 4) {
				t.Fatalf("round %d: %d VFs on a 4-VF node: filter = %v", round, n, err)
			}
			if got := len(c.cache["n1"].results); got > maxResults {
				t.Fatalf("%d answers kept, more than %d", got, maxResults)
			}
		}
	}
}
