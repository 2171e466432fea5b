package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// role is a role of a test ModelServing: its name and its members per serving group.
type role struct {
	name    string
	members int32
}

// newOwner creates a ModelServing of groups serving groups annotated with the
// MindIE role template (annotations add to or override that), with roles (default:
// worker with 2 members). Its pods carry app=name; the operator creates them.
func newOwner(t *testing.T, ns, name string, groups int32, annotations map[string]string, roles ...role) *servingv1.ModelServing {
	t.Helper()
	ann := map[string]string{servingv1.AnnotationRanktableTemplate: ranktable.LibraryMindIERole}
	maps.Copy(ann, annotations)
	if len(roles) == 0 {
		roles = []role{{"worker", 2}}
	}
	ms := &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec:       servingv1.ModelServingSpec{Replicas: &groups},
	}
	for _, r := range roles {
		ms.Spec.Roles = append(ms.Spec.Roles, servingv1.Role{Name: r.name, Replicas: r.members, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "busybox:1.36"}}},
		}})
	}
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// podOf is the name the operator gives member m of role r in serving group g.
func podOf(ms, r string, g, m int) string { return fmt.Sprintf("%s-%s-%d-%d", ms, r, g, m) }

// waitPod waits until the operator has created the named pod with a UID other
// than notUID ("" for any) and returns it.
func waitPod(t *testing.T, ns, name string, notUID types.UID) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, "pod "+name, func() error {
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
			return err
		}
		if pod.UID == notUID || pod.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s not recreated yet", name)
		}
		return nil
	})
	return &pod
}

// deletePod deletes a pod and waits until the operator has created its successor.
func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	old := waitPod(t, ns, name, "")
	if err := admin.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, name, old.UID)
}

// deviceAnnotation is the design's ascend.com/ranktable annotation: 8 devices with IPs
// prefix.first .. prefix.first+7.
func deviceAnnotation(pod, server, prefix string, first int) string {
	devs := make([]map[string]string, 8)
	for i := range devs {
		devs[i] = map[string]string{"device_id": fmt.Sprint(i), "device_ip": fmt.Sprintf("%s.%d", prefix, first+i)}
	}
	b, _ := json.Marshal(map[string]any{"pod_name": pod, "server_id": server, "devices": devs})
	return string(b)
}

// annotate writes a pod's device annotation, as the device plugin would, once the
// operator has created the pod.
func annotate(t *testing.T, ns, pod, value string) {
	t.Helper()
	waitPod(t, ns, pod, "")
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ranktable.DefaultAnnotationName: value}}})
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}
	if err := admin.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotating pod %s: %v", pod, err)
	}
}

