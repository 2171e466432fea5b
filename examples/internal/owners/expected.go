package owners

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplan-dev/kplan/ranktable"
)

// kthenaObject is the part of kthena's ModelServing (workload.kthena.io/v1alpha1)
// Expected reads: the serving groups and each role's replicas and workers.
type kthenaObject struct {
	Spec struct {
		Replicas *int32 `json:"replicas,omitempty"`
		Template struct {
			Roles []struct {
				Name           string `json:"name"`
				Replicas       *int32 `json:"replicas,omitempty"`
				WorkerReplicas int32  `json:"workerReplicas,omitempty"`
			} `json:"roles"`
		} `json:"template"`
	} `json:"spec"`
}

// Expected returns the pods each ranktable group of an owner of p's kind must
// have, read from the owner's spec (obj is the owner as JSON-decoded fields, such
// as an unstructured.Unstructured's Object) and from its pods (those that are not
// being deleted and carry p's owner label with name, the owner's name):
//
//   - LeaderWorkerSet: group level only (its groups have no roles). Groups
//     0..spec.replicas-1 and those its pods are in (a surge group has an index
//     beyond spec.replicas), each expecting spec.leaderWorkerTemplate.size pods.
//   - DisaggregatedSet: a group per role replica its pods are in (by group key),
//     expecting that role's size; at role level keyed by the role too. Groups
//     appear with their first pod (their group key is known only then).
//   - kthena's ModelServing: serving groups <name>-0..<name>-(spec.replicas-1)
//     and those its pods are in; at group level each expects every role's
//     replicas times (1 + workerReplicas); at role level each role replica its
//     pods are in (by role id) expects 1 + workerReplicas.
//
// Any other kind, the example ModelServing included (its controller computes its
// own), gets nil: every group expects the pods it has. A spec that does not
// decode, or a level the kind has no groups at, is an error naming the owner.
func (p Preset) Expected(name string, obj map[string]any, level ranktable.Level, pods []*corev1.Pod) (map[ranktable.GroupKey]int, error) {
	live := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if pod != nil && pod.DeletionTimestamp == nil && pod.Labels[p.Grouping.OwnerLabel] == name {
			live = append(live, pod)
		}
	}
	fail := func(err error) (map[ranktable.GroupKey]int, error) {
		return nil, fmt.Errorf("%s %s: %w", p.GVK.Kind, name, err)
	}
	switch p.GVK.GroupKind() {
	case LeaderWorkerSet.GVK.GroupKind():
		var lws LWSObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &lws); err != nil {
			return fail(fmt.Errorf("spec: %w", err))
		}
		if level != ranktable.LevelGroup {
			return fail(fmt.Errorf("a LeaderWorkerSet's groups have no roles: its ranktable level must be %q, not %q", ranktable.LevelGroup, level))
		}
		size := int(derefOr(lws.Spec.LeaderWorkerTemplate.Size, 1))
		out := map[ranktable.GroupKey]int{}
		for g := range int(derefOr(lws.Spec.Replicas, 1)) {
			out[ranktable.GroupKey{Group: strconv.Itoa(g)}] = size
		}
		for _, pod := range live {
			if g := pod.Labels[LWSGroupIndexLabel]; g != "" {
				out[ranktable.GroupKey{Group: g}] = size
			}
		}
		return out, nil
	case DisaggregatedSet.GVK.GroupKind():
		var ds DSObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &ds); err != nil {
			return fail(fmt.Errorf("spec: %w", err))
		}
		sizes := map[string]int{}
		for _, r := range ds.Spec.Roles {
			sizes[r.Name] = int(derefOr(r.Spec.LeaderWorkerTemplate.Size, 1))
		}
		out := map[ranktable.GroupKey]int{}
		for _, pod := range live {
			key, role := pod.Labels[LWSGroupKeyLabel], pod.Labels[DSRoleLabel]
			size, ok := sizes[role]
			if key == "" || !ok {
				continue // in no group: the plan lists it as unmatched
			}
			k := ranktable.GroupKey{Group: key}
			if level == ranktable.LevelRole {
				k.Role = role
			}
			out[k] = size
		}
		return out, nil
	case KthenaModelServing.GVK.GroupKind():
		var ms kthenaObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &ms); err != nil {
			return fail(fmt.Errorf("spec: %w", err))
		}
		members := map[string]int{} // per role replica
		perGroup := 0
		for _, r := range ms.Spec.Template.Roles {
			members[r.Name] = 1 + int(max(r.WorkerReplicas, 0))
			perGroup += int(derefOr(r.Replicas, 1)) * members[r.Name]
		}
		groups := map[string]bool{}
		for g := range int(derefOr(ms.Spec.Replicas, 1)) {
			groups[name+"-"+strconv.Itoa(g)] = true
		}
		for _, pod := range live {
			if g := pod.Labels[ranktable.LabelGroupName]; g != "" {
				groups[g] = true
			}
		}
		out := map[ranktable.GroupKey]int{}
		if level == ranktable.LevelGroup {
			for g := range groups {
				out[ranktable.GroupKey{Group: g}] = perGroup
			}
			return out, nil
		}
		for _, pod := range live {
			g, role := pod.Labels[ranktable.LabelGroupName], pod.Labels[ranktable.LabelRole]
			id := pod.Labels[ranktable.LabelRoleID]
			if id == "" {
				id = role
			}
			if n, ok := members[role]; ok && g != "" && id != "" {
				out[ranktable.GroupKey{Group: g, Role: id}] = n
			}
		}
		return out, nil
	}
	return nil, nil
}

func derefOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return max(*p, 0)
}

// SameRevision returns pods without those whose revision differs from their
// group's leader (the pod whose p.MemberIndexLabel is "0"): while a rolling update
// replaces a group, its table then lists only pods of the revision its leader
// runs, never a mix. Groups are by p.Grouping.GroupLabel; kinds without a member
// index or revision label, and groups without a leader, keep all their pods. pods
// is not changed; the result keeps their order.
func SameRevision(p Preset, pods []*corev1.Pod) []*corev1.Pod {
	if p.MemberIndexLabel == "" || p.RevisionLabel == "" || p.Grouping.GroupLabel == "" {
		return pods
	}
	leader := map[string]string{}
	for _, pod := range pods {
		if pod != nil && pod.DeletionTimestamp == nil && pod.Labels[p.MemberIndexLabel] == "0" {
			leader[pod.Labels[p.Grouping.GroupLabel]] = pod.Labels[p.RevisionLabel]
		}
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if pod != nil {
			if rev, ok := leader[pod.Labels[p.Grouping.GroupLabel]]; ok && pod.Labels[p.RevisionLabel] != rev {
				continue
			}
		}
		out = append(out, pod)
	}
	return out
}
