// Which pods a plan counts: pods found by the owner's label, pods of groups Expected
// does not list, groups expecting no pods, absent members, and every pod accounted for.

package ranktable

import (
	"fmt"

	"github.com/kplan-dev/kplan"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

// labelledPods returns kthena pods 0..n-1 of role replica worker-0 in group ms-0
// carrying the ModelServing name label (value owner) and no ownerReferences, as the
// seed design shows pods.
func labelledPods(o Owner, owner string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for k := range n {
		p := kthenaPod(o, 0, "worker-0", k, true, 8)
		p.OwnerReferences = nil
		p.Labels[LabelModelServingName] = owner
		pods = append(pods, p)
	}
	return pods
}

// Pods found by the owner's label (as kthena finds a ModelServing's pods) are grouped
// when Grouping.OwnerLabel is set; ownerReferences stay the default, and a pod that
// matches no owner is reported, never dropped silently.
func TestPlanGroupsPodsByOwnerLabelAndReportsPodsMatchingNoOwner(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	pods := labelledPods(o, "ms", 2)
	stranger := labelledPods(o, "other", 3)[2]
	stranger.Name = "other-0-worker-0-0"
	pods = append(pods, stranger)
	elsewhere := kthenaPod(o, 0, "worker-0", 5, true, 8)
	elsewhere.Namespace = "prod"
	pods = append(pods, elsewhere)

	t.Run("by the owner label", func(t *testing.T) {
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Grouping: Grouping{OwnerLabel: LabelModelServingName}, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Groups) != 1 || res.Groups[0].Phase != PhaseCompleted || res.Groups[0].Pods != 2 {
			t.Fatalf("groups %+v", res.Groups)
		}
		want := []UnmatchedPod{
			{"default/other-0-worker-0-0", ReasonPodNotOwned,
				`pod default/other-0-worker-0-0 has no controller ownerReference and its label modelserving.volcano.sh/name is "other", not "ms"`},
			{"prod/ms-0-worker-0-5", ReasonPodInOtherNamespace, `pod prod/ms-0-worker-0-5 is in namespace "prod", the owner in "default"`},
		}
		if fmt.Sprint(res.Unmatched) != fmt.Sprint(want) {
			t.Errorf("unmatched %q\nwant      %q", res.Unmatched, want)
		}
	})
	t.Run("by ownerReferences (the default)", func(t *testing.T) {
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Groups) != 0 || len(res.Unmatched) != 4 {
			t.Fatalf("groups %+v, unmatched %q", res.Groups, res.Unmatched)
		}
		if u := res.Unmatched[0]; u.Pod != "default/ms-0-worker-0-0" || u.Reason != ReasonPodNotOwned ||
			u.Message != "pod default/ms-0-worker-0-0 has no controller ownerReference" {
			t.Errorf("first unmatched %q", u)
		}
	})
	t.Run("a pod controlled by another object", func(t *testing.T) {
		p := kthenaPod(testOwner("other"), 0, "worker-0", 0, true, 8)
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: []*corev1.Pod{p}, Now: t0})
		if len(res.Unmatched) != 1 || res.Unmatched[0].Reason != ReasonPodNotOwned ||
			!strings.HasPrefix(res.Unmatched[0].Message, "pod default/other-0-worker-0-0 is controlled by ModelServing other (uid ") {
			t.Fatalf("unmatched %q", res.Unmatched)
		}
	})
	t.Run("the result does not depend on pod order", func(t *testing.T) {
		in := Input{Owner: o, Template: tm, Pods: pods, Now: t0}
		a, _ := Plan(in)
		in.Pods = []*corev1.Pod{pods[3], pods[2], pods[1], pods[0]}
		b, _ := Plan(in)
		if fmt.Sprint(a.Unmatched) != fmt.Sprint(b.Unmatched) {
			t.Errorf("%q != %q", a.Unmatched, b.Unmatched)
		}
	})
}

// Pods of a group Expected does not list (an --expect ms-0/worker=2 given where the
// role replica is worker-0) are reported, not dropped silently.
func TestPlanReportsPodsOfGroupsMissingFromExpected(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8)}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: map[GroupKey]int{{Group: "ms-0", Role: "worker"}: 2}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unmatched) != 2 || res.Unmatched[0].Reason != ReasonGroupNotExpected ||
		res.Unmatched[0].Message != `pod default/ms-0-worker-0-0: its role-level group "ms-0/worker-0" is not in Expected` {
		t.Fatalf("unmatched %q", res.Unmatched)
	}
}

