package rdmaplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/rdma"
)

func i32(v int) *int32 { x := int32(v); return &x }

// fataler is what the test helpers need of a *testing.T, *testing.B or *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// device builds a Device object: roots PCIe roots, each with gpus GPUs and pfs PFs of
// vfs VFs.
func device(t fataler, name string, roots, gpus, pfs, vfs int) *unstructured.Unstructured {
	t.Helper()
	var devs []rdma.DeviceInfo
	g, k := 0, 0
	for r := 0; r < roots; r++ {
		root := fmt.Sprintf("pci0000:%02x", 0x10*(r+1))
		for i := 0; i < gpus; i++ {
			devs = append(devs, rdma.DeviceInfo{UUID: fmt.Sprintf("GPU-%d", g), Minor: i32(g), Type: rdma.GPU, Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: fmt.Sprintf("0000:%02x:00.0", 0x80+g)}})
			g++
		}
		for i := 0; i < pfs; i++ {
			bus := 0x10 + 4*k
			bdf := fmt.Sprintf("0000:%02x:00.0", bus)
			d := rdma.DeviceInfo{UUID: bdf, Minor: i32(k), Type: rdma.RDMA, Health: true,
				Topology: &rdma.DeviceTopology{SocketID: int32(r), NodeID: int32(r), PCIEID: root, BusID: bdf}}
			grp := rdma.VirtualFunctionGroup{}
			for j := 0; j < vfs; j++ {
				grp.VFs = append(grp.VFs, rdma.VirtualFunction{Minor: int32(j), BusID: fmt.Sprintf("0000:%02x:%02x.%d", bus, 1+j/8, j%8)})
			}
			d.VFGroups = []rdma.VirtualFunctionGroup{grp}
			devs = append(devs, d)
			k++
		}
	}
	b, err := json.Marshal(devs)
	if err != nil {
		t.Fatal(err)
	}
	var list []any
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"devices": list},
	}}
}

// vfRequest asks for n VFs of any group.
func vfRequest(n int) rdma.Request {
	return rdma.Request{Kind: rdma.VFs, Count: n}
}

// boundPod is a pod bound to node holding a (its device-allocated annotation).
func boundPod(t fataler, uid, node string, a rdma.Allocation) *corev1.Pod {
	t.Helper()
	v, err := rdma.EncodeAllocated("", a, rdma.CountModel)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Annotations: map[string]string{rdma.AnnotationDeviceAllocated: v}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// The cached Filter answer follows every change of the node: reservations, bound and
// deleted pods, a new Device object.
func TestClusterFilterCacheFollowsChanges(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	req := vfRequest(2)
	check := func(step string, want error) {
		t.Helper()
		err := c.filter("n1", nil, "two-vfs", req)
		if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Fatalf("%s: filter = %v, want %v", step, err, want)
		}
	}
	check("idle node", nil)
	a, err := c.reserve("a", "n1", nil, req)
	if err != nil {
		t.Fatal(err)
	}
	check("after one reservation", nil)
	if _, err := c.reserve("b", "n1", nil, req); err != nil {
		t.Fatal(err)
	}
	check("after two reservations", rdma.ErrInsufficient)
	c.unreserve("b")
	check("after unreserve", nil)
	c.setPod(boundPod(t, "a", "n1", a))
	c.setPod(boundPod(t, "x", "n1", rdma.Allocation{Node: "n1", NICs: []rdma.NICAllocation{{Minor: 0, BDF: a.NICs[0].BDF, Whole: true}}}))
	check("after a pod bound with the whole PF", rdma.ErrInsufficient)
	c.deletePod("x")
	check("after that pod is deleted", nil)
	c.setDevice(device(t, "n1", 1, 0, 1, 2))
	check("after the Device shrinks to 2 VFs held by pod a", rdma.ErrInsufficient)
}