// tableIs waits until the ConfigMap's ranktable.json is want.
func tableIs(t *testing.T, ns, name, want, what string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	eventually(t, what, func() error {
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &cm); err != nil {
			return err
		}
		got, ok := cm.Data[ranktable.DefaultFilename]
		if !ok || got != want {
			return fmt.Errorf("ConfigMap %s/%s %s = %q, want %q", ns, name, ranktable.DefaultFilename, trim(got), trim(want))
		}
		return nil
	})
	return &cm
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// designTable is the design's expected table for the design's two pods.
func designTable(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/design-table.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// designScenario creates the design's owner "qwen-inference" (one serving group,
// role worker with two members) and annotates the first n of its two pods.
func designScenario(t *testing.T, ns string, annotated int) *servingv1.ModelServing {
	t.Helper()
	ms := newOwner(t, ns, "qwen-inference", 1, nil)
	for i := 0; i < annotated; i++ {
		name := podOf(ms.Name, "worker", 0, i)
		annotate(t, ns, name, deviceAnnotation(name, fmt.Sprintf("192.168.1.%d", 10+i), "10.20.0", 2+8*i))
	}
	return ms
}

// designCM is the ranktable ConfigMap of the design's owner: role worker of serving
// group qwen-inference-0.
const designCM = "qwen-inference-0-worker-ranktable"

// TestRanktableDesignScenario is the design's scenario end to end: the ModelServing
// and templates give an empty ConfigMap, the pods the operator creates carry the
// injection, annotations complete the table, a deleted pod resets it and its
// replacement with new device IPs regenerates it.
func TestRanktableDesignScenario(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	createdBefore := counterValue(t, "ranktable_configmap_updates_total", "create")
	ms := newOwner(t, ns, "qwen-inference", 1, nil)
	worker0, worker1 := podOf(ms.Name, "worker", 0, 0), podOf(ms.Name, "worker", 0, 1)

	t.Run("the ModelServing gets an empty ConfigMap it controls", func(t *testing.T) {
		cm := tableIs(t, ns, designCM, "", "empty ConfigMap for the owner")
		if !metav1.IsControlledBy(cm, ms) {
			t.Errorf("ConfigMap owners %+v, want controller %s", cm.OwnerReferences, ms.Name)
		}
		waitEvent(t, ns, string(ranktable.ReasonConfigMapCreated), designCM)
		if got := counterValue(t, "ranktable_configmap_updates_total", "create"); got <= createdBefore {
			t.Errorf("ranktable_configmap_updates_total{action=create} = %v, want more than %v", got, createdBefore)
		}
	})

	t.Run("the pods the operator creates carry the injection", func(t *testing.T) {
		pod := waitPod(t, ns, worker0, "")
		var vol *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == ranktable.VolumeName {
				vol = &pod.Spec.Volumes[i]
			}
		}
		if vol == nil || vol.ConfigMap == nil || vol.ConfigMap.Name != designCM {
			t.Fatalf("volumes %+v: want %s from ConfigMap %s", pod.Spec.Volumes, ranktable.VolumeName, designCM)
		}
		if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != ranktable.InitContainerName {
			t.Fatalf("init containers %+v, want %s", pod.Spec.InitContainers, ranktable.InitContainerName)
		}
		main := pod.Spec.Containers[0]
		if len(main.VolumeMounts) != 1 || main.VolumeMounts[0].MountPath != ranktable.DefaultMountPath || main.VolumeMounts[0].SubPath != "" {
			t.Errorf("inference mounts %+v, want %s without subPath", main.VolumeMounts, ranktable.DefaultMountPath)
		}
		wantEnv := ranktable.DefaultMountPath + "/" + ranktable.DefaultFilename
		if len(main.Env) != 1 || main.Env[0].Name != "RANKTABLEFILE" || main.Env[0].Value != wantEnv {
			t.Errorf("inference env %+v, want RANKTABLEFILE=%s", main.Env, wantEnv)
		}
		waitPod(t, ns, worker1, "")
		tableIs(t, ns, designCM, "", "table still empty without annotations")
		waitEvent(t, ns, string(ranktable.ReasonAnnotationMissing), worker0)
	})

	t.Run("annotations complete the design's exact table", func(t *testing.T) {
		for i, name := range []string{worker0, worker1} {
			annotate(t, ns, name, deviceAnnotation(name, fmt.Sprintf("192.168.1.%d", 10+i), "10.20.0", 2+8*i))
		}
		tableIs(t, ns, designCM, designTable(t), "the design's table")
		waitEvent(t, ns, string(ranktable.ReasonGenerated), designCM)
		if n := histogramCount(t, "ranktable_generation_duration_seconds"); n == 0 {
			t.Error("ranktable_generation_duration_seconds has no observations")
		}
	})

	t.Run("a deleted pod resets the table until its replacement is annotated", func(t *testing.T) {
		deletePod(t, ns, worker1)
		tableIs(t, ns, designCM, "", "table reset after the pod went away")
	})

	t.Run("the replacement with new device IPs regenerates the table", func(t *testing.T) {
		annotate(t, ns, worker1, deviceAnnotation(worker1, "192.168.1.11", "10.30.0", 50))
		var cm corev1.ConfigMap
		eventually(t, "regenerated table", func() error {
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: designCM}, &cm); err != nil {
				return err
			}
			return checkRegenerated(cm.Data[ranktable.DefaultFilename])
		})
	})
}

