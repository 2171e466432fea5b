package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/operator/rdmacapacity"
	"github.com/kplan-dev/kplan/rdma"
)

// vfDevice is a Device object in VF mode: pfs PFs with vfs VFs each; the first
// unhealthy PFs are marked unhealthy.
func vfDevice(node string, pfs, vfs, unhealthy int) *unstructured.Unstructured {
	var devices []any
	for p := range pfs {
		var list []any
		for v := range vfs {
			list = append(list, map[string]any{"minor": int64(v), "busID": fmt.Sprintf("0000:%02x:00.%d", 0x20+p, v+1)})
		}
		devices = append(devices, map[string]any{
			"type": "rdma", "id": fmt.Sprintf("0000:%02x:00.0", 0x20+p), "minor": int64(p), "health": p >= unhealthy,
			"resources": map[string]any{string(rdma.ResourceRDMA): "100"},
			"topology":  map[string]any{"socketID": int64(0), "nodeID": int64(0), "pcieID": fmt.Sprint(p)},
			"vfGroups":  []any{map[string]any{"labels": map[string]any{"type": "general"}, "vfs": list}},
		})
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"devices": devices}}}
	u.SetGroupVersionKind(rdmacapacity.DeviceGVK)
	u.SetName(node)
	return u
}

// fixtureDevice reads one of koordinator's Device fixtures, renamed to node.
func fixtureDevice(t *testing.T, file, node string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../../rdma/testdata/koordinator/" + file)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetName(node)
	u.SetResourceVersion("")
	return u
}

// rdmaOf waits until the node's capacity and allocatable of koordinator.sh/rdma are
// want ("" for absent).
func rdmaOf(t *testing.T, node, want, what string) {
	t.Helper()
	eventually(t, what, func() error {
		var n corev1.Node
		if err := admin.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
			return err
		}
		for field, l := range map[string]corev1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
			q, ok := l[rdma.ResourceRDMA]
			got := ""
			if ok {
				got = q.String()
			}
			if got != want {
				return fmt.Errorf("node %s status.%s[%s] = %q, want %q", node, field, rdma.ResourceRDMA, got, want)
			}
		}
		return nil
	})
}