// A pod without the labels its level needs belongs to no group: it is unmatched,
// naming the labels, and never makes a group with an empty serving group or role
// (which pods of different serving groups would share).
func TestPlanLeavesPodsWithoutGroupingLabelsUnmatched(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{}) // role level
	without := func(labels ...string) *corev1.Pod {
		p := kthenaPod(o, 0, "prefill-0", 1, true, 8)
		for _, l := range labels {
			delete(p.Labels, l)
		}
		return p
	}
	emptyGroup := kthenaPod(o, 0, "prefill-0", 1, true, 8)
	emptyGroup.Labels[LabelGroupName] = ""
	groupMsg := "label modelserving.volcano.sh/group-name (its serving group)"
	roleMsg := "label modelserving.volcano.sh/role-id or modelserving.volcano.sh/role (its role, needed at role level)"
	cases := []struct {
		name    string
		pod     *corev1.Pod
		level   Level
		single  bool
		lacking string // "" when the pod is grouped
		key     GroupKey
	}{
		{"no group label at role level", without(LabelGroupName), LevelRole, false, groupMsg, GroupKey{}},
		{"an empty group label", emptyGroup, LevelRole, false, groupMsg, GroupKey{}},
		{"no group label at group level", without(LabelGroupName), LevelGroup, false, groupMsg, GroupKey{}},
		{"no role labels at role level", without(LabelRoleID, LabelRole), LevelRole, false, roleMsg, GroupKey{}},
		{"no labels at all", without(LabelGroupName, LabelRoleID, LabelRole), LevelRole, false, groupMsg + " and no " + roleMsg, GroupKey{}},
		{"no role labels at group level is fine", without(LabelRoleID, LabelRole), LevelGroup, false, "", GroupKey{Group: "ms-0"}},
		{"the role name stands in for the role id", without(LabelRoleID), LevelRole, false, "", GroupKey{"ms-0", "prefill"}},
		{"no group label with SingleGroup", without(LabelGroupName), LevelRole, true, "", GroupKey{Role: "prefill-0"}},
		{"SingleGroup still needs the role at role level", without(LabelGroupName, LabelRoleID, LabelRole), LevelRole, true, roleMsg, GroupKey{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Grouping{SingleGroup: c.single}
			k, err := KeyOf(c.pod, c.level, g)
			owner := o
			owner.Annotations = map[string]string{AnnotationLevel: string(c.level)}
			res, perr := Plan(Input{Owner: owner, Template: tm, Pods: []*corev1.Pod{c.pod}, Grouping: g, Now: t0})
			if perr != nil {
				t.Fatal(perr)
			}
			if c.lacking == "" {
				if err != nil || k != c.key {
					t.Fatalf("KeyOf = %q, %v; want %q", k, err, c.key)
				}
				if len(res.Unmatched) != 0 || len(res.Groups) != 1 || res.Groups[0].Group != c.key {
					t.Fatalf("plan: groups %+v, unmatched %+v", res.Groups, res.Unmatched)
				}
				return
			}
			want := "pod default/ms-0-prefill-0-1 has no (or an empty) " + c.lacking
			if err == nil || err.Error() != "pod default/ms-0-prefill-0-1: has no (or an empty) "+c.lacking {
				t.Errorf("KeyOf = %q, %v; want the error %q", k, err, want)
			}
			if len(res.Groups) != 0 || len(res.Unmatched) != 1 || res.Unmatched[0].Reason != ReasonGroupingLabelMissing ||
				res.Unmatched[0].Message != want {
				t.Errorf("plan: groups %+v, unmatched %+v; want the pod unmatched: %s", res.Groups, res.Unmatched, want)
			}
		})
	}
	t.Run("KeyOf rejects a nil pod and an unknown level", func(t *testing.T) {
		if _, err := KeyOf(nil, LevelRole, Grouping{}); err == nil || err.Error() != "pod is nil" {
			t.Errorf("nil pod: %v", err)
		}
		if _, err := KeyOf(without(), "node", Grouping{}); err == nil ||
			err.Error() != `pod default/ms-0-prefill-0-1: level: "node" is not a ranktable level (want role or group)` {
			t.Errorf("unknown level: %v", err)
		}
	})
}

// Expected keys that no pod can match at the level, and negative counts, are input
// errors; the error names the first bad key in key order, whatever the map's order.
func TestPlanRejectsExpectedThatDisagreesWithTheLevel(t *testing.T) {
	o := testOwner("ms")
	o.Annotations = map[string]string{AnnotationLevel: "group"}
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	cases := []struct {
		name     string
		expected map[GroupKey]int
		want     string
	}{
		{"a role key at group level", map[GroupKey]int{{"ms-0", "worker-0"}: 2, {Group: "ms-1"}: 2},
			`input: Expected[ms-0/worker-0] names role "worker-0" but the level is group: no pod can match it (use the key "ms-0")`},
		{"a negative count", map[GroupKey]int{{Group: "ms-1"}: -1}, "input: Expected[ms-1] is -1: a group expects 0 or more pods"},
		{"a key without a group", map[GroupKey]int{{Group: ""}: 1},
			"input: Expected[] names no group: no pod can match it (a pod needs a serving-group label; set Grouping.SingleGroup when the pods carry none)"},
		{"the first of several bad keys", map[GroupKey]int{{"ms-3", "a"}: 1, {Group: "ms-2"}: -1, {"ms-10", "b"}: 1, {"ms-2", "c"}: 1},
			"input: Expected[ms-2] is -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 10 { // map order varies between runs
				_, err := Plan(Input{Owner: o, Template: tm, Expected: c.expected, Now: t0})
				if err == nil || !strings.HasPrefix(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
			}
		})
	}
}

