package owners_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/rollout"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		want string // the preset's kind, "" for none
	}{
		{"LeaderWorkerSet v1", schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}, "LeaderWorkerSet"},
		{"LeaderWorkerSet of another version", schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v2", Kind: "LeaderWorkerSet"}, "LeaderWorkerSet"},
		{"DisaggregatedSet", schema.GroupVersionKind{Group: "disaggregatedset.x-k8s.io", Version: "v1", Kind: "DisaggregatedSet"}, "DisaggregatedSet"},
		{"kthena ModelServing", schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"}, "ModelServing"},
		{"example ModelServing", schema.GroupVersionKind{Group: "serving.examples.kplan.dev", Version: "v1alpha1", Kind: "ModelServing"}, "ModelServing"},
		{"StatefulSet", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, ""},
		{"a kind of another group", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "LeaderWorkerSet"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := owners.For(tc.gvk)
			if got := p.GVK.Kind; ok != (tc.want != "") || got != tc.want {
				t.Errorf("For(%v) = %q, %v; want %q", tc.gvk, got, ok, tc.want)
			}
			if ok && p.GVK.Group != tc.gvk.Group {
				t.Errorf("For(%v) is the preset of group %s", tc.gvk, p.GVK.Group)
			}
		})
	}
}

// Every preset names the owner label and, for LeaderWorkerSet and its roles, the
// group-wide labels LeaderWorkerSet sets on every pod of a group.
func TestPresetsNameTheirLabels(t *testing.T) {
	seen := map[schema.GroupKind]bool{}
	for _, p := range owners.Presets() {
		t.Run(p.GVK.Kind+"."+p.GVK.Group, func(t *testing.T) {
			if seen[p.GVK.GroupKind()] {
				t.Fatalf("two presets for %v", p.GVK.GroupKind())
			}
			seen[p.GVK.GroupKind()] = true
			if p.Grouping.OwnerLabel == "" || p.RevisionLabel == "" {
				t.Errorf("OwnerLabel %q, RevisionLabel %q: want both", p.Grouping.OwnerLabel, p.RevisionLabel)
			}
			if strings.HasSuffix(p.GVK.Group, ".x-k8s.io") && (p.Grouping.GroupLabel == "" || p.MemberIndexLabel != owners.LWSWorkerIndexLabel) {
				t.Errorf("GroupLabel %q, MemberIndexLabel %q: want a group label and the worker index", p.Grouping.GroupLabel, p.MemberIndexLabel)
			}
		})
	}
}

