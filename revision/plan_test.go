package revision

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/exact"
)

var now = t0.Add(time.Hour)

// wanted returns each pod's wanted revision after applying the plan, by pod name.
func wanted(pods []*corev1.Pod, res Result) map[string]string {
	out := map[string]string{}
	for _, p := range applyPatches(pods, res.Pods) {
		out[p.Name] = p.Annotations[testKeys.UpdateRevision]
	}
	return out
}

func applyPatches(pods []*corev1.Pod, patches []PodPatch) []*corev1.Pod {
	byName := map[string]PodPatch{}
	for _, pp := range patches {
		byName[pp.Namespace+"/"+pp.Name] = pp
	}
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		if pp, ok := byName[p.Namespace+"/"+p.Name]; ok {
			out[i] = pp.Apply(p)
		} else {
			out[i] = p
		}
	}
	return out
}

func mustPlan(t *testing.T, in Input) Result {
	t.Helper()
	res, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPlanFirstReconcile(t *testing.T) {
	set := newSet(data("aaa"))
	pods := []*corev1.Pod{revPod("p-1", "", "", true), revPod("p-0", "", "", true)}
	res := mustPlan(t, Input{Set: set, Pods: pods, Now: now})

	t.Run("the hub is created with the one revision", func(t *testing.T) {
		if cm := res.Hub.ConfigMap; res.Hub.Action != kplan.ActionCreate || cm.Name != "cms1-hub" || cm.Namespace != "ns" {
			t.Fatalf("hub = %+v", res.Hub)
		}
		h, err := DecodeHub(res.Hub.ConfigMap)
		if err != nil || len(h.Revisions) != 1 || h.Revisions[0].Name != RevisionHash(data("aaa"), 0) {
			t.Fatalf("hub %v, %v", h, err)
		}
	})
	t.Run("every pod without a revision gets the update revision", func(t *testing.T) {
		w := wanted(pods, res)
		for n, r := range w {
			if r != res.Status.UpdateRevision {
				t.Errorf("%s wants %q", n, r)
			}
		}
		if len(res.Pods) != 2 || res.Pods[0].Name != "p-0" {
			t.Errorf("patches not in name order: %+v", res.Pods)
		}
	})
	t.Run("the status counts the pods and the rollout is not complete", func(t *testing.T) {
		st := res.Status
		if st.MatchedPods != 2 || st.ReadyPods != 2 || st.UpdatedPods != 0 || st.CurrentRevision != "" || st.ObservedGeneration != 1 {
			t.Errorf("status %+v", st)
		}
		if st.LastContainersTimestamp == nil || !st.LastContainersTimestamp.Time.Equal(t0) {
			t.Errorf("lastContainersTimestamp %v, want the set's creation", st.LastContainersTimestamp)
		}
	})
}

func TestPlanPartitionAndPriority(t *testing.T) {
	hub, revs := hubOf(t, data("old"), data("cur"))
	old, cur := revs[0], revs[1]
	upd := RevisionHash(data("new"), 0)
	set := newSet(data("new"), partition(intstr.FromString("50%")))
	set.Status.CurrentRevision = cur
	pods := []*corev1.Pod{
		revPod("a", cur, cur, true),
		revPod("b", cur, cur, true),
		revPod("c", old, old, true),
		revPod("d", "gone", "gone", true),
		revPod("e", old, old, true),
		revPod("f", cur, cur, true),
	}
	// 50% of 6 = 3 kept, so 3 update: d (not in hub), then c and e (old, by name).
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	w := wanted(pods, res)
	want := map[string]string{"a": cur, "b": cur, "c": upd, "d": upd, "e": upd, "f": cur}
	for n := range want {
		if w[n] != want[n] {
			t.Errorf("pod %s wants %s, want %s", n, w[n], want[n])
		}
	}
	t.Run("the patch carries the revision, its timestamp and no label", func(t *testing.T) {
		pp := res.Pods[0]
		if *pp.Annotations[testKeys.UpdateRevisionTimestamp] != FormatTimestamp(now) || pp.Labels != nil {
			t.Errorf("patch %+v", pp)
		}
		b, err := pp.MergePatch()
		if err != nil || !strings.Contains(string(b), `"apps.kruise.io/configmapset.cms1.updateRevision":"`+upd+`"`) {
			t.Errorf("merge patch %s, %v", b, err)
		}
	})
	t.Run("raising the partition rolls the unconfirmed pods back to the current revision first", func(t *testing.T) {
		after := applyPatches(pods, res.Pods)
		after[2] = revPod("c", upd, upd, true) // c confirmed the update
		set2 := set.DeepCopy()
		set2.Spec.UpdateStrategy.Partition = &intstr.IntOrString{Type: intstr.Int, IntVal: 5}
		res2 := mustPlan(t, Input{Set: set2, Hub: res.Hub.ConfigMap, Pods: after, Now: now})
		w := wanted(after, res2)
		// 5 kept -> 1 updated; d and e have not confirmed: e (reverse name) then d go back.
		if w["c"] != upd || w["d"] != cur || w["e"] != cur {
			t.Errorf("after rollback %v", w)
		}
	})
}

func TestPlanMaxUnavailable(t *testing.T) {
	hub, revs := hubOf(t, data("cur"))
	cur := revs[0]
	set := newSet(data("new"), restartWith(intstr.FromInt(2)))
	set.Status.CurrentRevision = cur
	pods := []*corev1.Pod{
		revPod("a", cur, cur, true),
		revPod("b", cur, cur, true),
		revPod("c", cur, cur, false),
		revPod("d", cur, cur, true),
		revPod("e", cur, cur, true),
	}
	// maxUnavailable 2, c is not ready: budget 1 available pod plus c itself (free).
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	upd := res.Status.UpdateRevision
	w := wanted(pods, res)
	got := 0
	for _, r := range w {
		if r == upd {
			got++
		}
	}
	if got != 2 || w["a"] != upd || w["c"] != upd {
		t.Errorf("updated %d pods: %v; want a and c", got, w)
	}
}

func TestPlanRolloutCompletes(t *testing.T) {
	hub, revs := hubOf(t, data("cur"), data("new"))
	set := newSet(data("new"))
	set.Status.CurrentRevision = revs[0]
	pods := []*corev1.Pod{revPod("a", revs[1], revs[1], true), revPod("b", revs[1], revs[1], true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if res.Status.CurrentRevision != revs[1] || res.Status.UpdatedReadyPods != 2 {
		t.Errorf("status %+v", res.Status)
	}
	if res.Hub.Action != kplan.ActionNone {
		t.Errorf("unchanged hub rewritten: %s", res.Hub.Action)
	}
	if diff := cmp.Diff(hub, res.Hub.ConfigMap, exact.Options); diff != "" || res.Hub.ConfigMap == hub {
		t.Errorf("an unchanged hub is not a copy of the one read (-read +result):\n%s", diff)
	}
	if len(res.Events) != 1 || res.Events[0].Reason != ReasonRolloutComplete {
		t.Errorf("events %+v", res.Events)
	}
}

func TestPlanReappliedDataMovesRevision(t *testing.T) {
	hub, revs := hubOf(t, data("a"), data("b"))
	set := newSet(data("a"))
	set.Status.CurrentRevision = revs[1]
	res := mustPlan(t, Input{Set: set, Hub: hub, Now: now})
	if res.Status.UpdateRevision != revs[0] || len(res.Revisions) != 2 || res.Revisions[1] != revs[0] {
		t.Errorf("revisions %v, update %s", res.Revisions, res.Status.UpdateRevision)
	}
}

func TestPlanTrimKeepsLiveRevisions(t *testing.T) {
	hub, revs := hubOf(t, data("1"), data("2"), data("3"), data("4"))
	zero := int32(0)
	set := newSet(data("5"), func(s *ConfigMapSet) { s.Spec.RevisionHistoryLimit = &zero })
	set.Status.CurrentRevision = revs[2]
	pods := []*corev1.Pod{revPod("a", revs[2], revs[0], true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	// Live: 1 (a's current), 3 (current), 5 (update; a is moved to it). 2 and 4 go.
	want := []string{revs[0], revs[2], res.Status.UpdateRevision}
	if strings.Join(res.Revisions, ",") != strings.Join(want, ",") {
		t.Errorf("revisions %v, want %v", res.Revisions, want)
	}
}

// A pod moved off a revision in this reconcile keeps it in the hub: the pod patch may
// land after the hub write, or fail its precondition, and the pod still reads it.
func TestPlanTrimKeepsRevisionPodsAreMovedOff(t *testing.T) {
	hub, revs := hubOf(t, data("A"), data("B"), data("C"))
	zero := int32(0)
	set := newSet(data("C"), func(s *ConfigMapSet) { s.Spec.RevisionHistoryLimit = &zero })
	set.Status.CurrentRevision = revs[0]
	pods := []*corev1.Pod{revPod("a", revs[1], revs[0], true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if len(res.Pods) != 1 || *res.Pods[0].Annotations[testKeys.UpdateRevision] != revs[2] {
		t.Fatalf("pod a is not moved to %s: %+v", revs[2], res.Pods)
	}
	if want := []string{revs[0], revs[1], revs[2]}; !slices.Equal(res.Revisions, want) {
		t.Errorf("revisions %v, want %v (B, which pod a wanted, trimmed)", res.Revisions, want)
	}
}

func TestPlanUpdateOrderLabel(t *testing.T) {
	hub, revs := hubOf(t, data("cur"))
	set := newSet(data("new"), func(s *ConfigMapSet) { s.Spec.InjectUpdateOrder = true })
	set.Status.CurrentRevision = revs[0]
	pods := []*corev1.Pod{revPod("a", revs[0], revs[0], true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if len(res.Pods) != 1 || *res.Pods[0].Labels[testKeys.UpdateOrder] != UpdateOrderValue {
		t.Fatalf("patch %+v", res.Pods)
	}
	t.Run("the label goes once the pod confirms the revision", func(t *testing.T) {
		p := applyPatches(pods, res.Pods)[0]
		p.Annotations[testKeys.CurrentRevision] = res.Status.UpdateRevision
		set2 := set.DeepCopy()
		set2.Status = res.Status
		res2 := mustPlan(t, Input{Set: set2, Hub: res.Hub.ConfigMap, Pods: []*corev1.Pod{p}, Now: now})
		if len(res2.Pods) != 1 || res2.Pods[0].Labels[testKeys.UpdateOrder] != nil || res2.Pods[0].Annotations != nil {
			t.Errorf("patch %+v", res2.Pods)
		}
	})
}

func annotationBytes(p *corev1.Pod) int {
	n := 0
	for k, v := range p.Annotations {
		n += len(k) + len(v)
	}
	return n
}

func TestPlanErrors(t *testing.T) {
	hub, revs := hubOf(t, data("a"))
	bad := revPod("x", revs[0], "", true)
	bad.Annotations[testKeys.UpdateRevisionTimestamp] = "yesterday"
	// A pod the API server accepted, 10 bytes under the limit: the patch adds the
	// wanted revision and its timestamp and would take it over.
	big := revPod("y", "", "", true)
	big.Annotations = map[string]string{"huge": strings.Repeat("x", 256*1024-len("huge")-10)}
	// The same pod already holding a revision: the patch does not grow it.
	bigHeld := revPod("y", revs[0], revs[0], true)
	bigHeld.Annotations["huge"] = strings.Repeat("x", 256*1024-len("huge")-annotationBytes(bigHeld))
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"an invalid spec names the field", Input{Set: newSet(data("a"), func(s *ConfigMapSet) { s.Spec.Containers = nil })}, "spec.containers"},
		{"a corrupt hub names the configmap", Input{Set: newSet(data("a")), Hub: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1-hub"}, Data: map[string]string{HubDataKey: "{"}}}, "configmap ns/cms1-hub: data.revisions"},
		{"a bad timestamp names the pod and annotation", Input{Set: newSet(data("a")), Hub: hub, Pods: []*corev1.Pod{bad}}, "pod ns/x: annotation " + testKeys.UpdateRevisionTimestamp},
		{"a pod listed twice is an error", Input{Set: newSet(data("a")), Hub: hub, Pods: []*corev1.Pod{revPod("z", "", "", true), revPod("z", "", "", true)}}, "pod ns/z: listed twice"},
		{"annotations over 256 KiB are an error", Input{Set: newSet(data("b")), Hub: hub, Pods: []*corev1.Pod{big}}, "pod ns/y: metadata.annotations"},
		{"a hub over 1 MiB is an error naming the sizes", Input{Set: newSet(map[string]string{"f": strings.Repeat("x", MaxHubBytes)})}, "more than the 1048576"},
		{"a missing set is an error", Input{}, "no ConfigMapSet"},
		{"a hub of another name is not the set's hub", Input{Set: newSet(data("a")), Hub: func() *corev1.ConfigMap { h := hub.DeepCopy(); h.Name = "other-hub"; return h }()},
			"configmapset ns/cms1: configmap ns/other-hub is not its hub (ns/cms1-hub)"},
		{"a hub of another namespace is not the set's hub", Input{Set: newSet(data("a")), Hub: func() *corev1.ConfigMap { h := hub.DeepCopy(); h.Namespace = "elsewhere"; return h }()},
			"configmap elsewhere/cms1-hub is not its hub"},
	}
	t.Run("a patch that does not grow full annotations is fine", func(t *testing.T) {
		res, err := Plan(Input{Set: newSet(data("b")), Hub: hub, Pods: []*corev1.Pod{bigHeld}, Now: now})
		if err != nil || len(res.Pods) != 1 {
			t.Errorf("%d patches, %v", len(res.Pods), err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Now = now
			_, err := Plan(in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// Plan used to read pods in input order, so with two bad pods the error named
// whichever came first; it now reads them in name order.
func TestPlanErrorDoesNotDependOnPodOrder(t *testing.T) {
	bad := func(name string) *corev1.Pod {
		p := revPod(name, "r", "", true)
		p.Annotations[testKeys.UpdateRevisionTimestamp] = "yesterday"
		return p
	}
	a, b := bad("a"), bad("b")
	_, err1 := Plan(Input{Set: newSet(data("x")), Pods: []*corev1.Pod{a, b}, Now: now})
	_, err2 := Plan(Input{Set: newSet(data("x")), Pods: []*corev1.Pod{b, a}, Now: now})
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() || !strings.Contains(err1.Error(), "pod ns/a: annotation "+testKeys.UpdateRevisionTimestamp) {
		t.Errorf("%v / %v", err1, err2)
	}
}

// Every event names the set as its Object, with the kind and API version the set's
// TypeMeta gives (kind ConfigMapSet when it is empty, as a typed client leaves it).
func TestPlanEventsNameTheSet(t *testing.T) {
	for _, tm := range []metav1.TypeMeta{{}, {APIVersion: "apps.kplan.dev/v1alpha1", Kind: "ConfigMapSet"}} {
		set := newSet(data("a"))
		set.TypeMeta, set.UID = tm, "set-uid"
		res := mustPlan(t, Input{Set: set, Pods: []*corev1.Pod{revPod("a", "", "", true)}, Now: now})
		want := corev1.ObjectReference{Kind: "ConfigMapSet", APIVersion: tm.APIVersion, Namespace: "ns", Name: "cms1", UID: "set-uid"}
		if len(res.Events) == 0 {
			t.Fatal("no events")
		}
		for _, e := range res.Events {
			if e.Object != want {
				t.Errorf("event %s names %+v, want %+v", e.Reason, e.Object, want)
			}
		}
	}
}

// Plan copies the set's conditions into the new status, which a reconciler then
// updates from Complete and Waiting; the copy shares nothing with the input.
func TestPlanKeepsTheSetsConditions(t *testing.T) {
	set := newSet(data("a"))
	set.Status.Conditions = []metav1.Condition{{Type: "Complete", Status: metav1.ConditionFalse, Reason: string(ReasonPodNotReady), LastTransitionTime: metav1.NewTime(t0)}}
	res := mustPlan(t, Input{Set: set, Now: now})
	if diff := cmp.Diff(set.Status.Conditions, res.Status.Conditions, exact.Options); diff != "" {
		t.Errorf("conditions (-set +status):\n%s", diff)
	}
	res.Status.Conditions[0].Reason = "Changed"
	if set.Status.Conditions[0].Reason != string(ReasonPodNotReady) {
		t.Error("changing the result's conditions changed the set's")
	}
}
