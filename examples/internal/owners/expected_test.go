package owners_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/ranktable"
)

func labeled(name string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		p.Labels[labels[i]] = labels[i+1]
	}
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

func lwsSpec(replicas, size int64) map[string]any {
	return map[string]any{"spec": map[string]any{"replicas": replicas, "leaderWorkerTemplate": map[string]any{"size": size}}}
}

func TestExpected(t *testing.T) {
	type key = ranktable.GroupKey
	lwsPod := func(name, group string) *corev1.Pod {
		return labeled(name, owners.LWSNameLabel, "serve", owners.LWSGroupIndexLabel, group)
	}
	dsPod := func(name, key, role string) *corev1.Pod {
		return labeled(name, owners.DSNameLabel, "pd", owners.LWSGroupKeyLabel, key, owners.DSRoleLabel, role)
	}
	dsSpec := map[string]any{"spec": map[string]any{"roles": []any{
		map[string]any{"name": "prefill", "spec": map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(2)}}},
		map[string]any{"name": "decode", "spec": map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(4)}}},
	}}}
	kthenaSpec := map[string]any{"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"roles": []any{
		map[string]any{"name": "prefill", "replicas": int64(2), "workerReplicas": int64(1)},
		map[string]any{"name": "decode", "workerReplicas": int64(3)},
	}}}}
	kthenaPod := func(name, group, role, id string) *corev1.Pod {
		return labeled(name, ranktable.LabelModelServingName, "ms", ranktable.LabelGroupName, group, ranktable.LabelRole, role, ranktable.LabelRoleID, id)
	}
	for _, tc := range []struct {
		name    string
		preset  owners.Preset
		owner   string
		obj     map[string]any
		level   ranktable.Level
		pods    []*corev1.Pod
		want    map[ranktable.GroupKey]int
		wantErr string
	}{
		{"LeaderWorkerSet: spec.replicas groups of spec size", owners.LeaderWorkerSet, "serve", lwsSpec(2, 4), ranktable.LevelGroup, nil,
			map[key]int{{Group: "0"}: 4, {Group: "1"}: 4}, ""},
		{"LeaderWorkerSet: defaults are one group of one", owners.LeaderWorkerSet, "serve", map[string]any{"spec": map[string]any{}}, ranktable.LevelGroup, nil,
			map[key]int{{Group: "0"}: 1}, ""},
		{"LeaderWorkerSet: a surge group beyond spec.replicas is expected, a deleted pod's and another set's are not", owners.LeaderWorkerSet, "serve", lwsSpec(2, 4), ranktable.LevelGroup,
			[]*corev1.Pod{lwsPod("serve-2", "2"), deleting(lwsPod("serve-3", "3")), labeled("other-5", owners.LWSNameLabel, "other", owners.LWSGroupIndexLabel, "5")},
			map[key]int{{Group: "0"}: 4, {Group: "1"}: 4, {Group: "2"}: 4}, ""},
		{"LeaderWorkerSet: role level is refused", owners.LeaderWorkerSet, "serve", lwsSpec(2, 4), ranktable.LevelRole, nil, nil,
			"LeaderWorkerSet serve: a LeaderWorkerSet's groups have no roles"},
		{"LeaderWorkerSet: a spec that does not decode names the owner", owners.LeaderWorkerSet, "serve", map[string]any{"spec": map[string]any{"replicas": "two"}}, ranktable.LevelGroup, nil, nil,
			"LeaderWorkerSet serve: spec:"},
		{"DisaggregatedSet: a group per group key, its role's size", owners.DisaggregatedSet, "pd", dsSpec, ranktable.LevelGroup,
			[]*corev1.Pod{dsPod("a", "k1", "prefill"), dsPod("b", "k1", "prefill"), dsPod("c", "k2", "decode"), dsPod("d", "k3", "unknown")},
			map[key]int{{Group: "k1"}: 2, {Group: "k2"}: 4}, ""},
		{"DisaggregatedSet: at role level keyed by role", owners.DisaggregatedSet, "pd", dsSpec, ranktable.LevelRole,
			[]*corev1.Pod{dsPod("a", "k1", "prefill"), dsPod("c", "k2", "decode")},
			map[key]int{{Group: "k1", Role: "prefill"}: 2, {Group: "k2", Role: "decode"}: 4}, ""},
		{"DisaggregatedSet: no pods, no groups (every table of the owner goes)", owners.DisaggregatedSet, "pd", dsSpec, ranktable.LevelGroup, nil,
			map[key]int{}, ""},
		{"kthena: group level, every role's members per serving group", owners.KthenaModelServing, "ms", kthenaSpec, ranktable.LevelGroup,
			[]*corev1.Pod{kthenaPod("p", "ms-3", "prefill", "prefill-0")},
			map[key]int{{Group: "ms-0"}: 8, {Group: "ms-1"}: 8, {Group: "ms-3"}: 8}, ""},
		{"kthena: role level, each role replica of its pods", owners.KthenaModelServing, "ms", kthenaSpec, ranktable.LevelRole,
			[]*corev1.Pod{kthenaPod("p", "ms-0", "prefill", "prefill-1"), kthenaPod("d", "ms-0", "decode", "decode-0")},
			map[key]int{{Group: "ms-0", Role: "prefill-1"}: 2, {Group: "ms-0", Role: "decode-0"}: 4}, ""},
		{"the example ModelServing computes its own", owners.ExampleModelServing, "ms", kthenaSpec, ranktable.LevelGroup, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.preset.Expected(tc.owner, tc.obj, tc.level, tc.pods)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Expected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSameRevision(t *testing.T) {
	pod := func(name, group, index, rev string) *corev1.Pod {
		return labeled(name, owners.LWSNameLabel, "s", owners.LWSGroupIndexLabel, group, owners.LWSWorkerIndexLabel, index, owners.LWSRevisionLabel, rev)
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		preset owners.Preset
		pods   []*corev1.Pod
		want   []string
	}{
		{"workers of another revision than their leader are left out", owners.LeaderWorkerSet,
			[]*corev1.Pod{pod("s-0", "0", "0", "new"), pod("s-0-1", "0", "1", "old"), pod("s-0-2", "0", "2", "new"), pod("s-1-1", "1", "1", "old")},
			[]string{"s-0", "s-0-2", "s-1-1"}},
		{"a group without a leader keeps its pods", owners.LeaderWorkerSet,
			[]*corev1.Pod{pod("s-1-1", "1", "1", "old"), pod("s-1-2", "1", "2", "new")},
			[]string{"s-1-1", "s-1-2"}},
		{"a leader being deleted does not decide", owners.LeaderWorkerSet,
			[]*corev1.Pod{deleting(pod("s-0", "0", "0", "old")), pod("s-0-1", "0", "1", "new")},
			[]string{"s-0", "s-0-1"}},
		{"a kind without a member index keeps every pod", owners.KthenaModelServing,
			[]*corev1.Pod{pod("a", "0", "0", "x"), pod("b", "0", "1", "y")},
			[]string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := names(tc.pods)
			if diff := cmp.Diff(tc.want, names(owners.SameRevision(tc.preset, tc.pods))); diff != "" {
				t.Errorf("SameRevision (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, names(tc.pods)); diff != "" {
				t.Errorf("the input changed:\n%s", diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    owners.Preset
		wantErr string
	}{
		{in: "modelserving", want: owners.ExampleModelServing},
		{in: "kthena", want: owners.KthenaModelServing},
		{in: "leaderworkerset", want: owners.LeaderWorkerSet},
		{in: "disaggregatedset", want: owners.DisaggregatedSet},
		{in: "example.com/v1/Engine,owner-label=example.com/engine,group-label=example.com/group,role-label=r,role-id-label=rid,entry-label=e,member-index-label=i,revision-label=rev,order=podindex",
			want: owners.Preset{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Engine"},
				Grouping: ranktable.Grouping{OwnerLabel: "example.com/engine", GroupLabel: "example.com/group", RoleLabel: "r", RoleIDLabel: "rid", EntryLabel: "e"},
				Order:    ranktable.PodIndex, MemberIndexLabel: "i", RevisionLabel: "rev"}},
		{in: "LeaderWorkerSet", wantErr: "neither a preset"},
		{in: "example.com/v1/Engine", wantErr: "owner-label is required"},
		{in: "example.com/v1/Engine,owner-label", wantErr: `setting "owner-label" is not key=value`},
		{in: "example.com/v1/Engine,owner-label=x,colour=red", wantErr: `unknown setting "colour"`},
		{in: "example.com/v1/Engine,owner-label=x,order=random", wantErr: `order "random"`},
		{in: "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet,owner-label=x", wantErr: "has a preset"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := owners.Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}
