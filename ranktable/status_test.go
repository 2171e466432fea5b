// What a reconciler puts in conditions and writes: each group's Reason and Message,
// and which existing ConfigMaps the plan deletes.

package ranktable

import (
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGroupStatusReasonAndMessage(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	k := GroupKey{"ms-0", "worker-0"}
	pod := func(i int, ann bool) *corev1.Pod { return kthenaPod(o, 0, "worker-0", i, ann, 8) }
	badAnn := pod(1, true)
	badAnn.Annotations[DefaultAnnotationName] = strings.Replace(badAnn.Annotations[DefaultAnnotationName], `"10.0.1.4"`, `"-1"`, 1)
	sameServer := pod(1, true)
	sameServer.Annotations[DefaultAnnotationName] = pod(0, true).Annotations[DefaultAnnotationName]
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ms-0-worker-0-ranktable", Namespace: "default", UID: "x"}}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		expected int
		in       func(*Input)
		phase    Phase
		reason   kplan.Reason
		message  string
	}{
		{"complete", []*corev1.Pod{pod(0, true), pod(1, true)}, 2, nil, PhaseCompleted, ReasonGenerated,
			"group ms-0/worker-0: the table of its 2 pods is complete"},
		{"scaled to zero", nil, 0, nil, PhaseCompleted, ReasonScaledToZero,
			"group ms-0/worker-0 expects no pods: its table is empty"},
		{"a pod absent", []*corev1.Pod{pod(0, true)}, 2, nil, PhaseWaiting, ReasonWaitingForPods,
			"group ms-0/worker-0: waiting for pods: 1 of 2 exist; absent: default/ms-0-worker-0-1"},
		{"a pod absent and one without annotation", []*corev1.Pod{pod(0, false)}, 2, nil, PhaseWaiting, ReasonWaitingForPods,
			"group ms-0/worker-0: waiting for pods: 1 of 2 exist; without annotation ascend.com/ranktable: default/ms-0-worker-0-0; absent: default/ms-0-worker-0-1"},
		{"every pod there, one without annotation", []*corev1.Pod{pod(0, true), pod(1, false)}, 2, nil, PhaseWaiting, ReasonWaitingForAnnotations,
			"group ms-0/worker-0: waiting for annotations: 1 of 2 pods have one; without annotation ascend.com/ranktable: default/ms-0-worker-0-1"},
		{"timed out", []*corev1.Pod{pod(0, true), pod(1, false)}, 3, func(in *Input) { in.Now, in.Timeout = t0.Add(time.Hour), time.Minute },
			PhaseFailed, ReasonWaitTimedOut,
			"group ms-0/worker-0: timed out waiting for pod annotations: 1 of 3 pods ready after 1m0s; absent: default/ms-0-worker-0-2; without annotation ascend.com/ranktable: default/ms-0-worker-0-1"},
		{"an invalid annotation", []*corev1.Pod{pod(0, true), badAnn}, 2, nil, PhaseFailed, ReasonInvalidAnnotation,
			`group ms-0/worker-0: pod default/ms-0-worker-0-1: annotation ascend.com/ranktable: devices[3].device_ip: "-1" is not an IP address`},
		{"too many pods", []*corev1.Pod{pod(0, true), pod(1, true)}, 1, nil, PhaseFailed, ReasonTooManyPods,
			"group ms-0/worker-0 has 2 pods, expected 1"},
		{"two pods give the same devices", []*corev1.Pod{pod(0, true), sameServer}, 2, nil, PhaseFailed, ReasonBuildFailed,
			"group ms-0/worker-0: pod default/ms-0-worker-0-1: device_id 0 on server 192.0.0.1 is also given by pod default/ms-0-worker-0-0"},
		{"a table over the output limit", []*corev1.Pod{pod(0, true), pod(1, true)}, 2, func(in *Input) { in.MaxOutputBytes = 64 },
			PhaseFailed, ReasonRenderFailed, "group ms-0/worker-0: ranktable template "},
		{"another object's ConfigMap", []*corev1.Pod{pod(0, true), pod(1, true)}, 2, func(in *Input) { in.ConfigMaps = []*corev1.ConfigMap{foreign} },
			PhaseFailed, ReasonConfigMapConflict, "group ms-0/worker-0: ConfigMap default/ms-0-worker-0-ranktable exists and is not controlled by ModelServing ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Owner: o, Template: tm, Pods: c.pods, Expected: map[GroupKey]int{k: c.expected}, Now: t0}
			if c.in != nil {
				c.in(&in)
			}
			res, err := Plan(in)
			if err != nil {
				t.Fatal(err)
			}
			st := res.Groups[0]
			if st.Phase != c.phase || st.Reason != c.reason || !strings.HasPrefix(st.Message, c.message) {
				t.Fatalf("group: %s, %s, %q\nwant:  %s, %s, %q", st.Phase, st.Reason, st.Message, c.phase, c.reason, c.message)
			}
			checkReasons(t, res)
			for _, e := range res.Events {
				if e.Reason == ReasonGenerationFailed && e.Message != st.Message {
					t.Errorf("failure event %q, want the group's message %q", e.Message, st.Message)
				}
			}
		})
	}
}

