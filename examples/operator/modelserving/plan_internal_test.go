package modelserving

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/history"
	"github.com/kplan-dev/kplan/rollout"
)

// TestPlanModelServingPools: each mode reads the same pods as its documented
// pools: a pool per role (Rolling, Lockstep), one of groups (Gang), one with a
// column per role member (Group).
func TestPlanModelServingPools(t *testing.T) {
	groups := int32(2)
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}, Spec: servingv1.ModelServingSpec{
		Replicas: &groups,
		Roles: []servingv1.Role{
			{Name: "p", Replicas: 1, Template: corev1.PodTemplateSpec{}},
			{Name: "d", Replicas: 2, Template: corev1.PodTemplateSpec{}},
		},
	}}
	now := time.Unix(1e9, 0)
	var pods []*corev1.Pod
	for g := range 2 {
		for _, r := range ms.Spec.Roles {
			for m := range int(r.Replicas) {
				p := newPod(ms, r.Template, podSlot{role: r.Name, group: g, member: m}, "m-old")
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
				pods = append(pods, p)
			}
		}
	}
	type pool struct {
		Role     string
		Replicas int
		Target   int
		Columns  []string
		Names    []string
	}
	summary := func(p *msPlan) []pool {
		var out []pool
		for _, pl := range p.pools {
			s := pool{Role: pl.role, Replicas: len(pl.replicas), Target: pl.strategy.Replicas, Columns: pl.strategy.Columns}
			for _, r := range pl.replicas {
				s.Names = append(s.Names, r.Name)
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		mode servingv1.RolloutMode
		want []pool
	}{
		{servingv1.RollingMode, []pool{
			{Role: "p", Replicas: 2, Target: 2, Names: []string{"m-p-0-0", "m-p-1-0"}},
			{Role: "d", Replicas: 4, Target: 4, Names: []string{"m-d-0-0", "m-d-0-1", "m-d-1-0", "m-d-1-1"}},
		}},
		{servingv1.LockstepMode, []pool{
			{Role: "p", Replicas: 2, Target: 2, Names: []string{"m-p-0-0", "m-p-1-0"}},
			{Role: "d", Replicas: 4, Target: 4, Names: []string{"m-d-0-0", "m-d-0-1", "m-d-1-0", "m-d-1-1"}},
		}},
		{servingv1.GangMode, []pool{{Replicas: 2, Target: 2, Columns: []string{"p-0", "d-0", "d-1"}, Names: []string{"m-0", "m-1"}}}},
		{servingv1.GroupMode, []pool{{Replicas: 6, Target: 2, Columns: []string{"p-0", "d-0", "d-1"},
			Names: []string{"m-d-0-0", "m-d-0-1", "m-d-1-0", "m-d-1-1", "m-p-0-0", "m-p-1-0"}}}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			ms.Spec.RolloutStrategy.Mode = tc.mode
			p, err := planModelServing(ms, pods, []string{"m-old", "m-new"}, "m-new", nil, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(p)); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
			if p.complete {
				t.Error("every pod on the old revision, yet complete")
			}
			for _, pl := range p.pools {
				if pl.strategy.TargetRevision != "m-new" || !cmp.Equal(pl.strategy.History, []string{"m-old", "m-new"}) {
					t.Errorf("pool %q strategy %+v", pl.role, pl.strategy)
				}
				if pl.step.Empty() {
					t.Errorf("pool %q: nothing planned", pl.role)
				}
			}
		})
	}
	ms.Spec.RolloutStrategy.Mode = "Sideways"
	if _, err := planModelServing(ms, pods, []string{"m-new"}, "m-new", nil, now); err == nil {
		t.Error("an unknown mode planned without error")
	}
}

