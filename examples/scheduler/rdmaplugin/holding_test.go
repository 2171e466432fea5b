package rdmaplugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/rdma"
)

// trustedPod is rdmaPod (asking for vfs VFs and gpus GPUs) bound to node with the
// device-allocated annotation value.
func trustedPod(t *testing.T, name, node string, vfs, gpus int, value string) *corev1.Pod {
	p := rdmaPod(t, name, vfs, gpus)
	p.Spec.NodeName = node
	p.Annotations[rdma.AnnotationDeviceAllocated] = value
	return p
}

// encode is the annotation value the plugin writes for a.
func encode(t fataler, a rdma.Allocation) string {
	t.Helper()
	v, err := rdma.EncodeAllocated("", a, rdma.CountModel)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// edit decodes value, lets f change it and encodes it again.
func edit(t fataler, value string, f func(a *rdma.Allocated)) string {
	t.Helper()
	a, err := rdma.DecodeAllocated(value)
	if err != nil {
		t.Fatal(err)
	}
	f(&a)
	v, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func devicesOf(t *testing.T, c *cluster, node string) nodeDevices {
	t.Helper()
	d, ok := c.devices[node]
	if !ok || d.err != nil {
		t.Fatalf("node %s: no usable Device object (%v)", node, d.err)
	}
	return d
}

// assess accepts what the plugin writes for a trusted pod and refuses annotations
// that do not parse, name devices the node does not have, or do not match the pod's
// request, each with a message naming the pod and what is wrong.
func TestAssessTrustedPods(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 2, 1, 4)) // 2 GPUs, 1 PF with 4 VFs
	d := devicesOf(t, c, "n1")
	two, err := rdma.Allocate(d.inv, nil, vfRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	good := encode(t, two)
	joint, err := rdma.Allocate(d.inv, nil, rdma.Request{Kind: rdma.VFs, Count: 1, GPUs: 2, Joint: rdma.JointSamePCIe, NICPerGPURoot: true})
	if err != nil {
		t.Fatal(err)
	}
	jointValue := encode(t, joint)
	for _, tc := range []struct {
		name      string
		vfs, gpus int
		value     string
		want      string // "" when the annotation is accepted
	}{
		{name: "what the plugin writes", vfs: 2, value: good},
		{name: "a joint allocation the plugin writes", vfs: 1, gpus: 2, value: jointValue},
		{name: "malformed", vfs: 2, value: "garbage{", want: "invalid character"},
		{name: "unknown PF", vfs: 2, value: `{"rdma":[{"minor":0,"busID":"0000:99:00.0"}]}`, want: "PF 0000:99:00.0 is not on node n1"},
		{name: "VF not on the PF", vfs: 2, value: edit(t, good, func(a *rdma.Allocated) { a.RDMA[0].Extension.VirtualFunctions[1].BusID = "0000:10:07.7" }), want: "VF 0000:10:07.7 is not on PF"},
		{name: "empty", vfs: 2, value: "", want: "holds no RDMA device, but the pod asks for 2"},
		{name: "empty object", vfs: 2, value: "{}", want: "holds no RDMA device"},
		{name: "empty rdma list", vfs: 2, value: `{"rdma":[]}`, want: "holds no RDMA device"},
		{name: "mismatched minor", vfs: 2, value: edit(t, good, func(a *rdma.Allocated) { a.RDMA[0].Minor = 7 }), want: "rdma[0].minor: 7, but PF 0000:10:00.0 has minor 0"},
		{name: "VF listed twice", vfs: 2, value: edit(t, good, func(a *rdma.Allocated) {
			vfs := a.RDMA[0].Extension.VirtualFunctions
			vfs[1] = vfs[0]
		}), want: "VF 0000:10:01.0 is listed twice"},
		{name: "PF listed twice", vfs: 2, value: edit(t, good, func(a *rdma.Allocated) { a.RDMA = append(a.RDMA, a.RDMA[0]) }), want: "PF 0000:10:00.0 is listed twice"},
		{name: "fewer devices than asked", vfs: 3, value: good, want: "holds 2 RDMA devices, but the pod asks for 3"},
		{name: "joint without its GPUs", vfs: 1, gpus: 2, value: encode(t, rdma.Allocation{Node: "n1", NICs: joint.NICs}), want: "holds 0 GPUs, but the pod asks for 2"},
		{name: "joint with a GPU the node does not have", vfs: 1, gpus: 2, value: edit(t, jointValue, func(a *rdma.Allocated) {
			a.Other[rdma.GPU] = json.RawMessage(`[{"minor":0},{"minor":9}]`)
		}), want: "GPU 9 is not on node n1"},
		{name: "joint with a GPU listed twice", vfs: 1, gpus: 2, value: edit(t, jointValue, func(a *rdma.Allocated) {
			a.Other[rdma.GPU] = json.RawMessage(`[{"minor":1},{"minor":1}]`)
		}), want: "GPU 1 is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := trustedPod(t, "a", "n1", tc.vfs, tc.gpus, tc.value)
			a, trusted, err := assess(d, pod, rdma.CountModel)
			if !trusted {
				t.Fatal("a pod asking for RDMA devices is not trusted")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("assess = %v, want the annotation accepted", err)
			case tc.want == "":
				if a.Units() == 0 {
					t.Fatal("accepted annotation holds nothing")
				}
			case err == nil:
				t.Fatalf("assess accepted the annotation, want an error containing %q", tc.want)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pod ns/a"):
				t.Fatalf("assess = %q, want it to name pod ns/a and contain %q", err, tc.want)
			}
		})
	}
}