// At role level a key needs a role; with Grouping.SingleGroup it has no group.
func TestPlanRejectsExpectedThatDisagreesWithTheGrouping(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{}) // role level
	cases := []struct {
		name     string
		expected map[GroupKey]int
		single   bool
		want     string
	}{
		{"a key without a role at role level", map[GroupKey]int{{Group: "ms-0"}: 1}, false,
			"input: Expected[ms-0] names no role but the level is role: no pod can match it"},
		{"a key with a group when every pod is one group", map[GroupKey]int{{"ms-0", "worker"}: 1}, true,
			`input: Expected[ms-0/worker] names group "ms-0" but Grouping.SingleGroup is set: no pod can match it (use an empty Group)`},
		{"a key without a group otherwise", map[GroupKey]int{{Role: "worker"}: 1}, false,
			"input: Expected[/worker] names no group: no pod can match it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Plan(Input{Owner: o, Template: tm, Expected: c.expected, Grouping: Grouping{SingleGroup: c.single}, Now: t0})
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Plan(Input{Owner: o, Template: tm, Expected: map[GroupKey]int{{Role: "worker"}: 1}, Grouping: Grouping{SingleGroup: true}, Now: t0}); err != nil {
		t.Errorf("a role key with SingleGroup: %v", err)
	}
}

// A group expecting no pods (scaled to zero) is complete: it does not wait forever.
func TestPlanTreatsAGroupExpectingZeroPodsAsComplete(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	k := GroupKey{"ms-0", "worker-0"}
	res, err := Plan(Input{Owner: o, Template: tm, Expected: map[GroupKey]int{k: 0}, Now: t0, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || res.Groups[0].Phase != PhaseCompleted || res.RequeueAfter != 0 {
		t.Fatalf("groups %+v, requeue %v", res.Groups, res.RequeueAfter)
	}
	if cm := res.ConfigMaps[0].ConfigMap; cm.Data[tm.Filename] != "" {
		t.Errorf("file %q, want empty", cm.Data[tm.Filename])
	}
	for _, e := range res.Events {
		if e.Reason == ReasonGenerated {
			t.Errorf("event %+v for a group without pods", e)
		}
	}
	// A pod still there (scaling down) is one too many.
	res, _ = Plan(Input{Owner: o, Template: tm, Pods: []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8)}, Expected: map[GroupKey]int{k: 0}, Now: t0})
	if res.Groups[0].Phase != PhaseFailed {
		t.Errorf("with a pod left: %+v", res.Groups[0])
	}
}

// Expected members with no pod at all are named: by kthena's pod names when the
// group's pods follow them, else by stable rank index.
func TestPlanNamesAbsentMembers(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	k := GroupKey{"ms-0", "worker-0"}
	exp := map[GroupKey]int{k: 4}
	t.Run("by kthena's pod names", func(t *testing.T) {
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 2, false, 8)}
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Now: t0.Add(time.Hour), Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		g := res.Groups[0]
		if want := []string{"default/ms-0-worker-0-1", "default/ms-0-worker-0-3"}; fmt.Sprint(g.Absent) != fmt.Sprint(want) {
			t.Errorf("absent %q, want %q", g.Absent, want)
		}
		if want := []string{"default/ms-0-worker-0-2"}; fmt.Sprint(g.Missing) != fmt.Sprint(want) {
			t.Errorf("missing %q, want %q", g.Missing, want)
		}
		if g.Error == nil || !strings.HasSuffix(g.Error.Error(), "1 of 4 pods ready after 1m0s; absent: default/ms-0-worker-0-1, default/ms-0-worker-0-3") {
			t.Errorf("error %v", g.Error)
		}
	})
	t.Run("with no pod yet", func(t *testing.T) {
		res, _ := Plan(Input{Owner: o, Template: tm, Expected: map[GroupKey]int{k: 2}, Now: t0})
		if want := []string{"default/ms-0-worker-0-0", "default/ms-0-worker-0-1"}; fmt.Sprint(res.Groups[0].Absent) != fmt.Sprint(want) {
			t.Errorf("absent %q, want %q", res.Groups[0].Absent, want)
		}
	})
	t.Run("by rank index", func(t *testing.T) {
		var pods []*corev1.Pod
		for i, idx := range []string{"0", "3"} {
			p := kthenaPod(o, 0, "worker-0", i, true, 8)
			p.Name = fmt.Sprintf("engine-%c", 'a'+i)
			p.Annotations[AnnotationRankIndex] = idx
			pods = append(pods, p)
		}
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Now: t0})
		if want := []string{"hccl/rankIndex=1", "hccl/rankIndex=2"}; fmt.Sprint(res.Groups[0].Absent) != fmt.Sprint(want) {
			t.Errorf("absent %q, want %q", res.Groups[0].Absent, want)
		}
	})
	t.Run("unknown when pods follow neither", func(t *testing.T) {
		p := kthenaPod(o, 0, "worker-0", 0, true, 8)
		p.Name = "engine-a"
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: []*corev1.Pod{p}, Expected: exp, Now: t0})
		if g := res.Groups[0]; len(g.Absent) != 0 || g.Expected-g.Pods != 3 {
			t.Errorf("absent %q, pods %d of %d", g.Absent, g.Pods, g.Expected)
		}
	})
	t.Run("at most MaxAbsentNamed", func(t *testing.T) {
		res, _ := Plan(Input{Owner: o, Template: tm, Expected: map[GroupKey]int{k: 1 << 40}, Now: t0})
		if n := len(res.Groups[0].Absent); n != maxAbsentNamed {
			t.Errorf("%d named", n)
		}
	})
}

