package rdma

import (
	"strings"
	"testing"
)

func TestDeviceIDs(t *testing.T) {
	p := pod("p", map[string]string{AnnotationDeviceAllocated: `{"rdma":[` +
		`{"minor":1,"id":"0000:AF:00.0"},` +
		`{"minor":0,"busID":"0000:3b:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:3b:00.3"},{"minor":-1,"busID":"0000:3b:00.2"}]}}]}`}, 1)
	ids, err := DeviceIDsFromPod(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids, ","); got != "0000:3b:00.2,0000:3b:00.3,0000:af:00.0" {
		t.Fatalf("got %s", got)
	}
	env := PCIDeviceEnv("intel.com/sriov_net", ids)
	if env.Name != "PCIDEVICE_INTEL_COM_SRIOV_NET" || env.Value != "0000:3b:00.2,0000:3b:00.3,0000:af:00.0" {
		t.Fatalf("got %+v", env)
	}
	_, err = DeviceIDs([]DeviceAllocation{{Minor: 4}})
	if err == nil || !strings.Contains(err.Error(), "rdma[0]: no PF BDF") {
		t.Fatalf("got %v", err)
	}
}