// A pod asking for no RDMA devices was never given any by the plugin: an annotation
// naming devices of the node is counted (they may be in use), without its allocate
// hint's exclusivity; one that cannot be used is an error for that pod only.
func TestAssessPodsAskingForNone(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	d := devicesOf(t, c, "n1")
	one, err := rdma.Allocate(d.inv, nil, vfRequest(1))
	if err != nil {
		t.Fatal(err)
	}
	exclusive, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: {ExclusivePolicy: rdma.ExclusivePCIe}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		wantVFs     int
		wantErr     bool
	}{
		{"valid, with a PCIe-level exclusive hint", map[string]string{rdma.AnnotationDeviceAllocated: encode(t, one), rdma.AnnotationDeviceAllocateHint: string(exclusive)}, 1, false},
		{"valid, with a malformed hint", map[string]string{rdma.AnnotationDeviceAllocated: encode(t, one), rdma.AnnotationDeviceAllocateHint: "garbage{"}, 1, false},
		{"malformed", map[string]string{rdma.AnnotationDeviceAllocated: "garbage{"}, 0, true},
		{"a GPU list only", map[string]string{rdma.AnnotationDeviceAllocated: `{"gpu":[{"minor":0}]}`}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := boundPod(t, "u", "n1", rdma.Allocation{})
			pod.Annotations = maps.Clone(tc.annotations)
			a, trusted, err := assess(d, pod, rdma.CountModel)
			if trusted {
				t.Fatal("a pod asking for no RDMA devices is trusted")
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("assess = %v, want error %v", err, tc.wantErr)
			}
			vfs := 0
			for _, n := range a.NICs {
				vfs += len(n.VFs)
			}
			if vfs != tc.wantVFs || len(a.ExclusivePFs)+len(a.ExclusiveRoots) > 0 {
				t.Fatalf("counted %d VFs, exclusive %v %v; want %d VFs and no exclusivity", vfs, a.ExclusivePFs, a.ExclusiveRoots, tc.wantVFs)
			}
		})
	}
}

// noticeReasons lists the notices' reasons.
func noticeReasons(ns []notice) []kplan.Reason {
	var out []kplan.Reason
	for _, n := range ns {
		if n.reason != "" {
			out = append(out, n.reason)
		}
	}
	return out
}

