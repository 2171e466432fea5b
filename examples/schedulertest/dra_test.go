package schedulertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

// draDriver is the DRA driver name of the test's slices and classes.
const draDriver = "rdma.kplan.dev"

// publishDRA creates a DeviceClass per device kind and a ResourceSlice per node with
// rdma.DRADevices, deleted at the end of the test.
func publishDRA(t *testing.T, ctx context.Context, nodes map[string]*testNode) {
	t.Helper()
	for _, kind := range []string{"gpu", "pf", "vf"} {
		c := &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: "kplan-" + kind},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes["rdma.kplan.dev"].kind == %q`, draDriver, kind),
			}}}},
		}
		if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := c.Name
		t.Cleanup(func() { _ = cs.ResourceV1().DeviceClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	for name, tn := range nodes {
		s := &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-rdma"},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   draDriver,
				Pool:     resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
				NodeName: &name,
				Devices:  rdma.DRADevices(tn.inv),
			},
		}
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sn := s.Name
		t.Cleanup(func() { _ = cs.ResourceV1().ResourceSlices().Delete(context.Background(), sn, metav1.DeleteOptions{}) })
	}
}

// draCase is one request, as an rdma.Request and as the equivalent claim.
type draCase struct {
	name  string
	req   rdma.Request
	claim resourceapi.DeviceClaim
	fits  bool // whether both are expected to find an allocation
}

func exact(class string, count int64, cel ...string) *resourceapi.ExactDeviceRequest {
	r := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	for _, e := range cel {
		r.Selectors = append(r.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return r
}

func match(attr resourceapi.QualifiedName, requests ...string) []resourceapi.DeviceConstraint {
	a := resourceapi.FullyQualifiedName(attr)
	return []resourceapi.DeviceConstraint{{Requests: requests, MatchAttribute: &a}}
}

// createDRANodes creates the nodes (schedulable, Ready) without Device objects: only
// DRA publishes their devices (publishDRA). They are deleted at the end of the test.
func createDRANodes(t *testing.T, ctx context.Context, nodes ...rdma.Node) map[string]*testNode {
	t.Helper()
	out := map[string]*testNode{}
	for _, n := range nodes {
		inv, err := rdma.NewInventory(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n.Name] = &testNode{node: n, inv: inv}
		name := n.Name
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if err := createNodeObject(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// removeClaimsAtEnd deletes the namespace's pods and ResourceClaims when the test
// ends, clearing the claims' finalizers (no resourceclaim controller runs here):
// envtest never removes a namespace, and the scheduler counts every allocated
// claim, so a test run again (go test -count) would find its devices taken.
func removeClaimsAtEnd(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		claims, err := cs.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, c := range claims.Items {
				_, _ = cs.ResourceV1().ResourceClaims(ns).Patch(ctx, c.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
		_ = cs.ResourceV1().ResourceClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{})
	})
}

// TestDRAParity publishes the nodes' inventories as ResourceSlices (and no Device
// objects: the plugin refuses a node whose devices both publish) and lets the real
// scheduler's DRA plugin allocate the same requests as ResourceClaims, one pod at a
// time: for each, DRA and rdma.Allocate (given what earlier claims took on the node)
// both allocate or both refuse, and DRA's devices satisfy the request. Where the two
// pick different devices (DRA takes the first solution in slice order; rdma orders
// inside a group) the difference is logged.
func TestDRAParity(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "dra")
	removeClaimsAtEnd(t, ns)
	s := shape{roots: 2, gpus: 2, pfs: 1, vfs: 8, vfGroups: []map[string]string{{"rdma-type": "storage"}, {"rdma-type": "compute"}}}
	nodes := createDRANodes(t, ctx, makeNode("dra-1", s), makeNode("dra-2", s))
	publishDRA(t, ctx, nodes)
	startScheduler(t, nil)

	storage := `"rdma_type" in device.attributes["label.rdma.kplan.dev"] && device.attributes["label.rdma.kplan.dev"].rdma_type == "storage"`
	cases := []draCase{
		{name: "two-vfs", fits: true,
			req:   rdma.Request{Kind: rdma.VFs, Count: 2},
			claim: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: exact("kplan-vf", 2)}}}},
		{name: "three-storage-vfs-one-pf", fits: true,
			req:   rdma.Request{Kind: rdma.VFs, Count: 3, VFSelector: selector("rdma-type", "storage"), Scope: rdma.ScopeDevice},
			claim: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: exact("kplan-vf", 3, storage)}}, Constraints: match(rdma.DRAAttributePF, "nic")}},
		{name: "joint-two-gpus-one-vf-same-root", fits: true,
			req: rdma.Request{Kind: rdma.VFs, Count: 1, GPUs: 2, Scope: rdma.ScopePCIe, Joint: rdma.JointSamePCIe},
			claim: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: exact("kplan-gpu", 2)}, {Name: "nic", Exactly: exact("kplan-vf", 1)}},
				Constraints: match(rdma.DRAAttributePCIeRoot, "gpu", "nic")}},
		{name: "three-gpus-on-one-root-never-fit", fits: false,
			req: rdma.Request{Kind: rdma.VFs, Count: 1, GPUs: 3, Scope: rdma.ScopePCIe, Joint: rdma.JointSamePCIe},
			claim: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: exact("kplan-gpu", 3)}, {Name: "nic", Exactly: exact("kplan-vf", 1)}},
				Constraints: match(rdma.DRAAttributePCIeRoot, "gpu", "nic")}},
		{name: "five-storage-vfs-one-pf-never-fit", fits: false,
			req:   rdma.Request{Kind: rdma.VFs, Count: 5, VFSelector: selector("rdma-type", "storage"), Scope: rdma.ScopeDevice},
			claim: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: exact("kplan-vf", 5, storage)}}, Constraints: match(rdma.DRAAttributePF, "nic")}},
	}
	// What earlier claims hold, per node, in rdma's terms.
	held := map[string]*rdma.Used{}
	for name := range nodes {
		held[name] = new(rdma.Used)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: resourceapi.ResourceClaimSpec{Devices: c.claim}}
			if _, err := cs.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pod := makePod(t, ns, c.name, podSpec{})
			pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "devices", ResourceClaimName: &c.name}}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if !c.fits {
				waitFor(t, ctx, time.Minute, "pod "+c.name+" unschedulable", func(ctx context.Context) (bool, error) {
					p, err := cs.CoreV1().Pods(ns).Get(ctx, c.name, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					if p.Spec.NodeName != "" {
						return false, fmt.Errorf("DRA bound the pod to %s; rdma refuses it", p.Spec.NodeName)
					}
					cond := scheduledCondition(p)
					return cond != nil && cond.Status == corev1.ConditionFalse, nil
				})
				for name, tn := range nodes {
					if _, err := rdma.Allocate(tn.inv, held[name], c.req); err == nil {
						t.Errorf("DRA refuses the claim but rdma.Allocate fits it on %s", name)
					}
					if _, err := rdma.Allocate(tn.inv, nil, c.req); err == nil {
						t.Errorf("rdma.Allocate fits the claim on idle node %s; the case should never fit", name)
					}
				}
				return
			}
			var got *resourceapi.ResourceClaim
			waitFor(t, ctx, time.Minute, "claim "+c.name+" allocated and pod bound", func(ctx context.Context) (bool, error) {
				var err error
				got, err = cs.ResourceV1().ResourceClaims(ns).Get(ctx, c.name, metav1.GetOptions{})
				if err != nil || got.Status.Allocation == nil {
					return false, err
				}
				p, err := cs.CoreV1().Pods(ns).Get(ctx, c.name, metav1.GetOptions{})
				return err == nil && p.Spec.NodeName != "", err
			})
			p, err := cs.CoreV1().Pods(ns).Get(ctx, c.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node := p.Spec.NodeName
			tn := nodes[node]
			want, err := rdma.Allocate(tn.inv, held[node], c.req)
			if err != nil {
				t.Fatalf("DRA allocated on %s but rdma.Allocate refuses: %v", node, err)
			}
			var names []string
			for _, r := range got.Status.Allocation.Devices.Results {
				if r.Driver != draDriver || r.Pool != node {
					t.Fatalf("result %+v is not from node %s's pool", r, node)
				}
				names = append(names, r.Device)
			}
			slices.Sort(names)
			checkDRADevices(t, tn, c.req, got.Status.Allocation.Devices.Results)
			rdmaNames := draNames(want)
			if !slices.Equal(names, rdmaNames) {
				t.Logf("node %s: DRA took %v, rdma.Allocate %v", node, names, rdmaNames)
			}
			holdDRA(t, tn, held[node], names)
		})
	}
}

// draNames are the DRA device names of an rdma allocation, sorted.
func draNames(a rdma.Allocation) []string {
	dashed := strings.NewReplacer(":", "-", ".", "-")
	var out []string
	for _, g := range a.GPUs {
		out = append(out, fmt.Sprintf("gpu-%d", g.Minor))
	}
	for _, n := range a.NICs {
		if n.Whole {
			out = append(out, "pf-"+dashed.Replace(n.BDF.String()))
		}
		for _, v := range n.VFs {
			out = append(out, "vf-"+dashed.Replace(v.BDF.String()))
		}
	}
	slices.Sort(out)
	return out
}

// checkDRADevices checks DRA's results against the request: the count of each kind,
// the VF selector, and the scope.
func checkDRADevices(t *testing.T, tn *testNode, req rdma.Request, results []resourceapi.DeviceRequestAllocationResult) {
	t.Helper()
	devices := map[string]resourceapi.Device{}
	for _, d := range rdma.DRADevices(tn.inv) {
		devices[d.Name] = d
	}
	var vfs, gpus int
	roots, pfs := map[string]bool{}, map[string]bool{}
	for _, r := range results {
		d, ok := devices[r.Device]
		if !ok {
			t.Fatalf("DRA allocated unknown device %s", r.Device)
		}
		switch *d.Attributes[rdma.DRAAttributeKind].StringValue {
		case "vf":
			vfs++
			pfs[*d.Attributes[rdma.DRAAttributePF].StringValue] = true
			if req.VFSelector != nil {
				v := d.Attributes[rdma.DRALabelDomain+"/rdma_type"].StringValue
				if v == nil || *v != req.VFSelector.MatchLabels["rdma-type"] {
					t.Errorf("DRA gave VF %s outside the selector", r.Device)
				}
			}
		case "gpu":
			gpus++
		}
		roots[*d.Attributes[rdma.DRAAttributePCIeRoot].StringValue] = true
	}
	if vfs != req.Count || gpus != req.GPUs {
		t.Errorf("DRA gave %d VFs and %d GPUs, want %d and %d", vfs, gpus, req.Count, req.GPUs)
	}
	if req.Scope == rdma.ScopePCIe && len(roots) != 1 {
		t.Errorf("DRA's devices span PCIe roots %v", roots)
	}
	if req.Scope == rdma.ScopeDevice && len(pfs) != 1 {
		t.Errorf("DRA's VFs span PFs %v", pfs)
	}
}

// holdDRA records DRA-allocated devices (by name) in used.
func holdDRA(t *testing.T, tn *testNode, used *rdma.Used, names []string) {
	t.Helper()
	devices := map[string]resourceapi.Device{}
	for _, d := range rdma.DRADevices(tn.inv) {
		devices[d.Name] = d
	}
	for _, n := range names {
		d := devices[n]
		switch *d.Attributes[rdma.DRAAttributeKind].StringValue {
		case "gpu":
			used.HoldGPU(int32(*d.Attributes[rdma.DRAAttributeMinor].IntValue))
		case "vf", "pf":
			b, err := rdma.ParseBDF(*d.Attributes[rdma.DRAAttributePCIBusID].StringValue)
			if err != nil {
				t.Fatal(err)
			}
			if *d.Attributes[rdma.DRAAttributeKind].StringValue == "vf" {
				used.HoldVF(b)
			} else {
				used.HoldPF(b)
			}
		}
	}
}

// TestDRAAndDevicesOnOneNode publishes a node's devices both ways: a Device object
// (for the plugin) and a ResourceSlice (for DRA). Two allocators would hand out the
// same VF, so by default the plugin refuses the node to both kinds of pod, with a
// reason naming the slice and the devices: a pod asking for an RDMA device and a pod
// with a claim for a VF both stay pending (preemption is not tried), and the claim
// stays unallocated. With draOverlap: Ignore both bind (and may get one VF twice: the
// operator chose one accounting by hand).
func TestDRAAndDevicesOnOneNode(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "dra-overlap")
	removeClaimsAtEnd(t, ns)
	nodes := createNodes(t, ctx, makeNode("overlap-1", shape{roots: 1, gpus: 1, pfs: 1, vfs: 4}))
	publishDRA(t, ctx, nodes)
	first := startScheduler(t, nil)

	createPod(t, ctx, pinned(makePod(t, ns, "annotated", podSpec{rdma: 1}), "overlap-1"))
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "vf", Namespace: ns}, Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "nic", Exactly: exact("kplan-vf", 1)}}}}}
	if _, err := cs.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claimed := pinned(makePod(t, ns, "claimed", podSpec{}), "overlap-1")
	claimed.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "devices", ResourceClaimName: &claim.Name}}
	createPod(t, ctx, claimed)
	for _, name := range []string{"annotated", "claimed"} {
		waitFor(t, ctx, time.Minute, "pod "+name+" refused for the devices published twice", func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName != "" {
				return false, fmt.Errorf("pod %s: %v, bound to %q", name, err, p.Spec.NodeName)
			}
			c := scheduledCondition(p)
			return c != nil && c.Status == corev1.ConditionFalse &&
				strings.Contains(c.Message, "published both by Device overlap-1 and by ResourceSlice overlap-1-rdma") &&
				strings.Contains(c.Message, "Preemption is not helpful"), nil
		})
	}
	if c, err := cs.ResourceV1().ResourceClaims(ns).Get(ctx, "vf", metav1.GetOptions{}); err != nil || c.Status.Allocation != nil {
		t.Fatalf("claim vf: %v, allocated %+v while the node is refused", err, c.Status.Allocation)
	}

	first.stop()
	startScheduler(t, func(cfg map[string]any) {
		profile := cfg["profiles"].([]any)[0].(map[string]any)
		args := profile["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
		args["draOverlap"] = "Ignore"
	})
	waitBound(t, ctx, ns, "annotated")
	waitFor(t, ctx, time.Minute, "pod claimed bound", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "claimed", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
}
