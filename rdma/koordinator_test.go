package rdma

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// koordCase is one of koordinator's own allocation test cases, as data
// (testdata/koordinator/cases.json).
type koordCase struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Device string `json:"device"`
	Pod    struct {
		HostNetwork bool              `json:"hostNetwork"`
		Requests    map[string]string `json:"requests"`
		Annotations map[string]string `json:"annotations"`
	} `json:"pod"`
	Assigned string      `json:"assigned"` // another pod's device-allocated annotation
	Want     *koordWant  `json:"want"`
	WantErr  bool        `json:"wantErr"`
	Kplan    *koordKplan `json:"kplan"` // where kplan deliberately differs
}

type koordWant struct {
	GPUs []int32         `json:"gpus"`
	RDMA []koordRDMAPick `json:"rdma"`
}

type koordRDMAPick struct {
	Minor int32    `json:"minor"`
	VFs   []string `json:"vfs"`
}

type koordKplan struct {
	Why            string     `json:"why"`
	Want           *koordWant `json:"want"`
	WantErr        string     `json:"wantErr"`        // substring of Allocate's error
	InventoryError string     `json:"inventoryError"` // substring of NewInventory's error
	Skip           bool       `json:"skip"`           // koordinator feature kplan does not have
}

func loadKoordCases(t *testing.T) []koordCase {
	t.Helper()
	b, err := os.ReadFile("testdata/koordinator/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []koordCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	return file.Cases
}

func koordInventory(t *testing.T, device string) (*Inventory, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/koordinator", device))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	n, err := NodeFromDevice(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return NewInventory(n)
}

func koordPod(t *testing.T, name string, requests, annotations map[string]string) *corev1.Pod {
	t.Helper()
	rl := corev1.ResourceList{}
	for k, v := range requests {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			t.Fatal(err)
		}
		rl[corev1.ResourceName(k)] = q
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: rl}}}},
	}
}

// picks renders an allocation as koordinator's tests state it: GPU minors, and RDMA PF
// minors with their VF addresses.
func picks(a Allocation) koordWant {
	w := koordWant{GPUs: []int32{}, RDMA: []koordRDMAPick{}}
	for _, g := range a.GPUs {
		w.GPUs = append(w.GPUs, g.Minor)
	}
	for _, n := range a.NICs {
		p := koordRDMAPick{Minor: n.Minor, VFs: []string{}}
		for _, v := range n.VFs {
			p.VFs = append(p.VFs, v.BDF.String())
		}
		w.RDMA = append(w.RDMA, p)
	}
	slices.SortFunc(w.RDMA, func(x, y koordRDMAPick) int { return int(x.Minor) - int(y.Minor) })
	return w
}

