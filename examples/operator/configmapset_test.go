package operator_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/revision"
)

// newSet creates a ConfigMapSet selecting app=web pods, mounting data into container
// "main" at /etc/app.
func newSet(t *testing.T, ns, name string, data map[string]string, updateOrder bool) *revision.ConfigMapSet {
	t.Helper()
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: revision.ConfigMapSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Data:       data,
			Containers: []revision.ContainerInjectSpec{{Name: "main", MountPath: "/etc/app"}},
			// Label pods picked for an update until they confirm it.
			InjectUpdateOrder: updateOrder,
		},
	}
	if err := admin.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	// Wait for the first reconcile, so the pods created next are not "cold" (created
	// before the set's containers were first seen).
	eventually(t, "first reconcile of the set", func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		if set.Status.LastContainersTimestamp == nil || set.Status.UpdateRevision == "" {
			return fmt.Errorf("status %+v", set.Status)
		}
		return nil
	})
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second precision
	return set
}

// newWebPod creates an app=web pod through the webhook.
func newWebPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		// The ServiceAccount the reload tests bind config/reload's Role to.
		Spec: corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	if err := admin.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return pod
}

// runNode plays the kubelet and the node agent for a pod: every container runs (started
// now, after any wanted revision's timestamp), the pod is ready, and the wanted
// revision is confirmed with revision.MarkCurrent when the library says it may be.
//
// The ConfigMapSet tests keep this hand-played node rather than testenv's kubelet:
// the revision protocol compares container start times with revision timestamps
// (one-second precision), which the tests set on purpose, and their pods (created
// by the test, not a controller) are never deleted, so binding and graceful
// termination would change nothing. The pods stay unbound.
func runNode(t *testing.T, ns, name string, set *revision.ConfigMapSet) {
	t.Helper()
	ctx := context.Background()
	var pod corev1.Pod
	if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(2 * time.Second))
	markRunning(&pod, started, func(corev1.Container) metav1.Time { return started })
	if err := admin.Status().Update(ctx, &pod); err != nil {
		t.Fatalf("pod %s status: %v", name, err)
	}
	patch, ok, err := revision.MarkCurrent(&pod, set, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("pod %s: MarkCurrent says not ready to confirm", name)
	}
	b, err := patch.MergePatch()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Patch(ctx, &pod, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatalf("pod %s: confirming revision: %v", name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// wantedRevisions returns each pod's wanted revision (updateRevision annotation).
func wantedRevisions(t *testing.T, ns string, set *revision.ConfigMapSet, pods []string) map[string]string {
	t.Helper()
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range pods {
		var pod corev1.Pod
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
			t.Fatal(err)
		}
		out[name] = pod.Annotations[keys.UpdateRevision]
	}
	return out
}

// waitCondition waits until the set's Complete condition has the status and reason
// and a message starting with msg, observed at the set's generation.
func waitCondition(t *testing.T, set *revision.ConfigMapSet, status metav1.ConditionStatus, reason kplan.Reason, msg string) {
	t.Helper()
	eventually(t, fmt.Sprintf("condition Complete=%s/%s", status, reason), func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		c := meta.FindStatusCondition(set.Status.Conditions, configmapset.ConditionComplete)
		if c == nil || c.Status != status || c.Reason != string(reason) || !strings.HasPrefix(c.Message, msg) || c.ObservedGeneration != set.Generation {
			return fmt.Errorf("condition %+v (generation %d)", c, set.Generation)
		}
		return nil
	})
}

func countRevision(m map[string]string, rev string) int {
	n := 0
	for _, v := range m {
		if v == rev {
			n++
		}
	}
	return n
}

// hubRevisions returns the revision names the hub holds, oldest first.
func hubRevisions(ns, set string) ([]string, error) {
	var cm corev1.ConfigMap
	if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: revision.HubName(set)}, &cm); err != nil {
		return nil, err
	}
	hub, err := revision.DecodeHub(&cm)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range hub.Revisions {
		names = append(names, r.Name)
	}
	return names, nil
}

