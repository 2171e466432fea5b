package v1alpha1

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// RolloutPool is one pool of a ModelServing's rollout as package rollout reads
// it: the pods, the strategy to plan them with and the options to read them with
// (rollout.FromPods, then rollout.Plan).
//
// +kubebuilder:object:generate=false
type RolloutPool struct {
	// Role is the pool's role in Rolling and Lockstep mode (each role is a pool
	// of single pods, Lockstep planning the pools together); empty in Gang mode
	// (one pool of serving groups) and Group mode (one pool whose columns are
	// <role>-<member index>).
	Role string
	// Pods are the pool's pods, in the order given, read as readiness gates make
	// them: a pod whose readiness gates' conditions are not all True is not ready,
	// whatever its Ready condition says (the kubelet writes that later). Such
	// pods are copies; the others are the pods given.
	Pods []*corev1.Pod
	// Strategy is the pool's strategy: the mode, status.updateRevision as the
	// target (empty when the status has none), status.currentRevision and
	// status.updateRevision as the history when they differ, the budgets, the
	// partition as LatestRatio, the replica count and, in Gang and Group mode,
	// the columns (<role>-<member index>: a serving group's members in Gang
	// mode, the pools in Group mode).
	Strategy rollout.Strategy
	// Options are the labels (LabelRevision; in Gang mode LabelGroupName as
	// the gang, LabelColumn as a member's column and LabelGroupIndex as the
	// gang's index; in Group mode LabelColumn as the column and
	// LabelGroupIndex as the row), the recovery annotations
	// (AnnotationReplacementFor, AnnotationSwappedAt), in Gang mode the columns
	// every serving group has, and minReadySeconds; the caller sets Now when
	// MinReadySeconds is above 0.
	Options rollout.PodOptions
}

// RolloutPools maps a ModelServing and its pods onto package rollout's pools the
// way the example operator plans them: pods of ms are those in its namespace
// whose LabelName is its name (others are left out); a role's members per group
// count as at least 1. Rolling and Lockstep mode give one pool per role, in
// spec.roles order; Gang and Group mode one pool. An unset maxSurge is 0 instead
// of 25% when ms has a rank-table template (AnnotationRanktableTemplate) and the
// mode is not Gang: a surge pod would land in a serving group beyond
// spec.replicas whose rank table never completes. It returns an error naming the
// field when ms has no roles, an unknown mode or a partition that is not an
// integer or a percent.
func RolloutPools(ms *ModelServing, pods []*corev1.Pod) ([]RolloutPool, error) {
	if ms == nil {
		return nil, fmt.Errorf("modelserving: nil")
	}
	if len(ms.Spec.Roles) == 0 {
		return nil, fmt.Errorf("ModelServing %s/%s: spec.roles is empty", ms.Namespace, ms.Name)
	}
	groups := ms.GroupCount()
	rs := ms.Spec.RolloutStrategy
	base := rollout.Strategy{TargetRevision: ms.Status.UpdateRevision, MaxUnavailable: rs.MaxUnavailable, MaxSurge: effectiveMaxSurge(ms)}
	if cur := ms.Status.CurrentRevision; cur != "" && cur != ms.Status.UpdateRevision {
		base.History = []string{cur, ms.Status.UpdateRevision}
	}
	opts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: LabelRevision}, MinReadySeconds: rs.MinReadySeconds,
		Annotations: rollout.PodAnnotations{ReplacementFor: AnnotationReplacementFor, SwappedAt: AnnotationSwappedAt}}
	var mine []*corev1.Pod
	for _, p := range pods {
		if p != nil && p.Namespace == ms.Namespace && p.Labels[LabelName] == ms.Name {
			mine = append(mine, p)
		}
	}
	mine = ReadyByGates(mine)
	var columns []string
	for _, r := range ms.Spec.Roles {
		for m := range r.Members() {
			columns = append(columns, ColumnName(r.Name, m))
		}
	}
	latest := func(unit int) (rollout.Strategy, error) {
		st := base
		var err error
		if st.LatestRatio, err = LatestRatio(rs.Partition, groups, unit); err != nil {
			return st, fmt.Errorf("ModelServing %s/%s: %w", ms.Namespace, ms.Name, err)
		}
		return st, nil
	}
	switch rs.Mode {
	case GangMode:
		st, err := latest(1)
		if err != nil {
			return nil, err
		}
		st.Mode, st.Replicas, st.Columns = rollout.Gang, groups, columns
		o := opts
		o.Labels.Gang, o.Labels.Column, o.Labels.Index = LabelGroupName, LabelColumn, LabelGroupIndex
		o.Columns = slices.Clone(columns)
		return []RolloutPool{{Pods: mine, Strategy: st, Options: o}}, nil
	case GroupMode:
		st, err := latest(1)
		if err != nil {
			return nil, err
		}
		st.Mode, st.Replicas, st.Columns = rollout.Group, groups, columns
		o := opts
		o.Labels.Column, o.Labels.Index = LabelColumn, LabelGroupIndex
		return []RolloutPool{{Pods: mine, Strategy: st, Options: o}}, nil
	case RollingMode, LockstepMode, "":
		var out []RolloutPool
		for _, r := range ms.Spec.Roles {
			st, err := latest(r.Members())
			if err != nil {
				return nil, err
			}
			st.Mode, st.Replicas = rollout.Rolling, groups*r.Members()
			var rolePods []*corev1.Pod
			for _, p := range mine {
				if p.Labels[LabelRole] == r.Name {
					rolePods = append(rolePods, p)
				}
			}
			out = append(out, RolloutPool{Role: r.Name, Pods: rolePods, Strategy: st, Options: opts})
		}
		return out, nil
	default:
		return nil, fmt.Errorf("ModelServing %s/%s: spec.rolloutStrategy.mode %q is not Rolling, Gang, Group or Lockstep", ms.Namespace, ms.Name, rs.Mode)
	}
}