func (w koordWant) String() string {
	if w.GPUs == nil {
		w.GPUs = []int32{}
	}
	for i := range w.RDMA {
		if w.RDMA[i].VFs == nil {
			w.RDMA[i].VFs = []string{}
		}
	}
	if w.RDMA == nil {
		w.RDMA = []koordRDMAPick{}
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// TestKoordinatorJointAllocationCases runs koordinator's own allocator test cases
// through RequestFromPod (percent model, as koordinator counts) and Allocate, and
// expects koordinator's devices, except where the data records why kplan differs.
func TestKoordinatorJointAllocationCases(t *testing.T) {
	cases := loadKoordCases(t)
	if len(cases) < 25 {
		t.Fatalf("only %d cases", len(cases))
	}
	same, differ := 0, 0
	for _, c := range cases {
		t.Run(c.Source[strings.LastIndex(c.Source, " ")+1:]+"/"+c.Name, func(t *testing.T) {
			k := c.Kplan
			if k != nil && k.Why == "" {
				t.Fatal("a difference without a reason")
			}
			if k != nil && k.Skip {
				differ++
				t.Skip(k.Why)
			}
			inv, err := koordInventory(t, c.Device)
			if k != nil && k.InventoryError != "" {
				if err == nil || !strings.Contains(err.Error(), k.InventoryError) {
					t.Fatalf("inventory error %v, want %q", err, k.InventoryError)
				}
				differ++
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			used := new(Used)
			if c.Assigned != "" {
				holder := koordPod(t, "assigned-pod", nil, map[string]string{AnnotationDeviceAllocated: c.Assigned})
				if used, err = UsedByPods(inv, []*corev1.Pod{holder}); err != nil {
					t.Fatal(err)
				}
			}
			req, err := RequestFromPod(koordPod(t, "pod", c.Pod.Requests, c.Pod.Annotations), PercentModel)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Allocate(inv, used, req)
			want, wantErr := c.Want, c.WantErr
			if k != nil {
				differ++
				want, wantErr = k.Want, k.WantErr != ""
			} else {
				same++
			}
			switch {
			case wantErr && err == nil:
				t.Fatalf("allocated %s, want an error", picks(a))
			case wantErr:
				if k != nil && !strings.Contains(err.Error(), k.WantErr) {
					t.Fatalf("error %v, want %q", err, k.WantErr)
				}
			case err != nil:
				t.Fatalf("%v (request %+v)", err, req)
			case picks(a).String() != want.String():
				t.Fatalf("allocated %s\n          want %s\n(request %+v)", picks(a), want, req)
			}
		})
	}
	t.Logf("%d koordinator cases: %d as koordinator, %d recorded differences", len(cases), same, differ)
}

// Koordinator's pods with 3, 4, 6 and 8 GPUs get 2, 2, 3 and 4 NICs on its fixture:
// one per PCIe root of the GPUs, sized by Allocate, not by the pod.
func TestJointPodGetsOneNICPerGPURoot(t *testing.T) {
	inv, err := koordInventory(t, "fake-device-cr.json")
	if err != nil {
		t.Fatal(err)
	}
	for gpus, nics := range map[int]int{1: 1, 2: 1, 3: 2, 4: 2, 6: 3, 8: 4} {
		for _, scope := range []string{`{"deviceTypes":["gpu","rdma"]}`, `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`} {
			pod := koordPod(t, "p", map[string]string{"koordinator.sh/rdma": "1", "nvidia.com/gpu": fmt.Sprint(gpus)}, map[string]string{
				AnnotationDeviceAllocateHint:  `{"rdma":{"vfSelector":{"matchLabels":{"type":"general"}}}}`,
				AnnotationDeviceJointAllocate: scope,
			})
			for _, model := range []CapacityModel{PercentModel, CountModel} {
				req, err := RequestFromPod(pod, model)
				if err != nil {
					t.Fatal(err)
				}
				a, err := Allocate(inv, nil, req)
				if err != nil {
					t.Fatalf("%d GPUs %s: %v", gpus, scope, err)
				}
				roots := map[string]bool{}
				for _, n := range a.NICs {
					roots[n.PCIeRoot] = true
				}
				if len(a.GPUs) != gpus || a.Units() != nics || len(a.NICs) != nics || len(roots) != nics {
					t.Errorf("%d GPUs %s model %s: %d GPUs, %d VFs on %d PFs and %d roots, want %d", gpus, scope, model, len(a.GPUs), a.Units(), len(a.NICs), len(roots), nics)
				}
			}
		}
	}
}

// Koordinator's hostNetwork joint pod (GPUs, rdma below 100 with ApplyForAll, no VF
// selector) gets PFs, never VFs: on a node whose PFs have no VFs it used to fail with
// "none on the node".
func TestPercentRequestWithoutVFSelectorAsksForPFs(t *testing.T) {
	pod := koordPod(t, "p", map[string]string{"koordinator.sh/rdma": "1", "nvidia.com/gpu": "4"}, map[string]string{
		AnnotationDeviceAllocateHint:  `{"rdma":{"selector":{"matchLabels":{"type":"fakeW"}},"allocateStrategy":"ApplyForAll"}}`,
		AnnotationDeviceJointAllocate: `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`,
	})
	req, err := RequestFromPod(pod, PercentModel)
	if err != nil {
		t.Fatal(err)
	}
	if req.Kind != WholePF || !req.All || req.GPUs != 4 || req.Joint != JointPreferred {
		t.Fatalf("request %+v, want all PFs with 4 GPUs, rdma out of the joint allocation", req)
	}
	inv, err := koordInventory(t, "pf-mode-four-roots.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Allocate(inv, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := picks(a).String(); got != `{"gpus":[0,1,2,3],"rdma":[{"minor":1,"vfs":[]},{"minor":2,"vfs":[]},{"minor":3,"vfs":[]},{"minor":4,"vfs":[]}]}` {
		t.Fatalf("allocated %s", got)
	}
	for _, tc := range []struct {
		name, quantity, hint string
		want                 Request
	}{
		{"below 100 without hints is one PF", "1", ``, Request{Kind: WholePF, Count: 1, OneVFPerPF: true}},
		{"100 is one PF", "100", ``, Request{Kind: WholePF, Count: 1, OneVFPerPF: true}},
		{"a multiple of 100 above 100 counts devices", "300", `{"rdma":{"allocateStrategy":"ApplyForAll"}}`, Request{Kind: WholePF, Count: 3, OneVFPerPF: true}},
		{"RequestsAsCount counts the quantity", "2", `{"rdma":{"allocateStrategy":"RequestsAsCount"}}`, Request{Kind: WholePF, Count: 2, OneVFPerPF: true}},
		{"a VF selector asks for VFs", "1", `{"rdma":{"vfSelector":{}}}`, Request{Kind: VFs, Count: 1, OneVFPerPF: true, VFSelector: &metav1.LabelSelector{}}},
		{"zero asks for nothing, even for all", "0", `{"rdma":{"allocateStrategy":"ApplyForAll"}}`, Request{Kind: WholePF, OneVFPerPF: true}},
	} {
		ann := map[string]string{}
		if tc.hint != "" {
			ann[AnnotationDeviceAllocateHint] = tc.hint
		}
		got, err := RequestFromPod(koordPod(t, "p", map[string]string{"koordinator.sh/rdma": tc.quantity}, ann), PercentModel)
		if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestRequestFromPodRejectsFractionalAndHugeQuantities(t *testing.T) {
	joint := map[string]string{AnnotationDeviceJointAllocate: `{"deviceTypes":["gpu","rdma"]}`}
	for _, r := range []corev1.ResourceName{ResourceNvidiaGPU, ResourceGPU, ResourceRDMA} {
		for _, q := range []string{"1.5", "500m", "1e30", "-100"} {
			_, err := RequestFromPod(koordPod(t, "p", map[string]string{string(r): q}, joint), PercentModel)
			if err == nil || !strings.Contains(err.Error(), "resource "+string(r)+": ") || !strings.Contains(err.Error(), "pod default/p") {
				t.Errorf("%s %s: got %v, want an error naming the resource", r, q, err)
			}
		}
	}
	if _, err := RequestFromPod(koordPod(t, "p", map[string]string{"nvidia.com/gpu": "8", "koordinator.sh/rdma": "1"}, joint), PercentModel); err != nil {
		t.Fatal(err)
	}
}

func TestNilArgumentsAreErrors(t *testing.T) {
	inv := twoRootNode(t)
	checks := map[string]func() error{
		"Allocate":                  func() error { _, err := Allocate(nil, nil, Request{Count: 1}); return err },
		"Fits":                      func() error { return Fits(nil, nil, Request{Count: 1}) },
		"Score":                     func() error { _, err := Score(nil, nil, Request{Count: 1}, ScoreOptions{}); return err },
		"Capacity":                  func() error { _, err := Capacity(nil, CountModel); return err },
		"UsedByPods":                func() error { _, err := UsedByPods(nil, nil); return err },
		"UsedByPods nil pod":        func() error { _, err := UsedByPods(inv, []*corev1.Pod{nil}); return err },
		"RequestFromPod":            func() error { _, err := RequestFromPod(nil, CountModel); return err },
		"AllocationFromPod":         func() error { _, err := AllocationFromPod(nil, &corev1.Pod{}); return err },
		"AllocationFromPod nil pod": func() error { _, err := AllocationFromPod(inv, nil); return err },
		"NodeFromDevice":            func() error { _, err := NodeFromDevice(nil); return err },
	}
	if d := DRADevices(nil); d != nil {
		t.Errorf("DRADevices(nil) = %v", d)
	}
	for name, f := range checks {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panics on nil: %v", name, r)
				}
			}()
			if err := f(); err == nil || !strings.Contains(err.Error(), "nil") {
				t.Errorf("%s: got %v, want an error naming the nil argument", name, err)
			}
		}()
	}
}

// Two PCIe roots with two GPUs and a NIC each; one GPU of the second root is taken. A
// one- or two-GPU pod must not break into a whole root when a partly used one (or one
// it fills exactly) holds it.
func TestPreferredJointAllocationDoesNotFragmentRoots(t *testing.T) {
	inv := mustInv(t, "n1",
		gpuDev(0, "pci0000:17", 0), gpuDev(1, "pci0000:17", 0), gpuDev(2, "pci0000:3a", 0), gpuDev(3, "pci0000:3a", 0),
		gpuDev(4, "pci0000:5d", 1), gpuDev(5, "pci0000:5d", 1), gpuDev(6, "pci0000:5d", 1), gpuDev(7, "pci0000:5d", 1),
		nic(0, "0000:18:00.0", "pci0000:17", 0, nil, vfRange(0, 0x18, 2)...),
		nic(1, "0000:3b:00.0", "pci0000:3a", 0, nil, vfRange(0, 0x3b, 2)...),
		nic(2, "0000:5e:00.0", "pci0000:5d", 1, nil, vfRange(0, 0x5e, 2)...))
	used := new(Used)
	used.HoldGPU(3)
	for _, tc := range []struct {
		gpus  int
		joint Joint
		want  string
	}{
		{1, JointPreferred, "[2]"}, // root pci0000:3a is partly used already
		{1, JointSamePCIe, "[2]"},
		{2, JointPreferred, "[0 1]"}, // fills pci0000:17 exactly, leaves the 4-GPU root whole
		{2, JointSamePCIe, "[0 1]"},
		{3, JointPreferred, "[4 5 6]"},
	} {
		for _, perRoot := range []bool{false, true} {
			a, err := Allocate(inv, used, Request{Count: 1, GPUs: tc.gpus, Joint: tc.joint, NICPerGPURoot: perRoot})
			if err != nil {
				t.Fatal(err)
			}
			var got []int32
			for _, g := range a.GPUs {
				got = append(got, g.Minor)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("%d GPUs %s (per root %v): got %v, want %s", tc.gpus, tc.joint, perRoot, got, tc.want)
			}
		}
	}
}
