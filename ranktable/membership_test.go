// Which pods a plan counts: pods found by the owner's label, pods of groups Expected
// does not list, groups expecting no pods, absent members, and every pod accounted for.

package ranktable

import (
	"fmt"
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
			{"default/other-0-worker-0-0", `has no controller ownerReference and its label modelserving.volcano.sh/name is "other", not "ms"`},
			{"prod/ms-0-worker-0-5", `is in namespace "prod", the owner in "default"`},
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
		if u := res.Unmatched[0]; u.Pod != "default/ms-0-worker-0-0" || u.Reason != "has no controller ownerReference" {
			t.Errorf("first unmatched %q", u)
		}
	})
	t.Run("a pod controlled by another object", func(t *testing.T) {
		p := kthenaPod(testOwner("other"), 0, "worker-0", 0, true, 8)
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: []*corev1.Pod{p}, Now: t0})
		if len(res.Unmatched) != 1 || !strings.HasPrefix(res.Unmatched[0].Reason, "is controlled by ModelServing other (uid ") {
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

// Pods of a group Expected does not list (an --expect worker=2 given at role level,
// where the group is ms-0/worker-0) are reported, not dropped silently.
func TestPlanReportsPodsOfGroupsMissingFromExpected(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8)}
	res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: map[GroupKey]int{{Group: "worker"}: 2}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unmatched) != 2 || res.Unmatched[0].Reason != `its role-level group "ms-0/worker-0" is not in Expected` {
		t.Fatalf("unmatched %q", res.Unmatched)
	}
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
	})
}
