package owners

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
)

// LWSObject is the part of a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) kplan
// reads, decoded from its JSON (as kubectl prints it); other fields are ignored.
type LWSObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              LWSSpec `json:"spec"`
}

// LWSSpec is the part of a LeaderWorkerSet's spec kplan reads.
type LWSSpec struct {
	// Replicas is the number of groups (default 1).
	Replicas *int32 `json:"replicas,omitempty"`
	// LeaderWorkerTemplate.Size is the number of pods per group, the leader
	// included (default 1).
	LeaderWorkerTemplate struct {
		Size *int32 `json:"size,omitempty"`
	} `json:"leaderWorkerTemplate"`
	// RolloutStrategy.RollingUpdateConfiguration holds the rolling update's
	// partition, maxUnavailable (default 1) and maxSurge (default 0).
	RolloutStrategy struct {
		Type                       string `json:"type,omitempty"`
		RollingUpdateConfiguration *struct {
			Partition      *int32              `json:"partition,omitempty"`
			MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
			MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
		} `json:"rollingUpdateConfiguration,omitempty"`
	} `json:"rolloutStrategy"`
}

// DSObject is the part of a DisaggregatedSet (disaggregatedset.x-k8s.io/v1) kplan
// reads.
type DSObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		// Roles are the set's roles, each a LeaderWorkerSet template.
		Roles []DSRole `json:"roles"`
	} `json:"spec"`
}

// DSRole is one role of a DisaggregatedSet.
type DSRole struct {
	Name string  `json:"name"`
	Spec LWSSpec `json:"spec"`
}

// Pool is the pods of one rollout unit and the strategy and pod options kplan
// plans it with.
type Pool struct {
	// Role names the role (a DisaggregatedSet's); empty for a LeaderWorkerSet.
	Role     string
	Pods     []*corev1.Pod
	Strategy rollout.Strategy
	Options  rollout.PodOptions
}

// LWSRollout maps a LeaderWorkerSet's rolling update to kplan's Gang mode: each
// group (leader and workers, by group index) is a gang whose members' columns are
// their worker indexes 0..size-1; the groups' index is the group index; the
// budget is the rolling update's maxUnavailable and maxSurge (defaults 1 and 0)
// over spec.replicas groups; a partition p keeps p groups on the old revision,
// so replicas-p groups run the target. Which groups a plan moves first follows
// the replicas' priorities: give the replicas read from Pool's pods
// HighestIndexFirst, as LWS moves groups from the highest index down (so a
// partition p keeps groups 0..p-1). target is the revision to roll out (the
// template-revision-hash the leader StatefulSet carries). Pods are the
// LeaderWorkerSet's among pods (by its name label, in its namespace).
func LWSRollout(lws *LWSObject, target string, pods []*corev1.Pod) (Pool, error) {
	if lws == nil {
		return Pool{}, fmt.Errorf("leaderworkerset: nil")
	}
	st, opts, err := lwsStrategy(&lws.Spec, target, LWSGroupIndexLabel, LWSRevisionLabel, intstr.FromInt32(1), intstr.FromInt32(0))
	if err != nil {
		return Pool{}, fmt.Errorf("LeaderWorkerSet %s/%s: %w", lws.Namespace, lws.Name, err)
	}
	if rc := lws.Spec.RolloutStrategy.RollingUpdateConfiguration; rc != nil && rc.Partition != nil {
		p := intstr.FromInt32(*rc.Partition)
		if st.LatestRatio, err = servingv1.LatestRatio(&p, st.Replicas, 1); err != nil {
			return Pool{}, fmt.Errorf("LeaderWorkerSet %s/%s: %w", lws.Namespace, lws.Name, err)
		}
	}
	opts.Labels.Index = LWSGroupIndexLabel
	return Pool{Pods: matching(pods, lws.Namespace, LWSNameLabel, lws.Name), Strategy: st, Options: opts}, nil
}