// TestStatusRollingUpdateClearsOnceEveryPodIsUpdated: the reconcile after the
// last old pod moved sees every pod on the update revision, not yet ready; the
// RollingUpdate condition must then say so (False, AllPodsUpdated), not keep
// the previous reconcile's "1 pods on older revisions".
func TestStatusRollingUpdateClearsOnceEveryPodIsUpdated(t *testing.T) {
	groups := int32(1)
	ms := &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm", Generation: 2},
		Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: []servingv1.Role{{Name: "decode", Replicas: 2}},
			RolloutStrategy: servingv1.RolloutStrategy{Mode: servingv1.RollingMode}},
		Status: servingv1.ModelServingStatus{Conditions: []metav1.Condition{{Type: servingv1.ConditionRollingUpdate,
			Status: metav1.ConditionTrue, Reason: servingv1.ReasonUpdating, Message: "1 pods on older revisions"}}},
	}
	old := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "llm-1"}, Revision: 1}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "llm-2"}, Revision: 2}
	h := &history.History{Revisions: []*appsv1.ControllerRevision{old, update}, Update: update}
	pod := func(m int, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: msPodName("llm", "decode", 0, m),
			Labels: map[string]string{servingv1.LabelName: "llm", servingv1.LabelRole: "decode", servingv1.LabelRevision: "llm-2",
				servingv1.LabelGroupName: "llm-0", servingv1.LabelGroupIndex: "0", servingv1.LabelMemberIndex: strconv.Itoa(m)}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	}
	pods := []*corev1.Pod{pod(0, corev1.ConditionTrue), pod(1, corev1.ConditionFalse)}
	now := time.Unix(1000, 0)
	plan, err := planModelServing(ms, pods, h.Names(), update.Name, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.complete {
		t.Fatal("the plan is complete with a pod not ready")
	}
	st := status(ms, h, pods, plan, nil, &execResult{}, now)
	c := meta.FindStatusCondition(st.Conditions, servingv1.ConditionRollingUpdate)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != servingv1.ReasonAllPodsUpdated {
		t.Errorf("RollingUpdate %+v, want False/%s", c, servingv1.ReasonAllPodsUpdated)
	}
}

// TestStatusCarriesThePlansReason: when nothing was written and the rollout is
// not complete, Progressing and RollingUpdate carry the reason and message of
// rollout's plan as they are: the first role's that is not complete, and the
// message of each such role, prefixed with its name.
func TestStatusCarriesThePlansReason(t *testing.T) {
	groups := int32(2)
	one, zero := intstr.FromInt(1), intstr.FromInt(0)
	ms := &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm", Generation: 2},
		Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: []servingv1.Role{{Name: "prefill", Replicas: 1}, {Name: "decode", Replicas: 1}},
			RolloutStrategy: servingv1.RolloutStrategy{Mode: servingv1.RollingMode, MaxUnavailable: &one, MaxSurge: &zero}},
	}
	old := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "llm-1"}, Revision: 1}
	update := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "llm-2"}, Revision: 2}
	h := &history.History{Revisions: []*appsv1.ControllerRevision{old, update}, Update: update}
	now := time.Unix(1000, 0)
	// prefill is done; each decode has one pod on the update revision not ready
	// and one old pod the budget holds.
	var pods []*corev1.Pod
	for g := range 2 {
		for _, role := range []string{"prefill", "decode"} {
			rev, ready := "llm-2", corev1.ConditionTrue
			if role == "decode" {
				rev = []string{"llm-2", "llm-1"}[g]
				if g == 0 {
					ready = corev1.ConditionFalse
				}
			}
			p := newPod(ms, corev1.PodTemplateSpec{}, podSlot{role: role, group: g}, rev)
			since := metav1.NewTime(now.Add(-time.Minute))
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: ready, LastTransitionTime: since},
				{Type: servingv1.PodConditionImagesReady, Status: corev1.ConditionTrue, LastTransitionTime: since}}}
			pods = append(pods, p)
		}
	}
	plan, err := planModelServing(ms, pods, h.Names(), update.Name, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if plan.reason != rollout.ReasonBudget {
		t.Fatalf("plan reason %q, want %q (decode's)", plan.reason, rollout.ReasonBudget)
	}
	st := status(ms, h, pods, plan, nil, &execResult{}, now)
	want := "role decode: maxUnavailable budget exhausted: llm-decode-1-0; not available yet: llm-decode-0-0"
	for _, ct := range []string{servingv1.ConditionProgressing, servingv1.ConditionRollingUpdate} {
		c := meta.FindStatusCondition(st.Conditions, ct)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(rollout.ReasonBudget) || c.Message != want {
			t.Errorf("%s %+v, want True/%s: %s", ct, c, rollout.ReasonBudget, want)
		}
	}
}
