package rdma

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// NodeFromDevice: koordinator's Device objects read from testdata, and malformed ones.

func readDevice(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// TestNodeFromDeviceGolden reads koordinator's own test Device (8 GPUs, 4 RDMA PFs
// with 30 VFs each on 4 PCIe roots) as the API server serves it.
func TestNodeFromDeviceGolden(t *testing.T) {
	obj := readDevice(t, "koordinator-device.yaml")
	before := obj.DeepCopy()
	n, err := NodeFromDevice(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(obj.Object, before.Object) {
		t.Fatal("NodeFromDevice mutated the object")
	}
	inv, err := NewInventory(n)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Name() != "test-node-1" || len(inv.pfs) != 4 || len(inv.gpus) != 8 || len(inv.vfAt) != 120 {
		t.Fatalf("inventory %s: %d PFs, %d GPUs, %d VFs", inv.Name(), len(inv.pfs), len(inv.gpus), len(inv.vfAt))
	}
	out, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "koordinator-device.node.golden", append(out, '\n'))
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestNodeFromDeviceRejectsMalformedObjects(t *testing.T) {
	dev := func(spec any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
			"metadata": map[string]any{"name": "n1"}, "spec": spec}}
	}
	wrongKind := dev(nil)
	wrongKind.SetKind("Node")
	wrongGroup := dev(nil)
	wrongGroup.SetAPIVersion("v1")
	noName := dev(nil)
	noName.SetName("")
	huge := make([]any, MaxDevices+1)
	for i := range huge {
		huge[i] = map[string]any{}
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"nil", nil, "nil object"},
		{"another kind", wrongKind, `Device n1: kind "Node"`},
		{"another apiVersion", wrongGroup, `Device n1: apiVersion "v1"`},
		{"no name", noName, "metadata.name is empty"},
		{"devices not a list", dev(map[string]any{"devices": "x"}), "spec.devices: a string, want a list"},
		{"a device not an object", dev(map[string]any{"devices": []any{"x"}}), "spec.devices[0]: a string, want an object"},
		{"a minor of the wrong type", dev(map[string]any{"devices": []any{map[string]any{"type": "rdma", "minor": "one"}}}), "spec.devices[0]: json: cannot unmarshal string"},
		{"too many devices", dev(map[string]any{"devices": huge}), fmt.Sprintf("%d entries, at most %d", MaxDevices+1, MaxDevices)},
	} {
		_, err := NodeFromDevice(tc.obj)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	n, err := NodeFromDevice(dev(nil))
	if err != nil || n.Name != "n1" || len(n.Devices) != 0 {
		t.Fatalf("a Device without devices: %+v, %v", n, err)
	}
}