func wantNotices(t *testing.T, step string, got []notice, want ...kplan.Reason) {
	t.Helper()
	if g := noticeReasons(got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("%s: notices %v, want %v", step, g, want)
	}
}

// heldVFs is how many VFs the node's pods hold.
func heldVFs(t *testing.T, c *cluster, node string) int {
	t.Helper()
	_, used, err := c.state(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(used.VFs())
}

// Once the plugin recorded what a bound pod holds, edits of its annotations (or
// their removal) are reported once each and do not change what it holds; a pod
// deleted releases it.
func TestEditsAfterBindingKeepWhatThePodHolds(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	pod := rdmaPod(t, "a", 2, 0)
	a, err := c.reserve(pod.UID, "n1", nil, vfRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	good := encode(t, a)
	bound := trustedPod(t, "a", "n1", 2, 0, good)
	bound.ResourceVersion = "10"
	wantNotices(t, "bound with its annotation", c.setPod(bound))
	rv := 10
	set := func(value *string) []notice {
		p := bound.DeepCopy()
		rv++
		p.ResourceVersion = fmt.Sprint(rv)
		if value == nil {
			delete(p.Annotations, rdma.AnnotationDeviceAllocated)
		} else {
			p.Annotations[rdma.AnnotationDeviceAllocated] = *value
		}
		return c.setPod(p)
	}
	str := func(s string) *string { return &s }
	for _, e := range []struct {
		name  string
		value *string
	}{
		{"malformed", str("garbage{")},
		{"empty", str("")},
		{"empty object", str("{}")},
		{"empty rdma list", str(`{"rdma":[]}`)},
		{"mismatched minor", str(edit(t, good, func(x *rdma.Allocated) { x.RDMA[0].Minor = 3 }))},
		{"removed", nil},
	} {
		t.Run(e.name, func(t *testing.T) {
			wantNotices(t, "the edit", set(e.value), ReasonAllocationChanged)
			wantNotices(t, "the same value again", set(e.value))
			if n := heldVFs(t, c, "n1"); n != 2 {
				t.Fatalf("%d VFs held after the edit, want pod a's 2", n)
			}
		})
	}
	wantNotices(t, "back to the original", set(&good))
	wantNotices(t, "malformed once more: a new change", set(str("garbage{")), ReasonAllocationChanged)
	t.Run("an older object is ignored", func(t *testing.T) {
		old := bound.DeepCopy()
		old.ResourceVersion = "5"
		old.Annotations[rdma.AnnotationDeviceAllocated] = "older{"
		wantNotices(t, "an older object", c.setPod(old))
	})
	c.deletePod(pod.UID)
	if n := heldVFs(t, c, "n1"); n != 0 {
		t.Fatalf("%d VFs held after the pod was deleted, want 0", n)
	}
}

// A trusted pod whose annotation cannot be used and was never recorded (bound
// without the plugin, or edited while it did not run) makes its node's holdings
// unknown: Filter refuses the node naming the pod (Unschedulable: preempting that
// pod helps), it is reported once per value, and fixing the annotation frees the
// node. A pod asking for no devices never blocks the node.
func TestUnusableAnnotationBlocksTheNode(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	bad := trustedPod(t, "a", "n1", 2, 0, "garbage{")
	// The pod informer may deliver the pod before the Device object.
	early := newCluster()
	wantNotices(t, "before the Device object", early.setPod(bad))
	wantNotices(t, "the Device object arrives", early.setDevice(device(t, "n1", 1, 0, 1, 4)), ReasonAllocationUnusable)

	wantNotices(t, "first seen", c.setPod(bad), ReasonAllocationUnusable)
	err := c.filter("n1", nil, "one", vfRequest(1))
	if err == nil || !strings.Contains(err.Error(), "pod ns/a") || !strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("filter = %v, want the node refused naming pod ns/a and its problem", err)
	}
	if s := statusFor(err); s.Code() != fwk.Unschedulable {
		t.Fatalf("status %v, want Unschedulable (preempting the pod helps)", s)
	}
	again := bad.DeepCopy()
	again.ResourceVersion = "2"
	wantNotices(t, "an update with the same annotation", c.setPod(again))
	ignored := boundPod(t, "u", "n1", rdma.Allocation{})
	ignored.Annotations[rdma.AnnotationDeviceAllocated] = "garbage{"
	wantNotices(t, "a pod asking for none", c.setPod(ignored), ReasonAllocationIgnored)

	a, err := rdma.Allocate(devicesOf(t, c, "n1").inv, nil, vfRequest(2))
	if err != nil {
		t.Fatal(err)
	}
	fixed := bad.DeepCopy()
	fixed.ResourceVersion = "3"
	fixed.Annotations[rdma.AnnotationDeviceAllocated] = encode(t, a)
	wantNotices(t, "fixed", c.setPod(fixed))
	if err := c.filter("n1", nil, "one", vfRequest(1)); err != nil {
		t.Fatalf("filter after the fix = %v", err)
	}
	if n := heldVFs(t, c, "n1"); n != 2 {
		t.Fatalf("%d VFs held after the fix, want pod a's 2", n)
	}
}

// The annotation the plugin writes for any request it allocates is accepted, and
// each valid-but-wrong edit of it (empty, no RDMA list, a PF's minor changed, a VF
// or PF listed twice) is refused.
func TestAssessPropertyOwnAnnotationsPassEditsFail(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		roots := rapid.IntRange(1, 2).Draw(rt, "roots")
		gpus := rapid.IntRange(0, 2).Draw(rt, "gpus")
		pfs := rapid.IntRange(1, 2).Draw(rt, "pfs")
		vfs := rapid.SampledFrom([]int{0, 2, 4}).Draw(rt, "vfs")
		c := newCluster()
		model := rapid.SampledFrom([]rdma.CapacityModel{rdma.CountModel, rdma.PercentModel}).Draw(rt, "model")
		c.model = model
		c.setDevice(device(rt, "n1", roots, gpus, pfs, vfs))
		d, ok := c.devices["n1"]
		if !ok || d.err != nil {
			rt.Fatalf("device: %v", d.err)
		}
		pod := drawPod(rt, roots*gpus)
		req, err := rdma.RequestFromPod(pod, model)
		if err != nil || req.IsZero() {
			rt.Skip("no RDMA request")
		}
		a, err := rdma.Allocate(d.inv, nil, req)
		if err != nil {
			rt.Skip("does not fit")
		}
		value, err := rdma.EncodeAllocated("", a, model)
		if err != nil {
			rt.Fatal(err)
		}
		pod.Spec.NodeName = "n1"
		pod.Annotations[rdma.AnnotationDeviceAllocated] = value
		got, trusted, err := assess(d, pod, model)
		if !trusted || err != nil {
			rt.Fatalf("the plugin's own annotation %s for %+v: trusted %v, %v", value, req, trusted, err)
		}
		if got.Units() != a.Units() || len(got.GPUs) != len(a.GPUs) {
			rt.Fatalf("assess counts %d units and %d GPUs, the allocation %d and %d", got.Units(), len(got.GPUs), a.Units(), len(a.GPUs))
		}
		edits := map[string]func(x *rdma.Allocated){
			"no rdma list": func(x *rdma.Allocated) { x.RDMA = nil },
			"minor":        func(x *rdma.Allocated) { x.RDMA[0].Minor += 100 },
			"PF twice":     func(x *rdma.Allocated) { x.RDMA = append(x.RDMA, x.RDMA[0]) },
		}
		if e := a.NICs[0]; len(e.VFs) > 1 {
			edits["VF twice"] = func(x *rdma.Allocated) {
				v := x.RDMA[0].Extension.VirtualFunctions
				v[1] = v[0]
			}
		}
		names := []string{"empty", "empty object"}
		for n := range edits {
			names = append(names, n)
		}
		slices.Sort(names)
		name := rapid.SampledFrom(names).Draw(rt, "edit")
		var edited string
		switch name {
		case "empty":
		case "empty object":
			edited = "{}"
		default:
			edited = edit(rt, value, edits[name])
		}
		pod.Annotations[rdma.AnnotationDeviceAllocated] = edited
		if _, _, err := assess(d, pod, model); err == nil {
			rt.Fatalf("edit %q of %s accepted: %s", name, value, edited)
		}
	})
}