// lwsPod is worker w of group g of a LeaderWorkerSet, as its controller and webhook
// label it.
func lwsPod(lws string, g, w int, revision string, extra map[string]string) *corev1.Pod {
	leader := fmt.Sprintf("%s-%d", lws, g)
	name := leader
	if w > 0 {
		name = fmt.Sprintf("%s-%d", leader, w)
	}
	labels := map[string]string{
		owners.LWSNameLabel: lws, owners.LWSGroupIndexLabel: fmt.Sprint(g), owners.LWSWorkerIndexLabel: fmt.Sprint(w),
		owners.LWSGroupKeyLabel: "key-" + leader, owners.LWSRevisionLabel: revision,
	}
	for k, v := range extra {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// decode decodes an object from its JSON.
func decode[T any](t *testing.T, js string) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal([]byte(js), v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLWSRollout(t *testing.T) {
	pods := []*corev1.Pod{
		lwsPod("vllm", 0, 0, "old", nil), lwsPod("vllm", 0, 1, "old", nil), lwsPod("vllm", 0, 2, "old", nil),
		lwsPod("vllm", 1, 0, "new", nil), lwsPod("vllm", 1, 1, "new", nil), lwsPod("vllm", 1, 2, "new", nil),
		lwsPod("other", 0, 0, "old", nil),
	}
	int1, int0, pct := intstr.FromInt32(1), intstr.FromInt32(0), intstr.FromString("50%")
	ratio1 := intstr.FromInt32(1)
	for _, tc := range []struct {
		name                 string
		spec                 string
		wantReplicas         int
		wantUnavail, wantSur intstr.IntOrString
		wantRatio            *intstr.IntOrString
		wantColumns          []string
	}{
		{"defaults: one group of one pod, maxUnavailable 1, maxSurge 0", `{}`, 1, int1, int0, nil, []string{"0"}},
		{"size and replicas", `{"replicas":2,"leaderWorkerTemplate":{"size":3}}`, 2, int1, int0, nil, []string{"0", "1", "2"}},
		{"budgets and partition", `{"replicas":2,"leaderWorkerTemplate":{"size":3},"rolloutStrategy":{"type":"RollingUpdate","rollingUpdateConfiguration":{"partition":1,"maxUnavailable":"50%","maxSurge":1}}}`,
			2, pct, int1, &ratio1, []string{"0", "1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lws := decode[owners.LWSObject](t, `{"metadata":{"name":"vllm","namespace":"default"},"spec":`+tc.spec+`}`)
			pool, err := owners.LWSRollout(lws, "new", pods)
			if err != nil {
				t.Fatal(err)
			}
			want := rollout.Strategy{
				Mode: rollout.Gang, TargetRevision: "new", Replicas: tc.wantReplicas, Columns: tc.wantColumns,
				MaxUnavailable: &tc.wantUnavail, MaxSurge: &tc.wantSur, LatestRatio: tc.wantRatio,
			}
			if diff := cmp.Diff(want, pool.Strategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
			wantOpts := rollout.PodOptions{
				Labels:  rollout.PodLabels{Revision: owners.LWSRevisionLabel, Gang: owners.LWSGroupIndexLabel, Column: owners.LWSWorkerIndexLabel, Index: owners.LWSGroupIndexLabel},
				Columns: tc.wantColumns,
			}
			if diff := cmp.Diff(wantOpts, pool.Options); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if len(pool.Pods) != 6 {
				t.Errorf("%d pods, want vllm's 6", len(pool.Pods))
			}
		})
	}
}

// The pods LeaderWorkerSet creates read as one gang per group, a member per worker
// index, the group index as the gang's index.
func TestLWSRolloutReadsGroupsAsGangs(t *testing.T) {
	var pods []*corev1.Pod
	for g := range 2 {
		for w := range 3 {
			pods = append(pods, lwsPod("vllm", g, w, []string{"old", "new"}[g], nil))
		}
	}
	lws := decode[owners.LWSObject](t, `{"metadata":{"name":"vllm","namespace":"default"},"spec":{"replicas":2,"leaderWorkerTemplate":{"size":3}}}`)
	pool, err := owners.LWSRollout(lws, "new", pods)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := rollout.FromPods(pool.Pods, pool.Options)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range replicas {
		var members []string
		for _, m := range r.Members {
			members = append(members, m.Column+"="+m.Name)
		}
		got = append(got, fmt.Sprintf("%s@%d %s %s", r.Name, r.Index, r.Revision, strings.Join(members, ",")))
	}
	want := []string{"0@0 old 0=vllm-0,1=vllm-0-1,2=vllm-0-2", "1@1 new 0=vllm-1,1=vllm-1-1,2=vllm-1-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
	step, err := rollout.Plan(replicas, pool.Strategy)
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Update) != 1 || step.Update[0].Replica != "0" {
		t.Errorf("step updates %+v, want group 0", step.Update)
	}
}

func TestLWSRolloutErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"size 0", `{"leaderWorkerTemplate":{"size":0}}`, "spec.leaderWorkerTemplate.size: 0 is not 1.."},
		{"negative replicas", `{"replicas":-1}`, "spec.replicas: -1 is negative"},
		{"another strategy type", `{"rolloutStrategy":{"type":"Recreate"}}`, `spec.rolloutStrategy.type: "Recreate" is not RollingUpdate`},
		{"negative partition", `{"rolloutStrategy":{"rollingUpdateConfiguration":{"partition":-1}}}`, "partition: -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lws := decode[owners.LWSObject](t, `{"metadata":{"name":"vllm","namespace":"default"},"spec":`+tc.spec+`}`)
			_, err := owners.LWSRollout(lws, "new", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "LeaderWorkerSet default/vllm") {
				t.Errorf("error %v, want one naming LeaderWorkerSet default/vllm and %q", err, tc.want)
			}
		})
	}
	if _, err := owners.LWSRollout(nil, "new", nil); err == nil {
		t.Error("LWSRollout(nil) = nil error")
	}
}