func TestClusterReservations(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	a, err := c.reserve("a", "n1", nil, vfRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.reserve("b", "n1", nil, vfRequest(2)); err != nil {
		t.Fatal(err)
	}
	t.Run("a third pod finds nothing free now", func(t *testing.T) {
		_, err := c.reserve("c", "n1", nil, vfRequest(1))
		if !errors.Is(err, rdma.ErrInsufficient) {
			t.Fatalf("err = %v, want ErrInsufficient", err)
		}
	})
	t.Run("unreserve frees the devices", func(t *testing.T) {
		c.unreserve("b")
		if _, err := c.reserve("c", "n1", nil, vfRequest(2)); err != nil {
			t.Fatal(err)
		}
		c.unreserve("c")
	})
	t.Run("a bound pod's annotation replaces its reservation, not adds to it", func(t *testing.T) {
		c.setPod(boundPod(t, "a", "n1", a))
		_, used, err := c.state("n1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(used.VFs()); got != 2 {
			t.Fatalf("%d VFs held, want 2 (pod a's)", got)
		}
		if _, err := c.reserve("d", "n1", nil, vfRequest(2)); err != nil {
			t.Fatalf("the 2 VFs pod a does not hold are not free: %v", err)
		}
	})
	t.Run("deleting the bound pod frees its devices", func(t *testing.T) {
		c.deletePod("a")
		_, used, _ := c.state("n1", nil)
		if got := len(used.VFs()); got != 2 {
			t.Fatalf("%d VFs held, want 2 (pod d's)", got)
		}
	})
	t.Run("a request larger than the node is unsatisfiable", func(t *testing.T) {
		_, err := c.reserve("e", "n1", nil, vfRequest(5))
		if !errors.Is(err, rdma.ErrUnsatisfiable) {
			t.Fatalf("err = %v, want ErrUnsatisfiable", err)
		}
	})
}

// A scheduler that restarts knows only the bound pods' annotations: it must never give
// out what they hold.
func TestClusterRebuiltFromAnnotations(t *testing.T) {
	first := newCluster()
	first.setDevice(device(t, "n1", 1, 0, 1, 4))
	a, err := first.reserve("a", "n1", nil, vfRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	restarted := newCluster()
	restarted.setPod(boundPod(t, "a", "n1", a)) // the pod informer may deliver pods first
	restarted.setDevice(device(t, "n1", 1, 0, 1, 4))
	b, err := restarted.reserve("b", "n1", nil, vfRequest(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range a.NICs[0].VFs {
		if b.NICs[0].VFs[0].BDF == held.BDF {
			t.Fatalf("VF %s given to pod b is held by pod a", held.BDF)
		}
	}
	if _, err := restarted.reserve("c", "n1", nil, vfRequest(1)); !errors.Is(err, rdma.ErrInsufficient) {
		t.Fatalf("err = %v, want ErrInsufficient: pods a and b hold all 4 VFs", err)
	}
}

// TestStatusFor: a status carries rdma's reason and message as they are, the reason
// first, with the code the error's sentinel implies.
func TestStatusFor(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 2))
	if _, err := c.reserve("a", "n1", nil, vfRequest(1)); err != nil {
		t.Fatal(err)
	}
	bad := device(t, "n2", 1, 0, 1, 2) // its PF's address is not a PCI address
	pf := bad.Object["spec"].(map[string]any)["devices"].([]any)[0].(map[string]any)
	pf["id"] = "0000:zz:00.0"
	delete(pf, "topology")
	c.setDevice(bad)
	c.setDevice(device(t, "n3", 1, 0, 1, 2))
	odd := rdmaPod(t, "odd", 1, 0) // asks for a VF, so its annotation must be usable
	odd.Spec.NodeName = "n3"
	odd.Annotations[rdma.AnnotationDeviceAllocated] = "{"
	c.setPod(odd)
	c.setDevice(device(t, "n4", 1, 0, 1, 2))
	n4 := "n4"
	c.setSlice((&resourceSliceBuilder{name: "n4-rdma", node: &n4, bdfs: []string{"0000:10:01.0"}}).build())
	for _, tc := range []struct {
		name    string
		node    string
		req     rdma.Request
		code    fwk.Code
		reason  kplan.Reason
		message string
	}{
		{"not enough free now is Unschedulable", "n1", vfRequest(2), fwk.Unschedulable, rdma.ReasonInsufficientDevices,
			"node n1: rdma: need 2 VFs, 1 free (PF 0000:10:00.0: 1 of 2 free)"},
		{"more than the node has is UnschedulableAndUnresolvable", "n1", vfRequest(3), fwk.UnschedulableAndUnresolvable, rdma.ReasonTooFewDevices,
			"node n1: rdma: need 3 VFs, node has 2 (PF 0000:10:00.0: 2 VFs)"},
		{"an invalid request is UnschedulableAndUnresolvable", "n1", rdma.Request{Count: -1}, fwk.UnschedulableAndUnresolvable, rdma.ReasonInvalidRequest,
			"node n1: rdma: request: count -1 is negative"},
		{"an invalid Device object is UnschedulableAndUnresolvable", "n2", vfRequest(1), fwk.UnschedulableAndUnresolvable, rdma.ReasonInvalidInventory,
			`node n2: devices[0].id: Invalid value: "0000:zz:00.0": no topology.busID, and "0000:zz:00.0" is not a PCI address (domain:bus:device.function like 0000:3b:00.0): bus is not hex`},
		{"a bound pod's unreadable annotation is Unschedulable", "n3", vfRequest(1), fwk.Unschedulable, rdma.ReasonInvalidAllocation,
			"node n3: what pod ns/odd holds is unknown (pod ns/odd: annotation scheduling.koordinator.sh/device-allocated: unexpected end of JSON input); no RDMA pod is placed on this node until that annotation is fixed or the pod is gone"},
		{"devices published twice are UnschedulableAndUnresolvable", "n4", vfRequest(1), fwk.UnschedulableAndUnresolvable, ReasonDevicesPublishedTwice,
			"node n4: 1 device is published both by Device n4 and by ResourceSlice n4-rdma of DRA driver rdma.kplan.dev (0000:10:01.0): two allocators would hand them out independently, so the node is used by neither RDMA nor DRA pods (args.draOverlap: Refuse)"},
		{"a missing Device object is UnschedulableAndUnresolvable", "n9", vfRequest(1), fwk.UnschedulableAndUnresolvable, rdma.ReasonInvalidInventory,
			"node n9 has no Device object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statusFor(c.filter(tc.node, nil, tc.name, tc.req))
			if s.Code() != tc.code || !slices.Equal(s.Reasons(), []string{string(tc.reason), tc.message}) {
				t.Fatalf("code %v, reasons %q\nwant %v, [%s %s]", s.Code(), s.Reasons(), tc.code, tc.reason, tc.message)
			}
		})
	}
}

// BenchmarkStateMemory reports the heap the plugin keeps per node (B/node): the
// inventory of the node shape (2 PCIe roots x 4 GPUs x 2 PFs x 8 VFs), four
// bound pods with joint 2 GPU + 2 VF allocations, and the cached Used.
func BenchmarkStateMemory(b *testing.B) {
	const nodes = 1000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := newCluster()
		for i := 0; i < nodes; i++ {
			name := fmt.Sprintf("n%04d", i)
			c.setDevice(device(b, name, 2, 4, 2, 8))
			for p := 0; p < 4; p++ {
				uid := fmt.Sprintf("%s-p%d", name, p)
				a, err := c.reserve(types.UID(uid), name, nil, rdma.Request{Kind: rdma.VFs, Count: 2, GPUs: 2, Joint: rdma.JointSamePCIe})
				if err != nil {
					b.Fatal(err)
				}
				c.setPod(boundPod(b, uid, name, a))
			}
			if _, _, err := c.state(name, nil); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "B/node")
		runtime.KeepAlive(c)
	}
}