// drawPod draws a pod asking for RDMA devices: a quantity, VFs or not, a topology
// scope, all matching devices, or GPUs jointly (at most maxGPUs).
func drawPod(rt *rapid.T, maxGPUs int) *corev1.Pod {
	n := rapid.SampledFrom([]int64{1, 2, 3, 100, 200}).Draw(rt, "quantity")
	res := corev1.ResourceList{rdma.ResourceRDMA: *resource.NewQuantity(n, resource.DecimalSI)}
	hint := &rdma.DeviceHint{}
	if rapid.Bool().Draw(rt, "vfSelector") {
		hint.VFSelector = &metav1.LabelSelector{}
	}
	hint.RequiredTopologyScope = rapid.SampledFrom([]rdma.Scope{"", rdma.ScopePCIe, rdma.ScopeDevice}).Draw(rt, "scope")
	if rapid.IntRange(0, 5).Draw(rt, "all") == 0 {
		hint.AllocateStrategy = rdma.ApplyForAll
	}
	ann := map[string]string{}
	h, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: hint})
	if err != nil {
		rt.Fatal(err)
	}
	ann[rdma.AnnotationDeviceAllocateHint] = string(h)
	if g := rapid.IntRange(0, maxGPUs).Draw(rt, "gpus"); g > 0 {
		res[rdma.ResourceNvidiaGPU] = *resource.NewQuantity(int64(g), resource.DecimalSI)
		scope := rapid.SampledFrom([]rdma.Joint{rdma.JointSamePCIe, ""}).Draw(rt, "joint")
		j, err := json.Marshal(rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: scope})
		if err != nil {
			rt.Fatal(err)
		}
		ann[rdma.AnnotationDeviceJointAllocate] = string(j)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("p"), Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