// TestConfigMapSetPartition: four pods on revision 1; new data with partition 50% puts
// two pods on revision 2 with both revisions in the hub; partition 100% rolls them back.
func TestConfigMapSetPartition(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	v1 := map[string]string{"app.conf": "threads=4\n"}
	v2 := map[string]string{"app.conf": "threads=8\n"}
	set := newSet(t, ns, "web-config", v1, true)
	r1, r2 := revision.RevisionHash(v1, 0), revision.RevisionHash(v2, 0)
	if set.Status.UpdateRevision != r1 {
		t.Fatalf("status.updateRevision %s, want %s", set.Status.UpdateRevision, r1)
	}
	pods := []string{"web-0", "web-1", "web-2", "web-3"}
	for _, p := range pods {
		newWebPod(t, ns, p)
	}

	t.Run("the webhook injects the set into new pods", func(t *testing.T) {
		var pod corev1.Pod
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, &pod); err != nil {
			t.Fatal(err)
		}
		vols := map[string]bool{}
		for _, v := range pod.Spec.Volumes {
			vols[v.Name] = true
		}
		if !vols[revision.VolumeName(set.Name)] || !vols[revision.HubVolumeName(set.Name)] {
			t.Errorf("volumes %v, want %s and %s", vols, revision.VolumeName(set.Name), revision.HubVolumeName(set.Name))
		}
		sidecar := revision.ReloadSidecarName(set.Name)
		if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool {
			return c.Name == sidecar && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}) {
			t.Errorf("no native sidecar %s among init containers %+v", sidecar, pod.Spec.InitContainers)
		}
		if !slices.ContainsFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == "/etc/app" && m.ReadOnly
		}) {
			t.Errorf("main mounts %+v, want read-only /etc/app", pod.Spec.Containers[0].VolumeMounts)
		}
		if got := wantedRevisions(t, ns, set, pods); countRevision(got, r1) != 4 {
			t.Errorf("wanted revisions %v, want all %s", got, r1)
		}
	})

	t.Run("until the node side confirms revision 1, the set is not complete", func(t *testing.T) {
		waitCondition(t, set, metav1.ConditionFalse, revision.ReasonRevisionNotConfirmed, "4 pods wait; pod web-0: asked for revision "+r1)
	})

	t.Run("revision 1 becomes current once every pod runs it", func(t *testing.T) {
		for _, p := range pods {
			runNode(t, ns, p, set)
		}
		eventually(t, "currentRevision r1", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
				return err
			}
			if set.Status.CurrentRevision != r1 || set.Status.UpdatedPods != 4 || set.Status.ReadyPods != 4 || set.Status.MatchedPods != 4 {
				return fmt.Errorf("status %+v", set.Status)
			}
			return nil
		})
		waitCondition(t, set, metav1.ConditionTrue, revision.ReasonRolloutComplete, "every pod runs revision "+r1)
	})

	t.Run("new data with partition 50% moves two of four pods", func(t *testing.T) {
		set.Spec.Data = v2
		half := intstr.FromString("50%")
		set.Spec.UpdateStrategy.Partition = &half
		if err := admin.Update(ctx, set); err != nil {
			t.Fatal(err)
		}
		eventually(t, "hub with two revisions and two pods on r2", func() error {
			revs, err := hubRevisions(ns, set.Name)
			if err != nil {
				return err
			}
			if !slices.Equal(revs, []string{r1, r2}) {
				return fmt.Errorf("hub revisions %v, want [%s %s]", revs, r1, r2)
			}
			got := wantedRevisions(t, ns, set, pods)
			if countRevision(got, r2) != 2 || countRevision(got, r1) != 2 {
				return fmt.Errorf("wanted revisions %v, want two %s and two %s", got, r2, r1)
			}
			return nil
		})
		keys, _ := revision.KeysFor(set.Name)
		for name, rev := range wantedRevisions(t, ns, set, pods) {
			var pod corev1.Pod
			if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod); err != nil {
				t.Fatal(err)
			}
			if _, labelled := pod.Labels[keys.UpdateOrder]; labelled != (rev == r2) {
				t.Errorf("pod %s on %s: update-order label %s present = %v, want %v", name, rev, keys.UpdateOrder, labelled, rev == r2)
			}
		}
		eventually(t, "status", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
				return err
			}
			if set.Status.UpdateRevision != r2 || set.Status.CurrentRevision != r1 || set.Status.ObservedGeneration != set.Generation {
				return fmt.Errorf("status %+v (generation %d)", set.Status, set.Generation)
			}
			return nil
		})
		waitCondition(t, set, metav1.ConditionFalse, revision.ReasonRevisionNotConfirmed, "2 pods wait; pod web-")
	})

	t.Run("once the two confirm revision 2 the set is complete as far as the partition allows", func(t *testing.T) {
		for name, rev := range wantedRevisions(t, ns, set, pods) {
			if rev == r2 {
				runNode(t, ns, name, set)
			}
		}
		waitCondition(t, set, metav1.ConditionTrue, revision.ReasonPartitioned, "2 of 4 pods run revision "+r2+"; the partition keeps 2 on older revisions")
	})

	t.Run("partition 100% rolls the two pods back", func(t *testing.T) {
		all := intstr.FromString("100%")
		set.Spec.UpdateStrategy.Partition = &all
		if err := admin.Update(ctx, set); err != nil {
			t.Fatal(err)
		}
		eventually(t, "every pod back on r1", func() error {
			got := wantedRevisions(t, ns, set, pods)
			if countRevision(got, r1) != 4 {
				return fmt.Errorf("wanted revisions %v, want all %s", got, r1)
			}
			return nil
		})
		revs, err := hubRevisions(ns, set.Name)
		if err != nil || !slices.Equal(revs, []string{r1, r2}) {
			t.Errorf("hub revisions %v (%v), want both kept", revs, err)
		}
	})
}