// removeNodesAtEnd deletes the nodes and their Device objects (the same names) when
// the test ends, so it can run again (go test -count).
func removeNodesAtEnd(t *testing.T, names ...string) {
	t.Cleanup(func() {
		for _, name := range names {
			dev := &unstructured.Unstructured{}
			dev.SetGroupVersionKind(rdmacapacity.DeviceGVK)
			dev.SetName(name)
			_ = admin.Delete(context.Background(), dev)
			_ = admin.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
}

func newNode(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := admin.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	// The kubelet's own resources, which the controller must keep. The controller
	// may write the status first (a Device written before the node): merge, not
	// replace, and retry on its write.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		if n.Status.Capacity == nil {
			n.Status.Capacity = corev1.ResourceList{}
		}
		if n.Status.Allocatable == nil {
			n.Status.Allocatable = corev1.ResourceList{}
		}
		n.Status.Capacity[corev1.ResourceCPU] = resourceQty("64")
		n.Status.Allocatable[corev1.ResourceCPU] = resourceQty("63")
		return admin.Status().Update(context.Background(), n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNodeRDMACapacity runs the node capacity controller with both models on
// koordinator's Device objects.
func TestNodeRDMACapacity(t *testing.T) {
	ctx := context.Background()
	for _, model := range []struct {
		name  string
		model rdma.CapacityModel
		// Expected values, worked out by hand:
		pfMode string // pf-mode-four-roots: 4 healthy PFs without VFs
		vfMode string // vfDevice(3 PFs x 4 VFs, first unhealthy): 2 healthy PFs, 8 VFs
		mixed  string // one-nic-with-vfs-four-roots: one PF with VFs, three without
	}{
		{name: "count", model: rdma.CountModel, pfMode: "4", vfMode: "8", mixed: "error"},
		{name: "percent", model: rdma.PercentModel, pfMode: "400", vfMode: "200", mixed: "400"},
	} {
		t.Run(model.name+" model", func(t *testing.T) {
			applyNodeRDMARole(t)
			restartManager(t, &managerOptions{rdma: &model.model})
			t.Cleanup(func() { restartManager(t, nil) })
			prefix := "rdma-" + model.name + "-"
			removeNodesAtEnd(t, prefix+"pf", prefix+"vf", prefix+"bad", prefix+"mixed")

			t.Run("a PF-mode Device sets capacity and allocatable", func(t *testing.T) {
				newNode(t, prefix+"pf")
				if err := admin.Create(ctx, fixtureDevice(t, "pf-mode-four-roots.json", prefix+"pf")); err != nil {
					t.Fatal(err)
				}
				rdmaOf(t, prefix+"pf", model.pfMode, "PF-mode capacity")
				var n corev1.Node
				if err := admin.Get(ctx, types.NamespacedName{Name: prefix + "pf"}, &n); err != nil {
					t.Fatal(err)
				}
				if q := n.Status.Capacity[corev1.ResourceCPU]; q.String() != "64" {
					t.Errorf("cpu capacity %s, want the kubelet's 64 kept", q.String())
				}
			})

			t.Run("a VF-mode Device counts healthy PFs' VFs, and a Device written before its node counts", func(t *testing.T) {
				if err := admin.Create(ctx, vfDevice(prefix+"vf", 3, 4, 1)); err != nil {
					t.Fatal(err)
				}
				newNode(t, prefix+"vf")
				rdmaOf(t, prefix+"vf", model.vfMode, "VF-mode capacity")
			})

			t.Run("a changed Device changes the capacity; a deleted one removes it", func(t *testing.T) {
				dev := vfDevice(prefix+"vf", 3, 4, 0) // all three PFs healthy now
				var cur unstructured.Unstructured
				cur.SetGroupVersionKind(rdmacapacity.DeviceGVK)
				if err := admin.Get(ctx, types.NamespacedName{Name: prefix + "vf"}, &cur); err != nil {
					t.Fatal(err)
				}
				dev.SetResourceVersion(cur.GetResourceVersion())
				if err := admin.Update(ctx, dev); err != nil {
					t.Fatal(err)
				}
				want := map[rdma.CapacityModel]string{rdma.CountModel: "12", rdma.PercentModel: "300"}[model.model]
				rdmaOf(t, prefix+"vf", want, "capacity after the Device changed")
				if err := admin.Delete(ctx, dev); err != nil {
					t.Fatal(err)
				}
				rdmaOf(t, prefix+"vf", "", "capacity removed with the Device")
			})

			t.Run("a malformed Device", func(t *testing.T) {
				newNode(t, prefix+"bad")
				dev := vfDevice(prefix+"bad", 2, 2, 0)
				dev.Object["spec"].(map[string]any)["devices"].([]any)[1].(map[string]any)["id"] = "nic-1" // no PCI address
				if err := admin.Create(ctx, dev); err != nil {
					t.Fatal(err)
				}
				ev := waitEventCluster(t, string(rdma.ReasonInvalidInventory), prefix+"bad")
				if want := "node " + prefix + `bad: devices[1].id: Invalid value: "nic-1": no topology.busID`; !strings.HasPrefix(ev, want) {
					t.Errorf("event %q: want rdma's message, %q...", ev, want)
				}
				rdmaOf(t, prefix+"bad", "", "no capacity from a malformed Device")
			})

			t.Run("a mixed-mode Device", func(t *testing.T) {
				newNode(t, prefix+"mixed")
				if err := admin.Create(ctx, fixtureDevice(t, "one-nic-with-vfs-four-roots.json", prefix+"mixed")); err != nil {
					t.Fatal(err)
				}
				if model.mixed != "error" {
					rdmaOf(t, prefix+"mixed", model.mixed, "mixed-mode capacity")
					return
				}
				ev := waitEventCluster(t, string(rdma.ReasonMixedNICModes), prefix+"mixed")
				if want := "node " + prefix + "mixed: rdma: healthy PFs with and without VFs on one node"; !strings.HasPrefix(ev, want) {
					t.Errorf("event %q: want rdma's message, %q...", ev, want)
				}
				rdmaOf(t, prefix+"mixed", "", "no capacity from a Device that cannot be counted")
			})
		})
	}
}

// waitEventCluster waits for an event with reason about the node (a cluster-scoped
// object: its events live in the default namespace) and returns its note. Only
// events about the node as it is now count: a test run again (go test -count)
// recreates its nodes, and the first run's events stay behind.
func waitEventCluster(t *testing.T, reason, node string) string {
	t.Helper()
	var n corev1.Node
	if err := admin.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	ev := waitEventUID(t, metav1.NamespaceDefault, reason, node, n.UID)
	if ev == nil {
		t.Fatal(errors.New("no event"))
	}
	return ev.Note
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }

// applyNodeRDMARole applies the optional config/node-rdma role the node capacity
// controller needs, and removes it when the test ends (the base role grants nothing
// on nodes or Devices; TestRBAC checks that).
func applyNodeRDMARole(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	objs, err := readManifests(filepath.Join("..", "config", "node-rdma", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("applying config/node-rdma: %v", err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, o) })
	}
}