// Device objects' problems are reported once per change: VFs left out, an object
// that cannot be used, and (metrics only) the problems gone.
func TestDeviceNotices(t *testing.T) {
	c := newCluster()
	withBadVFs := func(version string, bad ...string) []notice {
		obj := device(t, "n1", 1, 0, 1, 2)
		devs := obj.Object["spec"].(map[string]any)["devices"].([]any)
		vfs := devs[0].(map[string]any)["vfGroups"].([]any)[0].(map[string]any)
		for _, b := range bad {
			vfs["vfs"] = append(vfs["vfs"].([]any), map[string]any{"minor": int64(9), "busID": b})
		}
		obj.SetResourceVersion(version)
		return c.setDevice(obj)
	}
	got := withBadVFs("1", "0000:10:00.8", "0000:10:00.9")
	wantNotices(t, "two VFs left out", got, ReasonDeviceVFsSkipped)
	if d := got[0].device; d == nil || d.skipped != 2 || d.invalid {
		t.Fatalf("device counts %+v, want 2 skipped", got[0].device)
	}
	if !strings.Contains(got[0].message, "2 VFs left out") {
		t.Fatalf("message %q", got[0].message)
	}
	wantNotices(t, "the same problems in a new version", withBadVFs("2", "0000:10:00.8", "0000:10:00.9"))
	wantNotices(t, "the same version again", withBadVFs("2", "0000:10:00.8"))
	wantNotices(t, "an older version", withBadVFs("1", "0000:10:00.8"))
	wantNotices(t, "another VF left out", withBadVFs("3", "0000:10:00.8"), ReasonDeviceVFsSkipped)
	invalid := device(t, "n1", 1, 0, 1, 2)
	invalid.Object["spec"] = map[string]any{"devices": "not a list"}
	invalid.SetResourceVersion("4")
	got = c.setDevice(invalid)
	wantNotices(t, "an object that cannot be used", got, ReasonDeviceInvalid)
	if _, _, err := c.state("n1", nil); statusFor(err).Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("state on an invalid Device object = %v, want an unresolvable error", err)
	}
	fixed := device(t, "n1", 1, 0, 1, 2)
	fixed.SetResourceVersion("5")
	got = c.setDevice(fixed)
	if len(got) != 1 || got[0].reason != "" || got[0].device == nil || got[0].device.invalid || got[0].device.skipped != 0 {
		t.Fatalf("fixed: notices %+v, want one metrics-only notice", got)
	}
}