func TestDSRollout(t *testing.T) {
	dsLabels := func(role string) map[string]string {
		return map[string]string{owners.DSNameLabel: "pd", owners.DSRoleLabel: role, owners.DSRevisionLabel: "r1"}
	}
	pods := []*corev1.Pod{
		lwsPod("pd-r1-prefill", 0, 0, "h", dsLabels("prefill")), lwsPod("pd-r1-prefill", 0, 1, "h", dsLabels("prefill")),
		lwsPod("pd-r1-decode", 0, 0, "h", dsLabels("decode")),
		lwsPod("other-r1-decode", 0, 0, "h", map[string]string{owners.DSNameLabel: "other", owners.DSRoleLabel: "decode"}),
	}
	ds := decode[owners.DSObject](t, `{"metadata":{"name":"pd","namespace":"default"},"spec":{"roles":[
		{"name":"prefill","spec":{"replicas":4,"leaderWorkerTemplate":{"size":2}}},
		{"name":"decode","spec":{"replicas":4,"rolloutStrategy":{"rollingUpdateConfiguration":{"maxUnavailable":"50%","maxSurge":"25%"}}}},
		{"name":"router","spec":{"replicas":4,"rolloutStrategy":{"rollingUpdateConfiguration":{"maxUnavailable":0,"maxSurge":2}}}},
		{"name":"cache","spec":{"replicas":4,"rolloutStrategy":{"rollingUpdateConfiguration":{"maxUnavailable":0,"maxSurge":0}}}}]}}`)
	pools, err := owners.DSRollout(ds, "r2", pods)
	if err != nil {
		t.Fatal(err)
	}
	type budget struct {
		Role                string
		Pods                int
		Unavailable, Surge  string
		GangLabel, Revision string
		Columns             []string
	}
	var got []budget
	for _, p := range pools {
		if p.Strategy.Mode != rollout.Gang || p.Strategy.TargetRevision != "r2" || p.Strategy.Replicas != 4 {
			t.Errorf("role %s: strategy %+v, want Gang to r2 over 4 groups", p.Role, p.Strategy)
		}
		got = append(got, budget{p.Role, len(p.Pods), p.Strategy.MaxUnavailable.String(), p.Strategy.MaxSurge.String(),
			p.Options.Labels.Gang, p.Options.Labels.Revision, p.Strategy.Columns})
	}
	want := []budget{
		{"prefill", 2, "0", "1", owners.LWSGroupKeyLabel, owners.DSRevisionLabel, []string{"0", "1"}}, // no configuration: surge 1
		{"decode", 1, "2", "1", owners.LWSGroupKeyLabel, owners.DSRevisionLabel, []string{"0"}},       // 50% down, 25% up, resolved
		{"router", 0, "0", "2", owners.LWSGroupKeyLabel, owners.DSRevisionLabel, []string{"0"}},       // surge only
		{"cache", 0, "0", "1", owners.LWSGroupKeyLabel, owners.DSRevisionLabel, []string{"0"}},        // both 0: surge 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
}

func TestDSRolloutErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"no roles", `{"roles":[]}`, "spec.roles is empty"},
		{"a role without a name", `{"roles":[{"name":""}]}`, "spec.roles[0].name is empty"},
		{"a bad percent", `{"roles":[{"name":"p","spec":{"rolloutStrategy":{"rollingUpdateConfiguration":{"maxSurge":"lots"}}}}]}`, "role p: maxSurge"},
		{"a bad size", `{"roles":[{"name":"p","spec":{"leaderWorkerTemplate":{"size":0}}}]}`, "role p: spec.leaderWorkerTemplate.size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := owners.DSRollout(decode[owners.DSObject](t, `{"metadata":{"name":"pd","namespace":"default"},"spec":`+tc.spec+`}`), "r", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "DisaggregatedSet default/pd") {
				t.Errorf("error %v, want one naming DisaggregatedSet default/pd and %q", err, tc.want)
			}
		})
	}
	if _, err := owners.DSRollout(nil, "r", nil); err == nil {
		t.Error("DSRollout(nil) = nil error")
	}
}

// With HighestIndexFirst, a LeaderWorkerSet's partition keeps its lowest groups:
// the plan moves group 2, then 1, as the LWS controller does; without it, the
// plan's own order (names) would move group 0 first.
func TestHighestIndexFirstKeepsThePartitionsGroups(t *testing.T) {
	var pods []*corev1.Pod
	for g := range 3 {
		for w := range 2 {
			pods = append(pods, lwsPod("vllm", g, w, "old", nil))
		}
	}
	lws := decode[owners.LWSObject](t, `{"metadata":{"name":"vllm","namespace":"default"},"spec":{"replicas":3,"leaderWorkerTemplate":{"size":2},`+
		`"rolloutStrategy":{"type":"RollingUpdate","rollingUpdateConfiguration":{"partition":1,"maxUnavailable":1}}}}`)
	pool, err := owners.LWSRollout(lws, "new", pods)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := rollout.FromPods(pool.Pods, pool.Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ordered bool
		want    string
	}{
		{"plan order: the lowest name first", false, "0"},
		{"highest index first, as LWS", true, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := slices.Clone(replicas)
			if tc.ordered {
				owners.HighestIndexFirst(rs)
			}
			step, err := rollout.Plan(rs, pool.Strategy)
			if err != nil {
				t.Fatal(err)
			}
			if len(step.Update) != 1 || step.Update[0].Replica != tc.want {
				t.Errorf("step updates %+v, want group %s alone", step.Update, tc.want)
			}
		})
	}
}