// DSRollout maps a DisaggregatedSet's update to kplan's Lockstep mode over its
// roles, in spec order: each role's groups, across the role's LeaderWorkerSets of
// every revision, are gangs (by group key, as group indexes repeat across
// revisions) of worker-index columns, planned in Gang mode over the role's
// spec.replicas groups. The budget is the role's rolling update configuration
// read as the DisaggregatedSet controller reads it: maxUnavailable and maxSurge
// when maxUnavailable is above 0, else maxSurge, and surge 1 when both are 0 or
// absent. target is the set's revision to roll out (the revision label of its
// newest LeaderWorkerSets). Pods are the set's among pods (by its name label, in
// its namespace), split by role label.
func DSRollout(ds *DSObject, target string, pods []*corev1.Pod) ([]Pool, error) {
	if ds == nil {
		return nil, fmt.Errorf("disaggregatedset: nil")
	}
	if len(ds.Spec.Roles) == 0 {
		return nil, fmt.Errorf("DisaggregatedSet %s/%s: spec.roles is empty", ds.Namespace, ds.Name)
	}
	mine := matching(pods, ds.Namespace, DSNameLabel, ds.Name)
	out := make([]Pool, 0, len(ds.Spec.Roles))
	for i := range ds.Spec.Roles {
		r := &ds.Spec.Roles[i]
		if r.Name == "" {
			return nil, fmt.Errorf("DisaggregatedSet %s/%s: spec.roles[%d].name is empty", ds.Namespace, ds.Name, i)
		}
		unavailable, surge := intstr.FromInt32(0), intstr.FromInt32(1)
		if rc := r.Spec.RolloutStrategy.RollingUpdateConfiguration; rc != nil {
			replicas := int(ptrOr(r.Spec.Replicas, 1))
			u, err := scaled(rc.MaxUnavailable, replicas, false)
			if err != nil {
				return nil, fmt.Errorf("DisaggregatedSet %s/%s: role %s: maxUnavailable: %w", ds.Namespace, ds.Name, r.Name, err)
			}
			s, err := scaled(rc.MaxSurge, replicas, true)
			if err != nil {
				return nil, fmt.Errorf("DisaggregatedSet %s/%s: role %s: maxSurge: %w", ds.Namespace, ds.Name, r.Name, err)
			}
			switch {
			case u > 0:
				unavailable, surge = intstr.FromInt(u), intstr.FromInt(s)
			case s > 0:
				surge = intstr.FromInt(s)
			}
		}
		spec := r.Spec
		spec.RolloutStrategy.RollingUpdateConfiguration = nil
		st, opts, err := lwsStrategy(&spec, target, LWSGroupKeyLabel, DSRevisionLabel, unavailable, surge)
		if err != nil {
			return nil, fmt.Errorf("DisaggregatedSet %s/%s: role %s: %w", ds.Namespace, ds.Name, r.Name, err)
		}
		out = append(out, Pool{Role: r.Name, Pods: matching(mine, ds.Namespace, DSRoleLabel, r.Name), Strategy: st, Options: opts})
	}
	return out, nil
}

// lwsStrategy is the Gang strategy of one LeaderWorkerSet spec: gangs by gangLabel,
// members by worker index; maxUnavailable and maxSurge from the spec, else the
// defaults given.
func lwsStrategy(spec *LWSSpec, target, gangLabel, revisionLabel string, maxUnavailable, maxSurge intstr.IntOrString) (rollout.Strategy, rollout.PodOptions, error) {
	replicas, size := ptrOr(spec.Replicas, 1), ptrOr(spec.LeaderWorkerTemplate.Size, 1)
	switch {
	case replicas < 0:
		return rollout.Strategy{}, rollout.PodOptions{}, fmt.Errorf("spec.replicas: %d is negative", replicas)
	case size < 1 || size > rollout.MaxReplicas:
		return rollout.Strategy{}, rollout.PodOptions{}, fmt.Errorf("spec.leaderWorkerTemplate.size: %d is not 1..%d", size, rollout.MaxReplicas)
	}
	if t := spec.RolloutStrategy.Type; t != "" && t != "RollingUpdate" {
		return rollout.Strategy{}, rollout.PodOptions{}, fmt.Errorf("spec.rolloutStrategy.type: %q is not RollingUpdate", t)
	}
	if rc := spec.RolloutStrategy.RollingUpdateConfiguration; rc != nil {
		if rc.MaxUnavailable != nil {
			maxUnavailable = *rc.MaxUnavailable
		}
		if rc.MaxSurge != nil {
			maxSurge = *rc.MaxSurge
		}
	}
	columns := make([]string, size)
	for i := range columns {
		columns[i] = strconv.Itoa(i)
	}
	st := rollout.Strategy{
		Mode: rollout.Gang, TargetRevision: target, Replicas: int(replicas), Columns: columns,
		MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge,
	}
	opts := rollout.PodOptions{
		Labels:  rollout.PodLabels{Revision: revisionLabel, Gang: gangLabel, Column: LWSWorkerIndexLabel},
		Columns: append([]string(nil), columns...),
	}
	return st, opts, nil
}

// matching returns the pods in namespace whose label key is value, in order.
func matching(pods []*corev1.Pod, namespace, key, value string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p != nil && p.Namespace == namespace && p.Labels[key] == value {
			out = append(out, p)
		}
	}
	return out
}

// scaled resolves an integer or percent of replicas, rounding up or down; nil is 0.
func scaled(v *intstr.IntOrString, replicas int, roundUp bool) (int, error) {
	if v == nil {
		return 0, nil
	}
	return intstr.GetScaledValueFromIntOrPercent(v, replicas, roundUp)
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// HighestIndexFirst gives each replica the priority -Index, so that rollout plans
// update and delete the highest group indexes first, as the LeaderWorkerSet
// controller does (its groups are a StatefulSet's ordinals, which a rolling update
// moves from the highest down and a scale-down removes from the top).
func HighestIndexFirst(replicas []rollout.Replica) {
	for i := range replicas {
		replicas[i].Priority = -int32(replicas[i].Index)
	}
}
