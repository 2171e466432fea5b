package rdma

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		if _, err := Allocate(inv, nil, req); err != nil && strings.Contains(err.Error(), "request:") {
			t.Fatalf("decoded hints make an invalid request: %v", err)
		}
	})
}

// FuzzNodeFromDevice checks that any JSON object read as a Device object gives a Node or
// an error naming the Device, never a panic, and that the Node then either builds an
// inventory that Allocate can use or is rejected by NewInventory.
func FuzzNodeFromDevice(f *testing.F) {
	f.Add(`{"apiVersion":"scheduling.koordinator.sh/v1alpha1","kind":"Device","metadata":{"name":"n1"},"spec":{"devices":[{"type":"rdma","id":"0000:18:00.0","minor":0,"health":true,"topology":{"socketID":0,"nodeID":0,"pcieID":"pci0000:17"},"vfGroups":[{"vfs":[{"minor":0,"busID":"0000:18:00.2"},{"minor":1,"busID":"0000:18:00.9"}]}]}]}}`)
	f.Add(`{"metadata":{"name":"n1"},"spec":{"devices":[null,{"minor":"x"}]}}`)
	f.Add(`{"kind":"Node","metadata":{"name":"n1"}}`)
	f.Add(`{"metadata":{"name":"n1"},"spec":{"devices":{}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil || obj == nil {
			return
		}
		n, err := NodeFromDevice(&unstructured.Unstructured{Object: obj})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rdma: Device") {
				t.Fatalf("error does not name the Device: %v", err)
			}
			return
		}
		inv, err := NewInventory(n)
		if err != nil {
			return
		}
		for _, e := range inv.Errors() {
			if !strings.Contains(e.Field, ".vfs[") {
				t.Fatalf("a tolerated error that is not a VF's: %v", e)
			}
		}
		_, _ = Allocate(inv, nil, Request{Count: 1, GPUs: 1, NICPerGPURoot: true})
	})
}