// checkRegenerated checks the table after worker-1 came back on 10.30.0.50..57: the
// first server keeps ranks 0-7 on its old IPs, the second has ranks 8-15 on the new
// ones, and the table is complete.
func checkRegenerated(s string) error {
	var tab table
	if s == "" {
		return fmt.Errorf("table is empty")
	}
	if err := json.Unmarshal([]byte(s), &tab); err != nil {
		return err
	}
	if tab.Status != ranktable.StatusCompleted || len(tab.ServerList) != 2 {
		return fmt.Errorf("status %q with %d servers, want completed with 2", tab.Status, len(tab.ServerList))
	}
	for si, srv := range tab.ServerList {
		if len(srv.Device) != 8 {
			return fmt.Errorf("server %s has %d devices", srv.ServerID, len(srv.Device))
		}
		for di, d := range srv.Device {
			ip := fmt.Sprintf("10.20.0.%d", 2+di)
			if si == 1 {
				ip = fmt.Sprintf("10.30.0.%d", 50+di)
			}
			if d.DeviceIP != ip || d.RankID != fmt.Sprint(8*si+di) {
				return fmt.Errorf("server %s device %s: ip %s rank %s, want ip %s rank %d", srv.ServerID, d.DeviceID, d.DeviceIP, d.RankID, ip, 8*si+di)
			}
		}
	}
	return nil
}

// waitEvent waits for an event with reason regarding the named object (events.k8s.io).
func waitEvent(t *testing.T, ns, reason, regarding string) *eventsv1.Event {
	t.Helper()
	return waitEventUID(t, ns, reason, regarding, "")
}

// waitEventUID is waitEvent for the object with that UID (any, when uid is empty).
func waitEventUID(t *testing.T, ns, reason, regarding string, uid types.UID) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	eventually(t, fmt.Sprintf("event %s about %s", reason, regarding), func() error {
		var list eventsv1.EventList
		if err := admin.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for i := range list.Items {
			e := &list.Items[i]
			if e.Reason == reason && e.Regarding.Name == regarding && (uid == "" || e.Regarding.UID == uid) {
				found = e
				return nil
			}
			seen = append(seen, e.Reason+"/"+e.Regarding.Name)
		}
		return fmt.Errorf("not among %v", seen)
	})
	return found
}

// TestRanktableBrokenGroup: of two serving groups of one owner, the one whose pod has
// a bad device IP fails with an event naming that pod; the other completes.
func TestRanktableBrokenGroup(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	errorsBefore := counterValue(t, "ranktable_generation_errors_total", "")
	ms := newOwner(t, ns, "mixed", 2, nil)
	for g := range 2 {
		for m := range 2 {
			name := podOf(ms.Name, "worker", g, m)
			ann := deviceAnnotation(name, fmt.Sprintf("10.0.%d.%d", g, m), fmt.Sprintf("10.1.%d", g), 1+10*m)
			if g == 1 && m == 0 {
				ann = strings.Replace(ann, `"10.1.1.4"`, `"-1"`, 1)
			}
			annotate(t, ns, name, ann)
		}
	}
	bad := podOf(ms.Name, "worker", 1, 0)

	var a corev1.ConfigMap
	eventually(t, "group 0 completes", func() error {
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mixed-0-worker-ranktable"}, &a); err != nil {
			return err
		}
		if !strings.Contains(a.Data[ranktable.DefaultFilename], `"status": "completed"`) {
			return fmt.Errorf("group 0 table: %q", trim(a.Data[ranktable.DefaultFilename]))
		}
		return nil
	})
	ev := waitEvent(t, ns, string(ranktable.ReasonGenerationFailed), "mixed")
	if !strings.Contains(ev.Note, ns+"/"+bad) || !strings.Contains(ev.Note, "-1") {
		t.Errorf("failure event %q does not name pod %s/%s and its bad IP", ev.Note, ns, bad)
	}
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("failure event type %s, want Warning", ev.Type)
	}
	tableIs(t, ns, "mixed-1-worker-ranktable", "", "group 1 stays empty")
	if got := counterValue(t, "ranktable_generation_errors_total", ""); got <= errorsBefore {
		t.Errorf("ranktable_generation_errors_total = %v, want more than %v", got, errorsBefore)
	}
}