// A message names at most 64 pods without the annotation, then says how many more.
func TestGroupMessageNamesAtMost64Pods(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var pods []*corev1.Pod
	for i := range 70 {
		pods = append(pods, kthenaPod(o, 0, "worker-0", i, false, 8))
	}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Groups[0].Message
	if n := strings.Count(msg, "default/ms-0-worker-0-"); n != 64 || !strings.HasSuffix(msg, ", default/ms-0-worker-0-63 and 6 more") {
		t.Errorf("%d pods named in %q", n, msg)
	}
}

// The plan deletes a ranktable ConfigMap only when it knows the group is gone:
// Expected is set, the owner controls the ConfigMap, it carries the ranktable label,
// and no expected group has it.
func TestPlanDeletesConfigMapsOfGroupsNoLongerExpected(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	kept, gone := GroupKey{"ms-0", "worker-0"}, GroupKey{"ms-1", "worker-0"}
	first, err := Plan(Input{Owner: o, Template: tm, Expected: map[GroupKey]int{kept: 1, gone: 1}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	var srv apiServer
	existing := srv.apply(first)
	stale := existing[1]
	if stale.Name != "ms-1-worker-0-ranktable" {
		t.Fatalf("ConfigMaps %v", existing)
	}
	variant := func(f func(cm *corev1.ConfigMap)) []*corev1.ConfigMap {
		cm := stale.DeepCopy()
		f(cm)
		return []*corev1.ConfigMap{existing[0], cm}
	}
	cases := []struct {
		name    string
		cms     []*corev1.ConfigMap
		exp     map[GroupKey]int
		deleted bool
	}{
		{"the table of a group no longer expected", existing, map[GroupKey]int{kept: 1}, true},
		{"not while its group is expected", existing, map[GroupKey]int{kept: 1, gone: 1}, false},
		{"not without Expected: its pods may be coming back", existing, nil, false},
		{"not another object's", variant(func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "other" }), map[GroupKey]int{kept: 1}, false},
		{"not one without a controller", variant(func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil }), map[GroupKey]int{kept: 1}, false},
		{"not one without the ranktable label", variant(func(cm *corev1.ConfigMap) { cm.Labels = nil }), map[GroupKey]int{kept: 1}, false},
		{"not one being deleted", variant(func(cm *corev1.ConfigMap) { cm.DeletionTimestamp = &metav1.Time{Time: t0} }), map[GroupKey]int{kept: 1}, false},
		{"not one in another namespace", variant(func(cm *corev1.ConfigMap) { cm.Namespace = "prod" }), map[GroupKey]int{kept: 1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Plan(Input{Owner: o, Template: tm, ConfigMaps: c.cms, Expected: c.exp, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			var deleted []*corev1.ConfigMap
			for _, d := range res.ConfigMaps {
				if d.Action == kplan.ActionDelete {
					deleted = append(deleted, d.ConfigMap)
					if d.Group != (GroupKey{}) {
						t.Errorf("a deletion names group %q", d.Group)
					}
				}
			}
			if !c.deleted {
				if len(deleted) != 0 {
					t.Fatalf("deleted %s", deleted[0].Name)
				}
				return
			}
			if len(deleted) != 1 || deleted[0] != c.cms[1] || res.ConfigMaps[len(res.ConfigMaps)-1].Action != kplan.ActionDelete {
				t.Fatalf("ConfigMaps %+v, want the stale one deleted, last", res.ConfigMaps)
			}
			ev := res.Events[len(res.Events)-1]
			want := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: stale.Name, UID: stale.UID}
			if ev.Reason != ReasonConfigMapDeleted || ev.Type != corev1.EventTypeNormal || ev.Object != want {
				t.Errorf("event %+v", ev)
			}
			checkReasons(t, res)
		})
	}
}