// TestConfigMapSetLongName: a set name too long to appear whole in annotation keys
// gets hash-shortened keys, which the API server accepts on pods.
func TestConfigMapSetLongName(t *testing.T) {
	ns := newNamespace(t)
	name := "a-configuration-set-with-a-rather-long-name-" + strings.Repeat("x", 40)
	set := newSet(t, ns, name, map[string]string{"a": "1"}, false)
	newWebPod(t, ns, "web-0")
	keys, err := revision.KeysFor(name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(keys.UpdateRevision, name) {
		t.Fatalf("key %s holds the whole name: it should have been shortened", keys.UpdateRevision)
	}
	got := wantedRevisions(t, ns, set, []string{"web-0"})
	if got["web-0"] != set.Status.UpdateRevision {
		t.Errorf("pod revision %q under %s, want %s", got["web-0"], keys.UpdateRevision, set.Status.UpdateRevision)
	}
	runNode(t, ns, "web-0", set)
	eventually(t, "long-named set completes", func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		if set.Status.CurrentRevision == "" || set.Status.UpdatedReadyPods != 1 {
			return fmt.Errorf("status %+v", set.Status)
		}
		return nil
	})
}

// TestConfigMapSetCRDRoundTrip: an object with every spec and status field set comes
// back from the API server unchanged, so the hand-written CRD schema prunes nothing.
func TestConfigMapSetCRDRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	limit, coll := int32(3), int32(2)
	part, maxU := intstr.FromString("25%"), intstr.FromInt32(2)
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	spec := revision.ConfigMapSetSpec{
		Selector: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"app": "nothing-matches-this"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}},
		},
		Data: map[string]string{"f": "x"},
		Containers: []revision.ContainerInjectSpec{
			{Name: "main", MountPath: "/etc/a"},
			{NameFrom: &revision.ValueFromSource{FieldRef: corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['sidecar']"}}, MountPath: "/etc/b"},
		},
		RevisionHistoryLimit: &limit,
		InjectUpdateOrder:    true,
		UpdateStrategy:       revision.ConfigMapSetUpdateStrategy{Type: revision.RollingUpdate, Partition: &part, RestartInjectedContainers: true, RestartMethod: revision.RestartExternal, MaxUnavailable: &maxU},
		InjectStrategy:       revision.ConfigMapSetInjectStrategy{Pause: true},
	}
	status := revision.ConfigMapSetStatus{
		ObservedGeneration: 7, CurrentRevision: "c", UpdateRevision: "u", CollisionCount: &coll,
		MatchedPods: 4, UpdatedPods: 3, ReadyPods: 2, UpdatedReadyPods: 1,
		LastContainersTimestamp: &now, LastContainersHash: "h",
		Conditions: []metav1.Condition{{Type: configmapset.ConditionComplete, Status: metav1.ConditionFalse, ObservedGeneration: 7,
			LastTransitionTime: now, Reason: string(revision.ReasonPodNotReady), Message: "pod p: not ready"}},
	}
	if err := checkAllSet(reflect.ValueOf(spec), "spec"); err != nil {
		t.Fatal(err)
	}
	if err := checkAllSet(reflect.ValueOf(status), "status"); err != nil {
		t.Fatal(err)
	}
	// Stop the operator so it does not rewrite the status meanwhile.
	if err := stopManager(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := startManager(nil); err != nil {
			t.Fatal(err)
		}
	})
	set := &revision.ConfigMapSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "every-field"}, Spec: spec}
	if err := admin.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	set.Status = status
	if err := admin.Status().Update(ctx, set); err != nil {
		t.Fatal(err)
	}
	var got revision.ConfigMapSet
	if err := admin.Get(ctx, client.ObjectKeyFromObject(set), &got); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, spec) {
		t.Errorf("spec changed by the API server:\n got %+v\nwant %+v", got.Spec, spec)
	}
	if !equality.Semantic.DeepEqual(got.Status, status) {
		t.Errorf("status changed by the API server:\n got %+v\nwant %+v", got.Status, status)
	}
}

