// Package owners names the workload kinds kplan plans for beside their own
// controllers: LeaderWorkerSet, DisaggregatedSet, kthena's ModelServing and the
// examples' ModelServing. For each it says which pods belong to an owner, which
// pod labels name the group, the role and a member's index in its group, and how
// the ranktable planner orders ranks, so that every embedding (the CLI, the
// operator) reads those workloads the same way. Owners are read as metadata:
// nothing here depends on the workloads' Go types.
package owners

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/ranktable"
)

// LeaderWorkerSet's pod labels (sigs.k8s.io/lws, api/leaderworkerset/v1), set by its
// controller and its pod webhook on every pod of a group: the leader (worker index
// 0, named <lws>-<group>) and its workers (named <lws>-<group>-<worker>).
const (
	// LWSNameLabel holds the LeaderWorkerSet's name.
	LWSNameLabel = "leaderworkerset.sigs.k8s.io/name"
	// LWSGroupIndexLabel holds the group's index, 0..replicas-1 (a group is one
	// replica: a leader and its workers).
	LWSGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index"
	// LWSWorkerIndexLabel holds the pod's index in its group, 0 (the leader) to
	// size-1.
	LWSWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	// LWSGroupKeyLabel holds a hash unique to the group (of its leader pod's
	// namespace and name), the same on all its pods.
	LWSGroupKeyLabel = "leaderworkerset.sigs.k8s.io/group-key"
	// LWSRevisionLabel holds the revision (template hash) the pod was created
	// from; the leader StatefulSet, named like the LeaderWorkerSet, carries the
	// revision being rolled out.
	LWSRevisionLabel = "leaderworkerset.sigs.k8s.io/template-revision-hash"
)

// DisaggregatedSet's labels (sigs.k8s.io/lws, api/disaggregatedset/v1). Its
// controller creates one LeaderWorkerSet per role and revision, named
// <set>-<revision>-<role>, and sets these labels on it and on its pods.
const (
	// DSNameLabel holds the DisaggregatedSet's name.
	DSNameLabel = "disaggregatedset.x-k8s.io/name"
	// DSRoleLabel holds the role's name (such as prefill or decode).
	DSRoleLabel = "disaggregatedset.x-k8s.io/role"
	// DSRevisionLabel holds the set's revision: a hash of all its roles'
	// templates.
	DSRevisionLabel = "disaggregatedset.x-k8s.io/revision"
)

// Preset is how kplan reads one owner kind's pods.
type Preset struct {
	// GVK is the owner's kind; a Preset matches any version of its group and kind.
	GVK schema.GroupVersionKind
	// Grouping places the owner's pods in ranktable groups: its OwnerLabel names
	// the owner on every pod (the pods' controller is not the owner itself), its
	// GroupLabel the group, RoleLabel the role.
	Grouping ranktable.Grouping
	// Order is the rank order within a group. ranktable.PodIndex orders a group's
	// pods by their hccl/rankIndex annotation when they carry one, else by pod
	// name, digit runs by value: for LeaderWorkerSet pods (<lws>-<group>, then
	// <lws>-<group>-<worker>) that is the order of MemberIndexLabel.
	Order ranktable.Order
	// MemberIndexLabel names the pod label holding the pod's index in its group.
	MemberIndexLabel string
	// RevisionLabel names the pod label holding the revision the pod runs.
	RevisionLabel string
}

// The presets.
var (
	// LeaderWorkerSet (leaderworkerset.x-k8s.io): a group is one replica, a
	// leader and its workers, ordered by worker index.
	LeaderWorkerSet = Preset{
		GVK:              schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
		Grouping:         ranktable.Grouping{OwnerLabel: LWSNameLabel, GroupLabel: LWSGroupIndexLabel},
		Order:            ranktable.PodIndex,
		MemberIndexLabel: LWSWorkerIndexLabel,
		RevisionLabel:    LWSRevisionLabel,
	}
	// DisaggregatedSet (disaggregatedset.x-k8s.io): named roles, each a
	// LeaderWorkerSet per revision. A group is one replica of one role's
	// LeaderWorkerSet (its group key: group indexes repeat across roles and
	// revisions), its role the set's role; ordered by worker index.
	DisaggregatedSet = Preset{
		GVK:              schema.GroupVersionKind{Group: "disaggregatedset.x-k8s.io", Version: "v1", Kind: "DisaggregatedSet"},
		Grouping:         ranktable.Grouping{OwnerLabel: DSNameLabel, GroupLabel: LWSGroupKeyLabel, RoleLabel: DSRoleLabel},
		Order:            ranktable.PodIndex,
		MemberIndexLabel: LWSWorkerIndexLabel,
		RevisionLabel:    DSRevisionLabel,
	}
	// KthenaModelServing is kthena's ModelServing (workload.kthena.io): its
	// serving groups, roles and role replicas, by kthena's pod labels (the
	// ranktable package's defaults).
	KthenaModelServing = Preset{
		GVK:           schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
		Grouping:      ranktable.Grouping{OwnerLabel: ranktable.LabelModelServingName},
		RevisionLabel: "modelserving.volcano.sh/revision",
	}
	// ExampleModelServing is the examples operator's ModelServing
	// (serving.examples.kplan.dev), whose pods carry kthena's labels.
	ExampleModelServing = Preset{
		GVK:              servingv1.GroupVersion.WithKind("ModelServing"),
		Grouping:         ranktable.Grouping{OwnerLabel: servingv1.LabelName},
		MemberIndexLabel: servingv1.LabelMemberIndex,
		RevisionLabel:    servingv1.LabelRevision,
	}
)

// Presets are all presets, in the order above.
func Presets() []Preset {
	return []Preset{LeaderWorkerSet, DisaggregatedSet, KthenaModelServing, ExampleModelServing}
}

// For returns the preset of an owner kind (any version of the group), and false
// when there is none.
func For(gvk schema.GroupVersionKind) (Preset, bool) {
	for _, p := range Presets() {
		if p.GVK.GroupKind() == gvk.GroupKind() {
			return p, true
		}
	}
	return Preset{}, false
}
