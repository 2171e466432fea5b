package cli

import (
	"flag"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/rollout"
)

// fromStatefulSet takes the StatefulSet's pods, target revision, replicas and
// maxUnavailable (flags win).
func fromStatefulSet(obj *manifest.Object, o *options, s *rollout.Strategy, pods []*corev1.Pod, podObjs []*manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	sts := &appsv1.StatefulSet{}
	if err := obj.Decode(sts); err != nil {
		return nil, nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sts.Spec.Selector == nil || sel.Empty() {
		return nil, nil, obj.Errorf("spec.selector is missing or invalid")
	}
	var keptPods []*corev1.Pod
	var keptObjs []*manifest.Object
	for i, p := range pods {
		if p.Namespace == namespaceOf(obj) && sel.Matches(labelSet(p.Labels)) {
			keptPods, keptObjs = append(keptPods, p), append(keptObjs, podObjs[i])
		}
	}
	if s.TargetRevision == "" {
		s.TargetRevision = sts.Status.UpdateRevision
		if s.TargetRevision == "" {
			return nil, nil, obj.Errorf("status.updateRevision is empty: give --target")
		}
	}
	if s.Replicas == 0 {
		s.Replicas = 1
		if sts.Spec.Replicas != nil {
			s.Replicas = int(*sts.Spec.Replicas)
		}
	}
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; o.maxUnavailable == "" && ru != nil && ru.MaxUnavailable != nil {
		s.MaxUnavailable = ru.MaxUnavailable
	}
	if o.maxSurge == "" {
		zero := intOrZero()
		s.MaxSurge = &zero // StatefulSets never surge
	}
	return keptPods, keptObjs, nil
}

// fromModelServing takes the ModelServing's pods (one role's in Rolling and
// Lockstep mode), mode, labels, target revision, replicas, budgets, partition
// and minReadySeconds from servingv1.RolloutPools, the operator's mapping;
// flags given explicitly win.
func fromModelServing(obj *manifest.Object, o *options, s *rollout.Strategy, opts *rollout.PodOptions, pods []*corev1.Pod, podObjs []*manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	ms := &servingv1.ModelServing{}
	if err := obj.Decode(ms); err != nil {
		return nil, nil, err
	}
	if len(ms.Spec.Roles) == 0 {
		return nil, nil, obj.Errorf("spec.roles is empty")
	}
	if o.role != "" && !slices.ContainsFunc(ms.Spec.Roles, func(r servingv1.Role) bool { return r.Name == o.role }) {
		return nil, nil, usagef("--role %q: %s has no such role", o.role, obj)
	}
	switch ms.Spec.RolloutStrategy.Mode {
	case servingv1.GangMode, servingv1.GroupMode, servingv1.RollingMode, servingv1.LockstepMode, "":
	default:
		return nil, nil, obj.Errorf("spec.rolloutStrategy.mode %q is not Rolling, Gang, Group or Lockstep", ms.Spec.RolloutStrategy.Mode)
	}
	ms.Namespace = namespaceOf(obj)
	// Pods without a namespace are in the default one, as kubectl reads them.
	byPod := map[*corev1.Pod]*manifest.Object{}
	for i, p := range pods {
		byPod[p] = podObjs[i]
	}
	pools, err := servingv1.RolloutPools(ms, pods)
	if err != nil {
		return nil, nil, obj.Errorf("%v", err)
	}
	pool := pools[0]
	for _, pl := range pools {
		if o.role != "" && pl.Role == o.role {
			pool = pl
		}
	}
	keptPods := pool.Pods
	keptObjs := make([]*manifest.Object, len(keptPods))
	for i, p := range keptPods {
		keptObjs[i] = byPod[p]
		if keptObjs[i] == nil { // a copy ReadyByGates made: find its object by name
			for j, q := range pods {
				if q.Namespace == p.Namespace && q.Name == p.Name {
					keptObjs[i] = podObjs[j]
				}
			}
		}
	}
	set := map[string]bool{}
	o.flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	st := pool.Strategy
	s.Mode, s.Columns = st.Mode, st.Columns
	*opts = pool.Options
	if !set["target"] {
		s.TargetRevision = st.TargetRevision
		if s.TargetRevision == "" {
			return nil, nil, obj.Errorf("status.updateRevision is empty: give --target")
		}
	}
	if !set["history"] && st.History != nil {
		s.History = st.History
	}
	if !set["replicas"] {
		s.Replicas = st.Replicas
	}
	if !set["max-unavailable"] && st.MaxUnavailable != nil {
		s.MaxUnavailable = st.MaxUnavailable
	}
	if !set["max-surge"] && st.MaxSurge != nil {
		s.MaxSurge = st.MaxSurge
	}
	if !set["latest-ratio"] {
		s.LatestRatio = st.LatestRatio
	}
	if set["min-ready-seconds"] {
		opts.MinReadySeconds = int32(o.minReadySeconds)
	}
	return keptPods, keptObjs, nil
}