// TestRanktableConflictRetry: another writer bumps the ConfigMap between the
// operator's read and its update; the API server rejects the stale update and the
// operator re-reads, re-plans and converges, keeping the other writer's change.
func TestRanktableConflictRetry(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	var bumps, conflicts atomic.Int32
	restartManager(t, &managerOptions{wrap: func(c client.Client) client.Client {
		return &racingClient{Client: c, race: func(ctx context.Context, obj client.Object) error {
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok || cm.Namespace != ns || cm.Data[ranktable.DefaultFilename] == "" || bumps.Add(1) != 1 {
				return nil
			}
			// The concurrent writer, through the administrator's client.
			var cur corev1.ConfigMap
			if err := admin.Get(ctx, client.ObjectKeyFromObject(cm), &cur); err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&cur.ObjectMeta, "example.com/other-writer", "was here")
			return admin.Update(ctx, &cur)
		}, conflicts: &conflicts}
	}})
	t.Cleanup(func() { restartManager(t, nil) })

	// Pods first, annotations once the empty ConfigMap exists: the table then reaches
	// the API server as an update, which the other writer races.
	designScenario(t, ns, 0)
	tableIs(t, ns, designCM, "", "the empty ConfigMap")
	for i := 0; i < 2; i++ {
		name := podOf("qwen-inference", "worker", 0, i)
		annotate(t, ns, name, deviceAnnotation(name, fmt.Sprintf("192.168.1.%d", 10+i), "10.20.0", 2+8*i))
	}
	cm := tableIs(t, ns, designCM, designTable(t), "the table after a conflict")
	if conflicts.Load() == 0 {
		t.Fatalf("no update conflicted (bumps: %d): the concurrent writer did not race the operator", bumps.Load())
	}
	if cm.Annotations["example.com/other-writer"] != "was here" {
		t.Errorf("the other writer's annotation was lost: %v", cm.Annotations)
	}
}

// TestRanktableOperatorRestart: the operator stops half way (one pod annotated) and a
// new one finishes: the ConfigMap holds the same bytes as without the restart.
func TestRanktableOperatorRestart(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	designScenario(t, ns, 1)
	tableIs(t, ns, designCM, "", "empty table with one of two pods annotated")
	if err := stopManager(); err != nil {
		t.Fatal(err)
	}
	name := podOf("qwen-inference", "worker", 0, 1)
	annotate(t, ns, name, deviceAnnotation(name, "192.168.1.11", "10.20.0", 10))
	if err := startManager(nil); err != nil {
		t.Fatal(err)
	}
	tableIs(t, ns, designCM, designTable(t), "the design's table after the restart")
}

// TestRanktableRequeueTimeout: a group that waits for an annotation that never comes
// fails once the timeout passes, with nothing changing in the cluster meanwhile: only
// the requeue the plan asks for brings the operator back.
func TestRanktableRequeueTimeout(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	restartManager(t, &managerOptions{timeout: 3 * time.Second})
	t.Cleanup(func() { restartManager(t, nil) })
	designScenario(t, ns, 1)
	start := time.Now()
	ev := waitEvent(t, ns, string(ranktable.ReasonGenerationFailed), "qwen-inference")
	if !strings.Contains(ev.Note, ranktable.ErrTimeout.Error()) {
		t.Errorf("failure event %q does not say it timed out", ev.Note)
	}
	// Creation timestamps have one-second precision, so the 3s timeout may end up to a
	// second early.
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the group failed after %s, long before the 3s timeout", waited)
	}
	tableIs(t, ns, designCM, "", "no partial table after the timeout")
}

// TestRanktableLongNames: the longest names a ModelServing's pods can be created with
// (52 characters, so that the revision label <name>-<hash> is a label value; a role
// of 20) give a long ConfigMap name, and the API server accepts the name and the
// library's labels and annotations.
func TestRanktableLongNames(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	name, r := strings.Repeat("o", 52), strings.Repeat("r", 20)
	newOwner(t, ns, name, 1, nil, role{r, 1})
	want := ranktable.ConfigMapName(name, ranktable.GroupKey{Group: name + "-0", Role: r})
	pod := podOf(name, r, 0, 0)
	annotate(t, ns, pod, deviceAnnotation(pod, "10.0.0.1", "10.2.0", 1))
	var cm corev1.ConfigMap
	eventually(t, "ConfigMap of the long-named owner", func() error {
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: want}, &cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[ranktable.DefaultFilename], `"completed"`) {
			return fmt.Errorf("table %q", trim(cm.Data[ranktable.DefaultFilename]))
		}
		return nil
	})
	if cm.Annotations[ranktable.AnnotationContentHash] == "" || cm.Annotations[ranktable.AnnotationPodsHash] == "" {
		t.Errorf("annotations %v lack the library's hashes", cm.Annotations)
	}
}