// checkAllSet fails when a field of v (recursively through structs) has its zero
// value: the round trip would not notice a pruned field that was never set.
func checkAllSet(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return fmt.Errorf("%s is not set", path)
		}
		return checkAllSet(v.Elem(), path)
	case reflect.Struct:
		if v.Type().PkgPath() != "github.com/kplan-dev/kplan/revision" && v.Type() != reflect.TypeOf(corev1.ObjectFieldSelector{}) && v.Type() != reflect.TypeOf(metav1.LabelSelector{}) {
			if v.IsZero() {
				return fmt.Errorf("%s is not set", path)
			}
			return nil
		}
		for i := 0; i < v.NumField(); i++ {
			if err := checkAllSet(v.Field(i), path+"."+v.Type().Field(i).Name); err != nil {
				return err
			}
		}
		return nil
	default:
		if v.IsZero() {
			return fmt.Errorf("%s is not set", path)
		}
		return nil
	}
}

// TestStaleUIDPatchIsRefused checks what the ConfigMapSet controller relies on: a merge
// patch that names another UID (the pod was re-created under the same name) fails
// instead of annotating the new pod.
func TestStaleUIDPatchIsRefused(t *testing.T) {
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	if err := admin.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"uid":"00000000-0000-0000-0000-000000000000","annotations":{"a":"b"}}}`)
	if err := admin.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, patch)); err == nil {
		t.Fatal("a patch with a stale UID was accepted")
	}
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if _, ok := pod.Annotations["a"]; ok {
		t.Error("the refused patch was applied")
	}
}
