package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
)

// devicesAnnotation is a device annotation with the given device ids, IPs
// prefix.first, prefix.first+1, ...
func devicesAnnotation(pod, server, prefix string, first int, ids ...int) string {
	devs := []map[string]string{}
	for i, id := range ids {
		devs = append(devs, map[string]string{"device_id": fmt.Sprint(id), "device_ip": fmt.Sprintf("%s.%d", prefix, first+i)})
	}
	b, _ := json.Marshal(map[string]any{"pod_name": pod, "server_id": server, "devices": devs})
	return string(b)
}

// table is the part of a MindIE table these tests read.
type table struct {
	ServerCount string `json:"server_count"`
	Status      string `json:"status"`
	ServerList  []struct {
		ServerID string `json:"server_id"`
		Device   []struct {
			DeviceID string `json:"device_id"`
			DeviceIP string `json:"device_ip"`
			RankID   string `json:"rank_id"`
		} `json:"device"`
	} `json:"server_list"`
}

// waitTable waits until the ConfigMap holds a table check accepts.
func waitTable(t *testing.T, ns, name, what string, check func(table, string) error) {
	t.Helper()
	eventually(t, what, func() error {
		var cm corev1.ConfigMap
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &cm); err != nil {
			return err
		}
		raw := cm.Data[ranktable.DefaultFilename]
		if raw == "" {
			return fmt.Errorf("table %s/%s is empty", ns, name)
		}
		var tab table
		if err := json.Unmarshal([]byte(raw), &tab); err != nil {
			return fmt.Errorf("table %s/%s: %v: %s", ns, name, err, trim(raw))
		}
		return check(tab, raw)
	})
}

// TestRanktablePodsOfOneServerMerged: two pods on one server (4 NPUs each) make one
// server of 8 devices, ranked 0-7 by device id across both pods.
func TestRanktablePodsOfOneServerMerged(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	newOwner(t, ns, "shared", 1, nil)
	w0, w1 := podOf("shared", "worker", 0, 0), podOf("shared", "worker", 0, 1)
	// worker 0 holds devices 4-7, worker 1 devices 0-3: ranks follow device ids, not pods.
	annotate(t, ns, w0, devicesAnnotation(w0, "192.168.1.10", "10.0.0", 4, 4, 5, 6, 7))
	annotate(t, ns, w1, devicesAnnotation(w1, "192.168.1.10", "10.0.0", 0, 0, 1, 2, 3))
	waitTable(t, ns, "shared-0-worker-ranktable", "one merged server", func(tab table, raw string) error {
		if tab.ServerCount != "1" || len(tab.ServerList) != 1 || tab.Status != ranktable.StatusCompleted {
			return fmt.Errorf("server_count %s, %d servers, status %s, want 1 completed server: %s", tab.ServerCount, len(tab.ServerList), tab.Status, trim(raw))
		}
		devs := tab.ServerList[0].Device
		if len(devs) != 8 {
			return fmt.Errorf("%d devices, want 8", len(devs))
		}
		for i, d := range devs {
			if d.DeviceID != fmt.Sprint(i) || d.RankID != fmt.Sprint(i) || d.DeviceIP != fmt.Sprintf("10.0.0.%d", i) {
				return fmt.Errorf("device %d: %+v, want id %d rank %d ip 10.0.0.%d", i, d, i, i, i)
			}
		}
		return nil
	})
}

// TestRanktableEmptyDeviceListRejected: a pod whose annotation lists no devices fails
// its group with an event naming the pod and the devices field; no table is written.
func TestRanktableEmptyDeviceListRejected(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	newOwner(t, ns, "nodev", 1, nil, role{"worker", 1})
	pod := podOf("nodev", "worker", 0, 0)
	annotate(t, ns, pod, `{"pod_name": "`+pod+`", "server_id": "192.168.1.10", "devices": []}`)
	ev := waitEvent(t, ns, string(ranktable.ReasonGenerationFailed), "nodev")
	if !strings.Contains(ev.Note, ns+"/"+pod) || !strings.Contains(ev.Note, "devices") {
		t.Errorf("failure event %q does not name pod %s/%s and the devices field", ev.Note, ns, pod)
	}
	tableIs(t, ns, "nodev-0-worker-ranktable", "", "the table stays empty")
}

// TestRanktablePodsOfOtherNamespacesIgnored: two owners of the same name, labels and
// template in two namespaces each get a table of their own pods only.
func TestRanktablePodsOfOtherNamespacesIgnored(t *testing.T) {
	nsA, nsB := newNamespace(t), newNamespace(t)
	startMSKubelet(t, nsA, kubeletDefaults.StartDelay)
	startMSKubelet(t, nsB, kubeletDefaults.StartDelay)
	servers := map[string]string{nsA: "192.168.1.10", nsB: "192.168.1.20"}
	for _, ns := range []string{nsA, nsB} {
		newOwner(t, ns, "twin", 1, nil, role{"worker", 1})
		pod := podOf("twin", "worker", 0, 0)
		annotate(t, ns, pod, deviceAnnotation(pod, servers[ns], "10.0.0", 1))
	}
	for _, ns := range []string{nsA, nsB} {
		waitTable(t, ns, "twin-0-worker-ranktable", "table of namespace "+ns, func(tab table, raw string) error {
			if len(tab.ServerList) != 1 || tab.ServerList[0].ServerID != servers[ns] {
				return fmt.Errorf("namespace %s: servers %s, want only %s", ns, trim(raw), servers[ns])
			}
			return nil
		})
	}
}

