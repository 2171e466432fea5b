package ranktable

import (
	"errors"
	"fmt"
	"github.com/kplan-dev/kplan"
	"strings"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/podfixture"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kthenaPod returns pod k of role replica roleID in serving group g (index gi) of
// owner o, with an annotation unless ann is false.
func kthenaPod(o Owner, gi int, roleID string, k int, ann bool, devices int) *corev1.Pod {
	group := fmt.Sprintf("%s-%d", o.Name, gi)
	name := fmt.Sprintf("%s-%s-%d", group, roleID, k)
	role := roleID[:strings.LastIndexByte(roleID, '-')]
	opts := []podfixture.Option{
		podfixture.Labels(LabelGroupName, group, LabelRole, role, LabelRoleID, roleID, LabelEntry, fmt.Sprint(k == 0)),
		podfixture.Owner(o.GVK.GroupVersion().String(), o.GVK.Kind, o.Name, string(o.UID)),
		podfixture.Containers("engine"), podfixture.Created(t0), podfixture.IP(fmt.Sprintf("172.16.%d.%d", gi, k+1)),
	}
	if ann {
		ipsk := make([]string, devices)
		for d := range ipsk {
			ipsk[d] = fmt.Sprintf("10.%d.%d.%d", gi, k%250, (k/250)*16+d+1)
		}
		opts = append(opts, podfixture.Annotation(DefaultAnnotationName, designAnnotation(name, fmt.Sprintf("192.%d.%d.%d", gi, k/250, k%250+1), ipsk...)))
	}
	return podfixture.Pod("default", name, opts...)
}

func groupByKey(res Result) map[GroupKey]GroupStatus {
	m := map[GroupKey]GroupStatus{}
	for _, g := range res.Groups {
		m[g.Group] = g
	}
	return m
}

func TestPlanGroups(t *testing.T) {
	o := testOwner("ms")
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	kA, kB := GroupKey{"ms-0", "worker-0"}, GroupKey{"ms-1", "worker-0"}
	expected := map[GroupKey]int{kA: 2, kB: 2}
	t.Run("a group with every annotation completes while a group missing one waits", func(t *testing.T) {
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8),
			kthenaPod(o, 1, "worker-0", 0, true, 8), kthenaPod(o, 1, "worker-0", 1, false, 8)}
		res, err := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: expected, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		g := groupByKey(res)
		if g[kA].Phase != PhaseCompleted || g[kB].Phase != PhaseWaiting {
			t.Fatalf("phases %s, %s; want Completed, Waiting", g[kA].Phase, g[kB].Phase)
		}
		if len(g[kB].Missing) != 1 || g[kB].Missing[0] != "default/ms-1-worker-0-1" {
			t.Errorf("missing %v", g[kB].Missing)
		}
		if res.ConfigMaps[0].ConfigMap.Name != "ms-0-worker-0-ranktable" || res.ConfigMaps[1].ConfigMap.Name != "ms-1-worker-0-ranktable" {
			t.Errorf("names %s, %s", res.ConfigMaps[0].ConfigMap.Name, res.ConfigMaps[1].ConfigMap.Name)
		}
		if res.ConfigMaps[1].ConfigMap.Data["ranktable.json"] != "" {
			t.Error("a waiting group got a table")
		}
		if res.RequeueAfter != defaultRequeueAfter {
			t.Errorf("requeue %s", res.RequeueAfter)
		}
		if !hasEvent(res, ReasonAnnotationMissing, "default/ms-1-worker-0-1") || !hasEvent(res, ReasonGenerated, "default/ms-0-worker-0-ranktable") ||
			!hasEvent(res, ReasonConfigMapCreated, "default/ms-1-worker-0-ranktable") {
			t.Errorf("events %+v", res.Events)
		}
	})
	t.Run("a bad annotation fails its group only", func(t *testing.T) {
		bad := kthenaPod(o, 1, "worker-0", 1, true, 8)
		bad.Annotations[DefaultAnnotationName] = strings.Replace(bad.Annotations[DefaultAnnotationName], `"10.1.1.4"`, `"-1"`, 1)
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8), kthenaPod(o, 1, "worker-0", 0, true, 8), bad}
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: expected, Now: t0})
		g := groupByKey(res)
		want := `pod default/ms-1-worker-0-1: annotation ascend.com/ranktable: devices[3].device_ip: "-1" is not an IP address`
		if g[kA].Phase != PhaseCompleted || g[kB].Phase != PhaseFailed || g[kB].Error == nil || g[kB].Error.Error() != want {
			t.Fatalf("got %s / %s %v, want Completed / Failed %q", g[kA].Phase, g[kB].Phase, g[kB].Error, want)
		}
		if !hasEvent(res, ReasonGenerationFailed, "default/ms") {
			t.Errorf("no failure event: %+v", res.Events)
		}
	})
	t.Run("a waiting group fails after the timeout and requeues before it", func(t *testing.T) {
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, false, 8)}
		in := Input{Owner: o, Template: tm, Pods: pods, Expected: map[GroupKey]int{kA: 2}, Now: t0.Add(9 * time.Minute), Timeout: 10 * time.Minute, RequeueAfter: 2 * time.Minute}
		res, _ := Plan(in)
		if res.Groups[0].Phase != PhaseWaiting || res.RequeueAfter != time.Minute {
			t.Fatalf("phase %s requeue %s, want Waiting and 1m (the time left)", res.Groups[0].Phase, res.RequeueAfter)
		}
		in.Now = t0.Add(10 * time.Minute)
		res, _ = Plan(in)
		if res.Groups[0].Phase != PhaseFailed || !errors.Is(res.Groups[0].Error, ErrTimeout) || res.RequeueAfter != 0 {
			t.Fatalf("phase %s err %v requeue %s, want Failed with ErrTimeout and no requeue", res.Groups[0].Phase, res.Groups[0].Error, res.RequeueAfter)
		}
	})
	t.Run("the ConfigMap is updated only when bytes differ and reset when a pod goes away", func(t *testing.T) {
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8)}
		in := Input{Owner: o, Template: tm, Pods: pods, Expected: map[GroupKey]int{kA: 2}, Now: t0}
		res, _ := Plan(in)
		cm := res.ConfigMaps[0].ConfigMap
		cm.ResourceVersion = "7"
		in.ConfigMaps = []*corev1.ConfigMap{cm}
		res, _ = Plan(in)
		if res.ConfigMaps[0].Action != kplan.ActionNone || len(res.Events) != 0 {
			t.Fatalf("action %s events %v on an unchanged group", res.ConfigMaps[0].Action, res.Events)
		}
		in.Pods = pods[:1]
		res, _ = Plan(in)
		up := res.ConfigMaps[0]
		if up.Action != kplan.ActionUpdate || up.ConfigMap.Data["ranktable.json"] != "" || up.ConfigMap.ResourceVersion != "7" || up.ConfigMap.Annotations[AnnotationContentHash] != "" {
			t.Fatalf("after a pod went away: %s %q rv %s", up.Action, up.ConfigMap.Data["ranktable.json"], up.ConfigMap.ResourceVersion)
		}
		repl := kthenaPod(o, 0, "worker-0", 1, true, 8)
		repl.UID = "new-uid"
		in.Pods = []*corev1.Pod{pods[0], repl}
		res, _ = Plan(in)
		if res.ConfigMaps[0].Action != kplan.ActionUpdate || res.ConfigMaps[0].ConfigMap.Annotations[AnnotationPodsHash] == cm.Annotations[AnnotationPodsHash] {
			t.Fatal("a new pod UID set did not change the pods hash")
		}
	})
	t.Run("a ConfigMap of another controller is never touched", func(t *testing.T) {
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), kthenaPod(o, 0, "worker-0", 1, true, 8)}
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ms-0-worker-0-ranktable", Namespace: "default"}}
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, ConfigMaps: []*corev1.ConfigMap{foreign}, Expected: map[GroupKey]int{kA: 2}, Now: t0})
		if len(res.ConfigMaps) != 0 || res.Groups[0].Phase != PhaseFailed {
			t.Fatalf("got %d ConfigMaps, phase %s", len(res.ConfigMaps), res.Groups[0].Phase)
		}
	})
	t.Run("deleting pods and pods of another owner are ignored", func(t *testing.T) {
		other := testOwner("other")
		del := kthenaPod(o, 0, "worker-0", 1, true, 8)
		now := metav1.NewTime(t0)
		del.DeletionTimestamp = &now
		pods := []*corev1.Pod{kthenaPod(o, 0, "worker-0", 0, true, 8), del, kthenaPod(other, 0, "worker-0", 2, true, 8)}
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, Expected: map[GroupKey]int{kA: 2}, Now: t0})
		if res.Groups[0].Pods != 1 || res.Groups[0].Phase != PhaseWaiting {
			t.Fatalf("pods %d phase %s, want 1 Waiting", res.Groups[0].Pods, res.Groups[0].Phase)
		}
	})
	t.Run("the owner's level annotation overrides the template", func(t *testing.T) {
		og := o
		og.Annotations = map[string]string{AnnotationLevel: "group"}
		pods := []*corev1.Pod{kthenaPod(og, 0, "prefill-0", 0, true, 8), kthenaPod(og, 0, "decode-0", 0, true, 8)}
		res, _ := Plan(Input{Owner: og, Template: tm, Pods: pods, Now: t0})
		if res.Level != LevelGroup || len(res.ConfigMaps) != 1 || res.ConfigMaps[0].ConfigMap.Name != "ms-0-ranktable" {
			t.Fatalf("level %s, %d ConfigMaps", res.Level, len(res.ConfigMaps))
		}
		og.Annotations[AnnotationLevel] = "rack"
		if _, err := Plan(Input{Owner: og, Template: tm, Pods: pods, Now: t0}); err == nil {
			t.Fatal("a bad level annotation was accepted")
		}
	})
	t.Run("a table over the size limit fails with a clear error", func(t *testing.T) {
		var pods []*corev1.Pod
		for k := 0; k < 600; k++ {
			pods = append(pods, kthenaPod(o, 0, "worker-0", k, true, 16))
		}
		res, _ := Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0})
		if res.Groups[0].Phase != PhaseFailed || !errors.Is(res.Groups[0].Error, ErrOutputTooLarge) {
			t.Fatalf("phase %s err %v", res.Groups[0].Phase, res.Groups[0].Error)
		}
		res, _ = Plan(Input{Owner: o, Template: tm, Pods: pods, Now: t0, MaxOutputBytes: 4 << 20})
		if res.Groups[0].Phase != PhaseCompleted {
			t.Fatalf("with a raised limit: %s %v", res.Groups[0].Phase, res.Groups[0].Error)
		}
	})
}

func hasEvent(res Result, reason kplan.Reason, object string) bool {
	for _, e := range res.Events {
		if e.Reason == reason && e.Object.Namespace+"/"+e.Object.Name == object {
			return true
		}
	}
	return false
}

func TestConfigMapName(t *testing.T) {
	cases := []struct {
		name  string
		owner string
		key   GroupKey
		want  string
	}{
		{"the design's role name without groups", "qwen-inference", GroupKey{Role: "worker"}, "qwen-inference-worker-ranktable"},
		{"a kthena group drops the owner prefix", "qwen", GroupKey{"qwen-3", "decode-1"}, "qwen-3-decode-1-ranktable"},
		{"a group level name", "qwen", GroupKey{Group: "qwen-3"}, "qwen-3-ranktable"},
		{"a foreign group name is kept whole", "qwen", GroupKey{"g7", "decode-1"}, "qwen-g7-decode-1-ranktable"},
		{"a long name is cut with a hash", strings.Repeat("a", 250), GroupKey{Role: "r"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ConfigMapName(c.owner, c.key)
			if c.want != "" && got != c.want {
				t.Errorf("got %q want %q", got, c.want)
			}
			if len(got) > 253 {
				t.Errorf("%d characters", len(got))
			}
		})
	}
}
