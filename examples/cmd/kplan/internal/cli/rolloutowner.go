package cli

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/examples/internal/owners"
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
	keptObjs := objectsOf(keptPods, pods, podObjs) // ReadyByGates may have made copies
	fromPool(o, s, opts, pool.Strategy, pool.Options)
	if s.TargetRevision == "" {
		return nil, nil, obj.Errorf("status.updateRevision is empty: give --target")
	}
	return keptPods, keptObjs, nil
}

// fromPool takes an owner's mode, columns, pod options, target revision, history,
// replicas, budgets, latest ratio (flags given explicitly win), and minReadySeconds
// (the flag wins when given).
func fromPool(o *options, s *rollout.Strategy, opts *rollout.PodOptions, st rollout.Strategy, stOpts rollout.PodOptions) {
	s.Mode, s.Columns = st.Mode, st.Columns
	minReady := opts.MinReadySeconds
	*opts = stOpts
	if !o.given("target") {
		s.TargetRevision = st.TargetRevision
	}
	if !o.given("history") && st.History != nil {
		s.History = st.History
	}
	if !o.given("replicas") {
		s.Replicas = st.Replicas
	}
	if !o.given("max-unavailable") && st.MaxUnavailable != nil {
		s.MaxUnavailable = st.MaxUnavailable
	}
	if !o.given("max-surge") && st.MaxSurge != nil {
		s.MaxSurge = st.MaxSurge
	}
	if !o.given("latest-ratio") {
		s.LatestRatio = st.LatestRatio
	}
	if o.given("min-ready-seconds") {
		opts.MinReadySeconds = minReady
	}
}

// rolloutOwner returns the one owner in the input whose rollout kplan reads (a
// StatefulSet, the examples operator's ModelServing, a LeaderWorkerSet or a
// DisaggregatedSet), or nil. A LeaderWorkerSet's StatefulSets and a
// DisaggregatedSet's LeaderWorkerSets in the input are parts of their owner, not
// owners.
func rolloutOwner(objs []manifest.Object) (*manifest.Object, error) {
	var found []*manifest.Object
	for i := range objs {
		obj := &objs[i]
		group, _, _ := strings.Cut(obj.APIVersion, "/")
		switch {
		case obj.Kind == "StatefulSet": // of any API group
			if labelsOf(obj)[owners.LWSNameLabel] == "" {
				found = append(found, obj)
			}
		case obj.Kind == "ModelServing" && obj.APIVersion == servingv1.GroupVersion.String(): // not kthena's
			found = append(found, obj)
		case obj.Kind == "LeaderWorkerSet" && group == owners.LeaderWorkerSet.GVK.Group:
			if ds := labelsOf(obj)[owners.DSNameLabel]; ds == "" || !slices.ContainsFunc(objs, func(d manifest.Object) bool {
				return d.Kind == "DisaggregatedSet" && d.Name == ds && namespaceOf(&d) == namespaceOf(obj)
			}) {
				found = append(found, obj)
			}
		case obj.Kind == "DisaggregatedSet" && group == owners.DisaggregatedSet.GVK.Group:
			found = append(found, obj)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%s: only one StatefulSet, ModelServing, LeaderWorkerSet or DisaggregatedSet may be given, %s is another", found[1], found[0].ID())
}

// labelsOf returns an object's labels; none when they do not decode (Decode
// reports that when the object is used).
func labelsOf(obj *manifest.Object) map[string]string {
	var m struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = obj.Decode(&m)
	return m.Metadata.Labels
}

// fromLeaderWorkerSet takes a LeaderWorkerSet's pods and its rolling update as
// Gang mode over its groups (owners.LWSRollout); flags given explicitly win. The
// target revision is --target, else the template-revision-hash label of its
// leader StatefulSet (named like it) when the input holds it.
func fromLeaderWorkerSet(obj *manifest.Object, objs []manifest.Object, o *options, s *rollout.Strategy, opts *rollout.PodOptions, pods []*corev1.Pod, podObjs []*manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	lws := &owners.LWSObject{}
	if err := obj.Decode(lws); err != nil {
		return nil, nil, err
	}
	lws.Namespace = namespaceOf(obj)
	target := o.target
	for _, sts := range byKind(objs, "StatefulSet") {
		if target == "" && sts.Name == lws.Name && namespaceOf(sts) == lws.Namespace && labelsOf(sts)[owners.LWSNameLabel] == lws.Name {
			target = labelsOf(sts)[owners.LWSRevisionLabel]
		}
	}
	pool, err := owners.LWSRollout(lws, target, pods)
	if err != nil {
		return nil, nil, obj.Errorf("%v", err)
	}
	fromPool(o, s, opts, pool.Strategy, pool.Options)
	if s.TargetRevision == "" {
		return nil, nil, obj.Errorf("the revision to roll out is unknown: give --target, or the leader StatefulSet (kubectl get sts %s -o yaml), whose label %s holds it", lws.Name, owners.LWSRevisionLabel)
	}
	return pool.Pods, objectsOf(pool.Pods, pods, podObjs), nil
}

// objectsOf returns the objects of kept, some of pods (or copies of them, found by
// name), whose objects are podObjs.
func objectsOf(kept, pods []*corev1.Pod, podObjs []*manifest.Object) []*manifest.Object {
	out := make([]*manifest.Object, len(kept))
	for i, p := range kept {
		for j, q := range pods {
			if q == p || q.Namespace == p.Namespace && q.Name == p.Name {
				out[i] = podObjs[j]
				break
			}
		}
	}
	return out
}
