package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
)

func testModelServing(mode servingv1.RolloutMode) *servingv1.ModelServing {
	groups := int32(3)
	one := intstr.FromInt(1)
	return &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm"},
		Spec: servingv1.ModelServingSpec{Replicas: &groups,
			Roles:           []servingv1.Role{{Name: "prefill", Replicas: 1}, {Name: "decode", Replicas: 2}},
			RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: &one, Partition: &one, MinReadySeconds: 5}},
		Status: servingv1.ModelServingStatus{CurrentRevision: "llm-a", UpdateRevision: "llm-b"},
	}
}

func testPod(ns, ms, role, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{servingv1.LabelName: ms, servingv1.LabelRole: role}}}
}

// TestRolloutPoolsPerMode: each mode's pools, strategies and options, and the
// pods each pool takes (another ModelServing's or namespace's are left out).
func TestRolloutPoolsPerMode(t *testing.T) {
	pods := []*corev1.Pod{
		testPod("ns", "llm", "prefill", "llm-prefill-0-0"),
		testPod("ns", "llm", "decode", "llm-decode-0-0"),
		testPod("ns", "other", "decode", "other-decode-0-0"),
		testPod("elsewhere", "llm", "decode", "llm-decode-0-1"),
	}
	type pool struct {
		Role                string
		Pods                []string
		Mode                rollout.Mode
		Replicas            int
		Latest              string
		Columns             []string
		Gang, Column, Index string
		MemberColumns       []string
		MinReadyS           int
		Target              string
		History             []string
		Annotations         rollout.PodAnnotations
	}
	read := func(ps []servingv1.RolloutPool) []pool {
		var out []pool
		for _, p := range ps {
			q := pool{Role: p.Role, Mode: p.Strategy.Mode, Replicas: p.Strategy.Replicas, Columns: p.Strategy.Columns,
				Gang: p.Options.Labels.Gang, Column: p.Options.Labels.Column, Index: p.Options.Labels.Index, MemberColumns: p.Options.Columns,
				MinReadyS: int(p.Options.MinReadySeconds), Target: p.Strategy.TargetRevision, History: p.Strategy.History,
				Annotations: p.Options.Annotations}
			if p.Strategy.LatestRatio != nil {
				q.Latest = p.Strategy.LatestRatio.String()
			}
			for _, pod := range p.Pods {
				q.Pods = append(q.Pods, pod.Name)
			}
			out = append(out, q)
		}
		return out
	}
	hist := []string{"llm-a", "llm-b"}
	ann := rollout.PodAnnotations{ReplacementFor: servingv1.AnnotationReplacementFor, SwappedAt: servingv1.AnnotationSwappedAt}
	cols := []string{"prefill-0", "decode-0", "decode-1"}
	for _, tc := range []struct {
		mode servingv1.RolloutMode
		want []pool
	}{
		{servingv1.RollingMode, []pool{
			{Role: "prefill", Pods: []string{"llm-prefill-0-0"}, Mode: rollout.Rolling, Replicas: 3, Latest: "2", MinReadyS: 5, Target: "llm-b", History: hist, Annotations: ann},
			{Role: "decode", Pods: []string{"llm-decode-0-0"}, Mode: rollout.Rolling, Replicas: 6, Latest: "4", MinReadyS: 5, Target: "llm-b", History: hist, Annotations: ann},
		}},
		{servingv1.LockstepMode, []pool{
			{Role: "prefill", Pods: []string{"llm-prefill-0-0"}, Mode: rollout.Rolling, Replicas: 3, Latest: "2", MinReadyS: 5, Target: "llm-b", History: hist, Annotations: ann},
			{Role: "decode", Pods: []string{"llm-decode-0-0"}, Mode: rollout.Rolling, Replicas: 6, Latest: "4", MinReadyS: 5, Target: "llm-b", History: hist, Annotations: ann},
		}},
		{servingv1.GangMode, []pool{{Pods: []string{"llm-prefill-0-0", "llm-decode-0-0"}, Mode: rollout.Gang, Replicas: 3, Latest: "2",
			Columns: cols, Gang: servingv1.LabelGroupName, Column: servingv1.LabelColumn, Index: servingv1.LabelGroupIndex, MemberColumns: cols,
			MinReadyS: 5, Target: "llm-b", History: hist, Annotations: ann}}},
		{servingv1.GroupMode, []pool{{Pods: []string{"llm-prefill-0-0", "llm-decode-0-0"}, Mode: rollout.Group, Replicas: 3, Latest: "2",
			Columns: cols, Column: servingv1.LabelColumn, Index: servingv1.LabelGroupIndex, MinReadyS: 5, Target: "llm-b", History: hist,
			Annotations: ann}}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			got, err := servingv1.RolloutPools(testModelServing(tc.mode), pods)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, read(got)); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutPoolsRefusesBadInput(t *testing.T) {
	noRoles := testModelServing(servingv1.GangMode)
	noRoles.Spec.Roles = nil
	badMode := testModelServing("rolling")
	badPartition := testModelServing(servingv1.GangMode)
	half := intstr.FromString("half")
	badPartition.Spec.RolloutStrategy.Partition = &half
	for _, tc := range []struct {
		name string
		ms   *servingv1.ModelServing
		want string
	}{
		{"nil", nil, "nil"},
		{"no roles", noRoles, "spec.roles"},
		{"unknown mode", badMode, "spec.rolloutStrategy.mode"},
		{"partition not a percent", badPartition, "half"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := servingv1.RolloutPools(tc.ms, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestReadyByGates: a pod whose Ready condition is True but whose readiness gate
// is False or missing reads not ready since the gate's transition; the input is
// not modified, and pods without gates or with every gate True are returned as
// given.
func TestReadyByGates(t *testing.T) {
	created := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	gateAt := metav1.NewTime(created.Add(time.Minute))
	gate := corev1.PodConditionType("example.com/gate")
	pod := func(name string, gates bool, gateStatus corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created}}
		if gates {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
		}
		if gateStatus != "" {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: gate, Status: gateStatus, LastTransitionTime: gateAt})
		}
		return p
	}
	in := []*corev1.Pod{
		pod("no-gates", false, ""),
		pod("gate-true", true, corev1.ConditionTrue),
		pod("gate-false", true, corev1.ConditionFalse),
		pod("gate-missing", true, ""),
	}
	before := make([]*corev1.Pod, len(in))
	for i, p := range in {
		before[i] = p.DeepCopy()
	}
	out := servingv1.ReadyByGates(in)
	if diff := cmp.Diff(before, in); diff != "" {
		t.Fatalf("input modified (-before +after):\n%s", diff)
	}
	type got struct {
		Ready corev1.ConditionStatus
		Since time.Time
		Same  bool
	}
	var gotten []got
	for i, p := range out {
		gotten = append(gotten, got{p.Status.Conditions[0].Status, p.Status.Conditions[0].LastTransitionTime.Time, p == in[i]})
	}
	want := []got{
		{corev1.ConditionTrue, created.Time, true},
		{corev1.ConditionTrue, created.Time, true},
		{corev1.ConditionFalse, gateAt.Time, false},
		{corev1.ConditionFalse, created.Time, false},
	}
	if diff := cmp.Diff(want, gotten); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
}

// TestRolloutPoolsSurgeWithRanktable: an unset maxSurge is 0 for a ModelServing
// with a rank-table template outside Gang mode (a surge pod's serving group could
// never complete its table), and stays unset (rollout's 25%) otherwise; an explicit
// maxSurge is always kept.
func TestRolloutPoolsSurgeWithRanktable(t *testing.T) {
	zero, two := intstr.FromInt32(0), intstr.FromInt(2)
	for _, tc := range []struct {
		name     string
		mode     servingv1.RolloutMode
		template bool
		surge    *intstr.IntOrString
		want     *intstr.IntOrString
	}{
		{"rolling with a template surges nothing", servingv1.RollingMode, true, nil, &zero},
		{"the default mode with a template surges nothing", "", true, nil, &zero},
		{"lockstep with a template surges nothing", servingv1.LockstepMode, true, nil, &zero},
		{"group mode with a template surges nothing", servingv1.GroupMode, true, nil, &zero},
		{"gang with a template keeps the default", servingv1.GangMode, true, nil, nil},
		{"rolling without a template keeps the default", servingv1.RollingMode, false, nil, nil},
		{"an explicit surge is kept", servingv1.RollingMode, true, &two, &two},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := testModelServing(tc.mode)
			ms.Spec.RolloutStrategy.MaxSurge = tc.surge
			if tc.template {
				ms.Annotations = map[string]string{servingv1.AnnotationRanktableTemplate: "tmpl"}
			}
			pools, err := servingv1.RolloutPools(ms, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pools {
				if diff := cmp.Diff(tc.want, p.Strategy.MaxSurge); diff != "" {
					t.Errorf("pool %q maxSurge (-want +got):\n%s", p.Role, diff)
				}
			}
			if tc.template && ms.Spec.RolloutStrategy.MaxSurge != tc.surge {
				t.Errorf("RolloutPools changed the spec's maxSurge")
			}
		})
	}
}
