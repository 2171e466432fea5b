package rdma

import (
	"strings"
	"testing"
)

// FuzzDecodeAllocateHints checks the hint and joint-allocate decoders never panic, name
// their annotation on error, and yield requests Allocate accepts.
func FuzzDecodeAllocateHints(f *testing.F) {
	for _, s := range []string{
		`{"rdma":{"vfSelector":{"matchLabels":{"rdma-type":"storage"}},"requiredTopologyScope":"PCIe","exclusivePolicy":"DeviceLevel"}}`,
		`{"rdma":{"selector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]},"allocateStrategy":"ApplyForAll"}}`,
		`{"rdma":{"exclusivePolicy":"NodeLevel"}}`, `{"gpu":null}`, `{`, ``,
		`{"rdma":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}`,
	} {
		f.Add(s, `{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}`)
	}
	f.Add(`{}`, `{"requiredScope":"x"}`)
	f.Add(`{}`, `[`)
	inv := mustInv(f, "n1", gpuDev(0, "pci0000:17", 0),
		nic(0, "0000:18:00.0", "pci0000:17", 0, map[string]string{"rdma-type": "storage"}, "0000:18:00.2", "0000:18:00.3"))
	f.Fuzz(func(t *testing.T, hint, joint string) {
		p := pod("p", map[string]string{AnnotationDeviceAllocateHint: hint, AnnotationDeviceJointAllocate: joint}, 1)
		p.Spec.Containers[0].Resources.Requests[ResourceNvidiaGPU] = p.Spec.Containers[0].Resources.Requests[ResourceRDMA]
		req, err := RequestFromPod(p, CountModel)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "pod default/p: annotation scheduling.koordinator.sh/device-") {
				t.Fatalf("error does not name pod and annotation: %v", err)
			}
			return
		}
		if _, err := Allocate(inv, Used{}, req); err != nil && strings.Contains(err.Error(), "request:") {
			t.Fatalf("decoded hints make an invalid request: %v", err)
		}
	})
}