// A node whose Device object and a ResourceSlice publish the same PCI addresses is
// refused (UnschedulableAndUnresolvable, naming the slice and devices) to RDMA pods
// and pods with claims alike, until the slice stops publishing them.
func TestDRAOverlap(t *testing.T) {
	c := newCluster()
	c.setDevice(device(t, "n1", 1, 0, 1, 4))
	node := "n1"
	slice := func(version string, bdfs ...string) *resourceSliceBuilder {
		return &resourceSliceBuilder{name: "n1-rdma", node: &node, version: version, bdfs: bdfs}
	}
	check := func(step string, want string) {
		t.Helper()
		for what, err := range map[string]error{"draConflict": c.draConflict("n1"), "filter": c.filter("n1", nil, "one", vfRequest(1))} {
			switch {
			case want == "" && err != nil:
				t.Fatalf("%s: %s = %v, want nil", step, what, err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want) || statusFor(err).Code() != fwk.UnschedulableAndUnresolvable):
				t.Fatalf("%s: %s = %v, want an unresolvable error containing %q", step, what, err, want)
			}
		}
	}
	check("no slice", "")
	c.setSlice(slice("1", "0000:20:00.0").build())
	check("a slice of other devices", "")
	c.setSlice(slice("2", "0000:20:00.0", "0000:10:01.1", "0000:10:00.0").build())
	check("a slice publishing a PF and a VF of the Device object", "2 devices are published both by Device n1 and by ResourceSlice n1-rdma of DRA driver rdma.kplan.dev (0000:10:00.0, 0000:10:01.1)")
	c.setSlice(slice("1", "0000:20:00.0").build())
	check("an older version of the slice is ignored", "published both")
	c.deleteSlice("n1-rdma")
	check("the slice deleted", "")
	other := "n2"
	s := slice("3", "0000:10:00.0").build()
	s.Spec.NodeName = &other
	c.setSlice(s)
	check("a slice of another node", "")
}

// resourceSliceBuilder builds a ResourceSlice of driver rdma.kplan.dev whose devices
// carry the given PCI addresses.
type resourceSliceBuilder struct {
	name, version string
	node          *string
	bdfs          []string
}

func (b *resourceSliceBuilder) build() *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, ResourceVersion: b.version},
		Spec:       resourcev1.ResourceSliceSpec{Driver: "rdma.kplan.dev", NodeName: b.node},
	}
	for i, bdf := range b.bdfs {
		v := bdf
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{rdma.DRAAttributePCIBusID: {StringValue: &v}}})
	}
	// A device without an address is not matched.
	s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "no-address"})
	return s
}

// Event notes are cut to the Events API's limit on a rune boundary.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "abc", 10, "abc"},
		{"exactly n", "abcdef", 6, "abcdef"},
		{"cut", "abcdefghij", 6, "abc…"},
		{"cut before a multibyte rune", "ab€€€", 7, "ab…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := truncate(tc.in, tc.n)
			if got != tc.want || len(got) > tc.n {
				t.Fatalf("truncate(%q, %d) = %q (%d bytes), want %q", tc.in, tc.n, got, len(got), tc.want)
			}
		})
	}
}