// ReadyByGates returns pods as Kubernetes defines readiness: a pod is ready when
// its containers are and every readiness gate's condition is True. A pod whose
// Ready condition is True while a gate's is not (the kubelet has not caught up
// with the gate yet) is returned as a copy with Ready False since the gate's
// last transition; the others are returned as given.
func ReadyByGates(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p
		if p == nil || len(p.Spec.ReadinessGates) == 0 {
			continue
		}
		ready := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if ready < 0 || p.Status.Conditions[ready].Status != corev1.ConditionTrue {
			continue
		}
		since := p.CreationTimestamp
		open := true
		for _, g := range p.Spec.ReadinessGates {
			j := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
			if j < 0 {
				open = false
				continue
			}
			if c := p.Status.Conditions[j]; c.Status != corev1.ConditionTrue {
				open = false
				if c.LastTransitionTime.After(since.Time) {
					since = c.LastTransitionTime
				}
			}
		}
		if open {
			continue
		}
		cp := *p
		cp.Status.Conditions = slices.Clone(p.Status.Conditions)
		cp.Status.Conditions[ready].Status = corev1.ConditionFalse
		cp.Status.Conditions[ready].LastTransitionTime = since
		out[i] = &cp
	}
	return out
}

// effectiveMaxSurge is the maxSurge a rollout of ms uses: spec.rolloutStrategy.maxSurge
// when set; otherwise nil (rollout's default, 25%), except that a ModelServing with a
// rank-table template (AnnotationRanktableTemplate) outside Gang mode surges nothing
// (0). Outside Gang mode the surge unit is a pod of a role (Rolling, Lockstep) or of a
// column (Group): a surge pod lands in a serving group beyond spec.replicas that no
// other member ever joins, so its rank table never completes and its engine never
// starts. In Gang mode the unit is a whole serving group, which gets a complete table
// of its own. An explicit maxSurge above 0 in that combination is refused at
// admission (the ValidatingAdmissionPolicy modelserving-ranktable-surge).
func effectiveMaxSurge(ms *ModelServing) *intstr.IntOrString {
	if ms == nil {
		return nil
	}
	rs := ms.Spec.RolloutStrategy
	if rs.MaxSurge != nil || rs.Mode == GangMode || ms.Annotations[AnnotationRanktableTemplate] == "" {
		return rs.MaxSurge
	}
	zero := intstr.FromInt32(0)
	return &zero
}