// Every pod given is accounted for exactly once: in a group or in Result.Unmatched
// (pods being deleted aside); absent members are never pods that are present.
func TestPlanAccountsForEveryPod(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	rapid.Check(t, func(t *rapid.T) {
		pods, exp := genPods(t, o)
		for _, p := range pods {
			switch rapid.IntRange(0, 4).Draw(t, "mutation") {
			case 1: // found by label only
				p.OwnerReferences = nil
				p.Labels[LabelModelServingName] = o.Name
			case 2: // another ModelServing's pod
				p.OwnerReferences = nil
				p.Labels[LabelModelServingName] = "other"
			case 3:
				p.Namespace = "elsewhere"
			case 4: // without a label its group may need
				labels := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{LabelGroupName, LabelRoleID, LabelRole}), 1, 3, rapid.ID[string]).Draw(t, "labels")
				for _, l := range labels {
					if rapid.Bool().Draw(t, "emptied rather than removed") {
						p.Labels[l] = ""
					} else {
						delete(p.Labels, l)
					}
				}
			}
		}
		for k := range exp {
			if rapid.IntRange(0, 3).Draw(t, "drop expected") == 0 {
				delete(exp, k)
			}
		}
		var g Grouping
		if rapid.Bool().Draw(t, "by label") {
			g.OwnerLabel = LabelModelServingName
		}
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: exp, Grouping: g, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		counted := len(res.Unmatched)
		grouped := map[string]bool{} // pods in some group
		for _, p := range pods {
			grouped[p.Namespace+"/"+p.Name] = true
		}
		for _, u := range res.Unmatched {
			delete(grouped, u.Pod)
		}
		for _, st := range res.Groups {
			counted += st.Pods
			if len(st.Absent) > max(st.Expected-st.Pods, 0) {
				t.Fatalf("group %s: %d absent named, %d of %d pods", st.Group, len(st.Absent), st.Pods, st.Expected)
			}
			for _, a := range st.Absent {
				if grouped[a] {
					t.Fatalf("group %s: %s is in a group and named absent", st.Group, a)
				}
			}
		}
		if counted != len(pods) {
			t.Fatalf("%d pods given, %d in groups or unmatched: %+v", len(pods), counted, res.Unmatched)
		}
		// Exactly the pods of the owner that lack a label their group needs are
		// unmatched for it, and no group has an empty serving group or role.
		unmatched := map[string]kplan.Reason{}
		for _, u := range res.Unmatched {
			unmatched[u.Pod] = u.Reason
		}
		for _, p := range pods {
			key := p.Namespace + "/" + p.Name
			if r := unmatched[key]; r == ReasonPodInOtherNamespace || r == ReasonPodNotOwned {
				continue
			}
			lacks := p.Labels[LabelGroupName] == "" || p.Labels[LabelRoleID] == "" && p.Labels[LabelRole] == ""
			if lacks != (unmatched[key] == ReasonGroupingLabelMissing) {
				t.Fatalf("pod %s with labels %v: unmatched for %q", key, p.Labels, unmatched[key])
			}
		}
		for _, st := range res.Groups {
			if st.Group.Group == "" || st.Group.Role == "" {
				t.Fatalf("group %q has an empty part", st.Group)
			}
		}
		checkReasons(t, res)
	})
}
