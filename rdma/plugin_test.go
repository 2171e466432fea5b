package rdma

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, ann map[string]string, rdma int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: ann}}
	c := corev1.Container{Name: "main"}
	if rdma > 0 {
		c.Resources.Requests = corev1.ResourceList{ResourceRDMA: *resource.NewQuantity(rdma, resource.DecimalSI)}
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

func twoRootNode(t testing.TB) *Inventory {
	return mustInv(t, "n1",
		nic(0, "0000:3b:00.0", "pci0000:3a", 0, nil, vfRange(0, 0x3b, 4)...),
		nic(1, "0000:3b:00.1", "pci0000:3a", 0, nil, vfRange(0, 0x3c, 4)...),
		nic(2, "0000:af:00.0", "pci0000:ae", 1, nil, vfRange(0, 0xaf, 4)...),
	)
}

func TestPCIeExclusivityIsHonouredLater(t *testing.T) {
	inv := twoRootNode(t)
	a, err := Allocate(inv, nil, Request{Count: 1, Exclusive: ExclusivePCIe})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ExclusiveRoots) != 1 || a.ExclusiveRoots[0] != "pci0000:3a" {
		t.Fatalf("got %+v", a)
	}
	t.Run("through Used.Add", func(t *testing.T) {
		used := new(Used)
		used.Add(a)
		b, err := Allocate(inv, used, Request{Count: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range b.NICs {
			if n.PCIeRoot == "pci0000:3a" {
				t.Fatalf("allocated on the exclusive root: %+v", b)
			}
		}
		_, err = Allocate(inv, used, Request{Count: 5})
		if err == nil || !strings.Contains(err.Error(), "PCIe root pci0000:3a held exclusively") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("through the pods' annotations", func(t *testing.T) {
		value, err := EncodeAllocated("", a, CountModel)
		if err != nil {
			t.Fatal(err)
		}
		p := pod("holder", map[string]string{
			AnnotationDeviceAllocated:    value,
			AnnotationDeviceAllocateHint: `{"rdma":{"exclusivePolicy":"PCIeLevel"}}`,
		}, 1)
		used, err := UsedByPods(inv, []*corev1.Pod{p})
		if err != nil {
			t.Fatal(err)
		}
		if r := used.ExclusiveRoots(); len(r) != 1 || r[0] != "pci0000:3a" {
			t.Fatalf("roots %v", r)
		}
		if err := Fits(inv, used, Request{Count: 5}); err == nil {
			t.Fatal("fits on an exclusive root")
		}
		if err := Fits(inv, used, Request{Count: 4}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a PCIe-exclusive request avoids roots that others use", func(t *testing.T) {
		used := new(Used)
		used.HoldVF(mustBDF(vfRange(0, 0xaf, 1)[0]))
		used.HoldVF(mustBDF(vfRange(0, 0x3b, 1)[0]))
		_, err := Allocate(inv, used, Request{Count: 1, Exclusive: ExclusivePCIe})
		if err == nil || !strings.Contains(err.Error(), "shared with other pods") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestUsedByPods(t *testing.T) {
	inv := twoRootNode(t)
	t.Run("finished pods hold nothing and unknown PFs are named", func(t *testing.T) {
		done := pod("done", map[string]string{AnnotationDeviceAllocated: `{"rdma":[{"minor":0,"busID":"0000:3b:00.0"}]}`}, 1)
		done.Status.Phase = corev1.PodSucceeded
		used, err := UsedByPods(inv, []*corev1.Pod{done})
		if err != nil || len(used.PFs()) != 0 {
			t.Fatalf("got %v %v", used.PFs(), err)
		}
		bad := pod("bad", map[string]string{AnnotationDeviceAllocated: `{"rdma":[{"minor":0,"busID":"0000:99:00.0"}]}`}, 1)
		_, err = UsedByPods(inv, []*corev1.Pod{bad})
		want := "pod default/bad: annotation scheduling.koordinator.sh/device-allocated: rdma[0]: PF 0000:99:00.0 is not on node n1"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("an entry known only by minor resolves to the PF", func(t *testing.T) {
		p := pod("old", map[string]string{AnnotationDeviceAllocated: `{"rdma":[{"minor":2}],"gpu":[{"minor":5}]}`}, 1)
		used, err := UsedByPods(inv, []*corev1.Pod{p})
		if err != nil {
			t.Fatal(err)
		}
		if got := used.PFs(); len(got) != 1 || got[0].String() != "0000:af:00.0" {
			t.Fatalf("got %v", got)
		}
		if g := used.GPUs(); len(g) != 1 || g[0] != 5 {
			t.Fatalf("gpus %v", g)
		}
	})
}

func TestScore(t *testing.T) {
	inv := twoRootNode(t) // 12 VFs
	used := new(Used)
	for _, v := range vfRange(0, 0x3b, 2) {
		used.HoldVF(mustBDF(v))
	}
	for _, tc := range []struct {
		name string
		opts ScoreOptions
		want int64
	}{
		// 2 used + 2 requested of 12: (12-4)*100/12 = 66.
		{"least allocated rates free units", ScoreOptions{Strategy: LeastAllocated}, 66},
		// 4*100/12 = 33.
		{"most allocated rates used units", ScoreOptions{Strategy: MostAllocated}, 33},
		// both VFs on the shared PF 3b (one root): topology 100; (66*50 + 100*50)/100 = 83.
		{"topology weight adds the one-root bonus", ScoreOptions{TopologyWeight: 50}, 83},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Score(inv, used, Request{Count: 2}, tc.opts)
			if err != nil || got != tc.want {
				t.Fatalf("got %d %v want %d", got, err, tc.want)
			}
		})
	}
	t.Run("an unknown strategy is an error that no node can satisfy", func(t *testing.T) {
		_, err := Score(inv, used, Request{Count: 2}, ScoreOptions{Strategy: "Spread"})
		if !errors.Is(err, ErrUnsatisfiable) || !strings.Contains(err.Error(), `score strategy "Spread"`) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestUnknownCapacityModelIsAnError(t *testing.T) {
	inv := twoRootNode(t)
	if _, err := Capacity(inv, "Bytes"); err == nil || !strings.Contains(err.Error(), `capacity model "Bytes"`) {
		t.Fatalf("Capacity: got %v", err)
	}
	if _, err := RequestFromPod(&corev1.Pod{}, "Bytes"); err == nil || !strings.Contains(err.Error(), `capacity model "Bytes"`) {
		t.Fatalf("RequestFromPod: got %v", err)
	}
}

func TestRequestFromPod(t *testing.T) {
	p := pod("train", map[string]string{
		AnnotationDeviceAllocateHint:  `{"rdma":{"vfSelector":{"matchLabels":{"rdma-type":"storage"}},"requiredTopologyScope":"PCIe","exclusivePolicy":"DeviceLevel"}}`,
		AnnotationDeviceJointAllocate: `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`,
	}, 2)
	p.Spec.Containers[0].Resources.Requests[ResourceNvidiaGPU] = resource.MustParse("4")
	req, err := RequestFromPod(p, CountModel)
	if err != nil {
		t.Fatal(err)
	}
	if req.Kind != VFs || req.Count != 2 || req.Scope != ScopePCIe || req.Exclusive != ExclusiveDevice ||
		req.GPUs != 4 || req.Joint != JointSamePCIe || req.VFSelector.MatchLabels["rdma-type"] != "storage" {
		t.Fatalf("got %+v", req)
	}
	p.Annotations[AnnotationDeviceJointAllocate] = `{"requiredScope":"SameNUMA"}`
	_, err = RequestFromPod(p, CountModel)
	if err == nil || !strings.HasPrefix(err.Error(), "pod default/train: annotation scheduling.koordinator.sh/device-joint-allocate: requiredScope") {
		t.Fatalf("got %v", err)
	}
	pct := pod("pct", nil, 250)
	if _, err := RequestFromPod(pct, PercentModel); err == nil || !strings.Contains(err.Error(), "multiple of 100") {
		t.Fatalf("got %v", err)
	}
}