// TestRanktableLevels: at role level each role of a serving group gets its table; the
// level annotation on the ModelServing makes one table of the whole group, which
// every pod of the group mounts.
func TestRanktableLevels(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	roles := []role{{"prefill", 1}, {"decode", 1}}
	annotateAll := func(ms string) {
		for i, r := range roles {
			pod := podOf(ms, r.name, 0, 0)
			annotate(t, ns, pod, deviceAnnotation(pod, fmt.Sprintf("192.168.2.%d", 10+i), "10.40.0", 2+8*i))
		}
	}
	servers := func(n int) func(table, string) error {
		return func(tab table, raw string) error {
			if tab.Status != ranktable.StatusCompleted || len(tab.ServerList) != n {
				return fmt.Errorf("want a completed table of %d servers: %s", n, trim(raw))
			}
			return nil
		}
	}

	t.Run("role level: a table per role", func(t *testing.T) {
		newOwner(t, ns, "split", 1, nil, roles...)
		annotateAll("split")
		for _, r := range roles {
			waitTable(t, ns, "split-0-"+r.name+"-ranktable", "table of role "+r.name, servers(1))
			if got := mountedConfigMap(waitPod(t, ns, podOf("split", r.name, 0, 0), "")); got != "split-0-"+r.name+"-ranktable" {
				t.Errorf("pod of role %s mounts ConfigMap %q", r.name, got)
			}
		}
	})

	t.Run("group level: one table of both roles", func(t *testing.T) {
		newOwner(t, ns, "whole", 1, map[string]string{servingv1.AnnotationRanktableLevel: string(ranktable.LevelGroup)}, roles...)
		annotateAll("whole")
		waitTable(t, ns, "whole-0-ranktable", "table of the serving group", servers(2))
		for _, r := range roles {
			if got := mountedConfigMap(waitPod(t, ns, podOf("whole", r.name, 0, 0), "")); got != "whole-0-ranktable" {
				t.Errorf("pod of role %s mounts ConfigMap %q, want whole-0-ranktable", r.name, got)
			}
		}
	})
}

