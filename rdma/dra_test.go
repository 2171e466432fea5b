package rdma

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDRADevices(t *testing.T) {
	sick := nic(2, "0000:af:00.0", "pci0000:ae", 1, nil)
	sick.Health = false
	inv := mustInv(t, "n1", gpuDev(0, "pci0000:3a", 0),
		nic(0, "0000:3b:00.0", "pci0000:3a", -1, map[string]string{"rdma-type": "compute", "rdma_type": "other", "example.com/x": "y"}, "0000:3b:00.2"),
		sick)
	devs := DRADevices(inv)
	var names []string
	ident := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,31}$`)
	for _, d := range devs {
		names = append(names, d.Name)
		if errs := validation.IsDNS1123Label(d.Name); len(errs) > 0 {
			t.Errorf("device name %q: %v", d.Name, errs)
		}
		for k := range d.Attributes {
			domain, id, ok := strings.Cut(string(k), "/")
			if !ok || len(validation.IsDNS1123Subdomain(domain)) > 0 || !ident.MatchString(id) {
				t.Errorf("attribute name %q is not a DRA qualified name", k)
			}
		}
	}
	if got := strings.Join(names, " "); got != "gpu-0 pf-0000-3b-00-0 vf-0000-3b-00-2" {
		t.Fatalf("devices %s (the unhealthy PF must be left out)", got)
	}
	vf := devs[2].Attributes
	if *vf[DRAAttributePCIBusID].StringValue != "0000:3b:00.2" || *vf[DRAAttributePF].StringValue != "0000:3b:00.0" ||
		*vf[DRAAttributePCIeRoot].StringValue != "pci0000:3a" {
		t.Fatalf("VF attributes %v", vf)
	}
	if _, ok := vf[DRAAttributeNUMANode]; ok {
		t.Fatal("unknown NUMA node written")
	}
	if got := *vf[DRALabelDomain+"/rdma_type"].StringValue; got != "compute" {
		t.Fatalf("label collision resolved to %q, want the first key in order (rdma-type)", got)
	}
	if g := devs[0].Attributes[DRAAttributeNUMANode].IntValue; g == nil || *g != 0 {
		t.Fatal("the GPU's known NUMA node 0 is missing")
	}
}
