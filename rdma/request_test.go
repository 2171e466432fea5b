package rdma

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestErrors(t *testing.T) {
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:17", 0),
		nic(0, "0000:3b:00.0", "pci0000:3a", 0, map[string]string{"t": "a"}, "0000:3b:00.2", "0000:3b:00.3"),
		nic(1, "0000:5e:00.0", "pci0000:5d", 1, map[string]string{"t": "b"}, "0000:5e:00.2"))
	used := new(Used)
	used.HoldVF(mustBDF("0000:3b:00.3"))
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "t", Operator: "Near"}}}
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"a negative count is rejected", Request{Count: -1}, "node n1: rdma: request: count -1 is negative"},
		{"negative GPUs are rejected", Request{GPUs: -1}, "request: gpus -1 is negative"},
		{"GPUs and withGPUs together are rejected", Request{GPUs: 1, WithGPUs: []int32{0}}, "mutually exclusive"},
		{"an unknown kind is rejected", Request{Kind: 7}, "unknown kind 7"},
		{"designated VFs with kind PF are rejected", Request{Kind: WholePF, DesignatedVFs: []BDF{mustBDF("0000:3b:00.2")}}, "designated VFs with kind PF"},
		{"a VF selector with kind PF is rejected", Request{Kind: WholePF, VFSelector: sel("g", "x")}, "a VF selector with kind PF"},
		{"an unknown scope is rejected", Request{Scope: "Rack"}, `unknown requiredTopologyScope "Rack"`},
		{"an unknown exclusive policy is rejected", Request{Exclusive: "NodeLevel"}, `unknown exclusivePolicy "NodeLevel"`},
		{"an unknown joint policy is rejected", Request{Joint: "SameNUMA"}, `unknown joint policy "SameNUMA"`},
		{"an invalid selector is named", Request{Count: 1, Selector: bad}, "request: selector: "},
		{"an invalid VF selector is named", Request{Count: 1, VFSelector: bad}, "request: vfSelector: "},
		{"an invalid GPU selector is named", Request{Count: 1, GPUSelector: bad}, "request: gpuSelector: "},
		{"a designated VF not on the node is named", Request{DesignatedVFs: []BDF{mustBDF("0000:99:00.2")}}, "designated VF 0000:99:00.2 is not on the node"},
		{"a designated VF in use is named", Request{DesignatedVFs: []BDF{mustBDF("0000:3b:00.3")}}, "designated VF 0000:3b:00.3 is in use"},
		{"a designated VF named twice is named", Request{DesignatedVFs: []BDF{mustBDF("0000:3b:00.2"), mustBDF("0000:3b:00.2")}}, "named twice"},
		{"a designated VF outside the selector is named", Request{Selector: sel("t", "b"), DesignatedVFs: []BDF{mustBDF("0000:3b:00.2")}}, "PF 0000:3b:00.0 does not match the selectors"},
		{"with one VF per PF, two designated VFs on the only two PFs leave no third", Request{OneVFPerPF: true, DesignatedVFs: []BDF{mustBDF("0000:3b:00.2"), mustBDF("0000:5e:00.2")}, Count: 3}, "need 3 VFs one per PF, node has 2 (PF 0000:3b:00.0: 2 VFs; PF 0000:5e:00.0: 1 VF)"},
		{"a GPU given that is not on the node is named", Request{Count: 1, WithGPUs: []int32{9}}, "withGPUs: GPU 9 is not on the node"},
		{"a GPU given twice is named", Request{Count: 1, WithGPUs: []int32{0, 0}}, "withGPUs: GPU 0 named twice"},
		{"GPUs that no GPU matches are counted", Request{Count: 1, GPUs: 2, GPUSelector: sel("x", "y")}, "need 2 GPUs matching {x=y}, node has 0"},
		{"all VFs with none free is explained", Request{All: true, Selector: sel("t", "a"), VFSelector: sel("g", "none")}, "need all VFs matching {t=a} with VFs {g=none}, none on the node"},
		{"Device scope reports per PF", Request{Count: 3, Scope: ScopeDevice}, "need 3 VFs within one PF, none has more than 2 (PF 0000:3b:00.0: 2; PF 0000:5e:00.0: 1)"},
		{"Device scope reports what is free per PF when the PF could hold it", Request{Count: 2, Scope: ScopeDevice}, "need 2 VFs within one PF, at most 1 free in any (PF 0000:3b:00.0: 1 free; PF 0000:5e:00.0: 1 free)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Allocate(inv, used, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "node n1: rdma: ") {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	got := strings.Join([]string{Auto.String(), WholePF.String(), VFs.String(), modePF.String(), modeVF.String(), modeMixed.String()}, " ")
	if got != "auto PF VF PF VF mixed" {
		t.Fatalf("got %s", got)
	}
	if mustInv(t, "n9").Name() != "n9" {
		t.Fatal("name")
	}
}

func TestGPUOnlyRequestOnAMixedNode(t *testing.T) {
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:17", 0), gpuDev(1, "pci0000:17", 0),
		nic(0, "0000:18:00.0", "pci0000:17", 0, nil), nic(1, "0000:af:00.0", "pci0000:ae", 1, nil, "0000:af:00.2"))
	a, err := Allocate(inv, nil, Request{GPUs: 2, Joint: JointSamePCIe})
	if err != nil || len(a.GPUs) != 2 || len(a.NICs) != 0 {
		t.Fatalf("got %+v %v", a, err)
	}
}

func TestJointScopeErrorNamesTheFirstGroup(t *testing.T) {
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:17", 0), gpuDev(1, "pci0000:3a", 0),
		nic(0, "0000:18:00.0", "pci0000:17", 0, nil), nic(1, "0000:3b:00.0", "pci0000:3a", 0, nil))
	_, err := Allocate(inv, nil, Request{Count: 1, GPUs: 2, Scope: ScopePCIe})
	want := "node n1: rdma: need the request within one PCIe root, none can hold it (first, pci0000:17: need 2 GPUs, pci0000:17 has 1)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