// mountedConfigMap is the ConfigMap of the pod's ranktable volume.
func mountedConfigMap(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == ranktable.VolumeName && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// counterValue reads a counter from controller-runtime's metrics registry (as the
// metrics endpoint serves it), summing the series whose action label is action
// ("" for any).
func counterValue(t *testing.T, name, action string) float64 {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		found = true
		for _, m := range f.GetMetric() {
			ok := action == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "action" && l.GetValue() == action {
					ok = true
				}
			}
			if ok {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	if !found && action == "" {
		t.Fatalf("metric %s is not registered", name)
	}
	return sum
}

// histogramCount returns how many observations a histogram of the registry holds.
func histogramCount(t *testing.T, name string) uint64 {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			var n uint64
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	t.Fatalf("metric %s is not registered", name)
	return 0
}

// racingClient is the operator's real client with a hook that runs another writer just
// before each update reaches the API server, and a count of the conflicts the API
// server answers.
type racingClient struct {
	client.Client
	race      func(context.Context, client.Object) error
	conflicts *atomic.Int32
}

func (c *racingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.race(ctx, obj); err != nil {
		return err
	}
	err := c.Client.Update(ctx, obj, opts...)
	if apierrors.IsConflict(err) {
		c.conflicts.Add(1)
	}
	return err
}

// TestRanktableGangSurge: a Gang rollout with a surge serving group keeps the tables
// whole: the surge group, whose index is beyond spec.replicas, gets the table its pod
// mounts, and once the old group is gone the ModelServing is ranktable-ready with the
// new group alone.
func TestRanktableGangSurge(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, 0)
	ms := newOwner(t, ns, "surge", 1, nil, role{"worker", 1})
	editModelServing(t, ms, func(ms *servingv1.ModelServing) {
		ms.Spec.RolloutStrategy = servingv1.RolloutStrategy{Mode: servingv1.GangMode,
			MaxUnavailable: intOrStr(intstr.FromInt(0)), MaxSurge: intOrStr(intstr.FromInt(1))}
	})
	first := podOf("surge", "worker", 0, 0)
	annotate(t, ns, first, deviceAnnotation(first, "192.168.3.10", "10.50.0", 2))
	condition(t, ns, "surge", "ready before the rollout", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady))
	// The group must serve first: a rollout updates an unavailable group in place
	// (that costs no availability), and surges only for an available one.
	eventually(t, "the serving group available", func() error {
		if cur := getMS(t, ms); cur.Status.AvailableReplicas != 1 {
			return fmt.Errorf("%d serving groups available", cur.Status.AvailableReplicas)
		}
		return nil
	})

	editModelServing(t, ms, setImage("busybox:1.37"))
	var pod corev1.Pod
	eventually(t, "the rollout replaced the serving group", func() error {
		var list corev1.PodList
		if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{servingv1.LabelName: "surge"}); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name == first || list.Items[0].Spec.Containers[0].Image != "busybox:1.37" {
			return fmt.Errorf("pods %v", describePodList(list.Items))
		}
		pod = list.Items[0]
		return nil
	})
	cmName := mountedConfigMap(&pod)
	var cm corev1.ConfigMap
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: cmName}, &cm); err != nil {
		t.Fatalf("the ConfigMap %q pod %s mounts: %v", cmName, pod.Name, err)
	}
	annotate(t, ns, pod.Name, deviceAnnotation(pod.Name, "192.168.3.11", "10.50.0", 20))
	condition(t, ns, "surge", "ready after the rollout", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady, "1 ranktable groups complete"))
	waitTable(t, ns, cmName, "the new group's table", func(tab table, raw string) error {
		if len(tab.ServerList) != 1 || tab.ServerList[0].ServerID != "192.168.3.11" {
			return fmt.Errorf("want the new pod's server alone: %s", trim(raw))
		}
		return nil
	})
}

func describePodList(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Spec.Containers[0].Image)
	}
	return out
}

// TestRanktableScaleDownDeletesTable: a serving group scaled away loses its ranktable
// ConfigMap (the plan knows the expected groups, so it deletes the table of one no
// longer expected), with an event; the remaining group keeps its table.
func TestRanktableScaleDownDeletesTable(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	ms := newOwner(t, ns, "shrink", 2, nil)
	table := func(g string) string { return "shrink-" + g + "-worker-ranktable" }
	for _, g := range []string{"0", "1"} {
		eventually(t, "ConfigMap "+table(g), func() error {
			return admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: table(g)}, &corev1.ConfigMap{})
		})
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))
	if err := admin.Patch(ctx, ms, patch); err != nil {
		t.Fatal(err)
	}
	// The ModelServing controller picks the group to remove; the remaining one is
	// that of the pods left.
	var kept, gone string
	eventually(t, "one serving group left, and only its table", func() error {
		var pods corev1.PodList
		if err := admin.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		groups := map[string]bool{}
		for _, p := range pods.Items {
			groups[p.Labels[servingv1.LabelGroupIndex]] = true
		}
		if len(groups) != 1 {
			return fmt.Errorf("pods of groups %v", groups)
		}
		kept, gone = "0", "1"
		if groups["1"] {
			kept, gone = "1", "0"
		}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: table(kept)}, &corev1.ConfigMap{}); err != nil {
			return fmt.Errorf("the remaining group's ConfigMap: %w", err)
		}
		err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: table(gone)}, &corev1.ConfigMap{})
		if err == nil {
			return fmt.Errorf("ConfigMap %s of the removed group is still there", table(gone))
		}
		return client.IgnoreNotFound(err)
	})
	waitEvent(t, ns, string(ranktable.ReasonConfigMapDeleted), table(gone))
}