// TestRanktableReplanAfterTemplateChange: editing the template ConfigMap re-renders
// the tables of the owners using it, without any pod changing.
func TestRanktableReplanAfterTemplateChange(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	base, ok := ranktable.LibraryConfigMap(ranktable.LibraryMindIESimple)
	if !ok {
		t.Fatal("no library template", ranktable.LibraryMindIESimple)
	}
	tmpl := base.DeepCopy()
	tmpl.ObjectMeta = metav1.ObjectMeta{Namespace: ranktable.DefaultTemplateNamespace, Name: "t16-" + ns, Labels: base.Labels}
	if err := admin.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, tmpl) })
	newOwner(t, ns, "edited", 1, map[string]string{ranktable.AnnotationTemplate: tmpl.Name}, role{"worker", 1})
	pod := podOf("edited", "worker", 0, 0)
	annotate(t, ns, pod, deviceAnnotation(pod, "192.168.1.10", "10.0.0", 1))
	cmName := "edited-0-worker-ranktable"
	waitTable(t, ns, cmName, "table from the original template", func(tab table, raw string) error {
		if strings.Contains(raw, "edited") {
			return fmt.Errorf("unexpected marker in %s", trim(raw))
		}
		return nil
	})
	// Add a field to the template's output.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
		t.Fatal(err)
	}
	text := tmpl.Data[ranktable.KeyRanktableTemplate]
	i := strings.Index(text, "{")
	if i < 0 {
		t.Fatalf("template text has no object: %q", text)
	}
	tmpl.Data[ranktable.KeyRanktableTemplate] = text[:i+1] + "\n  \"revision\": \"edited\"," + text[i+1:]
	if err := admin.Update(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	waitTable(t, ns, cmName, "table re-rendered from the edited template", func(tab table, raw string) error {
		if !strings.Contains(raw, `"revision": "edited"`) || len(tab.ServerList) != 1 {
			return fmt.Errorf("table not re-rendered: %s", trim(raw))
		}
		return nil
	})
}

// TestConfigMapSetDeletion: deleting a set leaves its pods alone (their revision
// annotations stay as they were), new pods are no longer injected, and the hub is
// left to the garbage collector through its owner reference.
func TestConfigMapSetDeletion(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	set := newSet(t, ns, "doomed", map[string]string{"a.conf": "1"}, false)
	newWebPod(t, ns, "web-0")
	runNode(t, ns, "web-0", set)
	waitComplete(t, set, set.Status.UpdateRevision, 1)
	var before corev1.Pod
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, &before); err != nil {
		t.Fatal(err)
	}
	var hub corev1.ConfigMap
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: revision.HubName(set.Name)}, &hub); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&hub, set) {
		t.Errorf("hub owners %+v: want the set as controller, so deleting the set collects it", hub.OwnerReferences)
	}
	if err := admin.Delete(ctx, set); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the set is gone", func() error {
		err := admin.Get(ctx, client.ObjectKeyFromObject(set), &revision.ConfigMapSet{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return client.IgnoreNotFound(err)
	})
	// Changing the pod makes the operator look at it again: it must not touch it.
	annotatePod(t, ns, "web-0", "touch", "1")
	time.Sleep(2 * time.Second)
	var after corev1.Pod
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, &after); err != nil {
		t.Fatal(err)
	}
	keys, _ := revision.KeysFor(set.Name)
	for _, k := range []string{keys.UpdateRevision, keys.UpdateRevisionTimestamp, keys.CurrentRevision, keys.CurrentRevisionTimestamp} {
		if before.Annotations[k] != after.Annotations[k] {
			t.Errorf("annotation %s changed after deletion: %q -> %q", k, before.Annotations[k], after.Annotations[k])
		}
	}
	if before.Labels[keys.UpdateOrder] != after.Labels[keys.UpdateOrder] {
		t.Errorf("label %s changed after deletion", keys.UpdateOrder)
	}
	fresh := newWebPod(t, ns, "web-1")
	if err := admin.Get(ctx, client.ObjectKeyFromObject(fresh), fresh); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(fresh.Spec.InitContainers, fresh.Spec.Containers...) {
		if c.Name == revision.ReloadSidecarName(set.Name) {
			t.Errorf("a pod created after the set was deleted got its sidecar")
		}
	}
	if _, ok := fresh.Annotations[keys.UpdateRevision]; ok {
		t.Errorf("a pod created after the set was deleted got a revision annotation")
	}
}

func annotatePod(t *testing.T, ns, pod, key, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err := admin.Patch(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}
