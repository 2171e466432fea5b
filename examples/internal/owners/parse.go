package owners

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplan-dev/kplan/ranktable"
)

// Names are the presets by the names Parse knows.
var Names = map[string]Preset{
	"modelserving":     ExampleModelServing,
	"kthena":           KthenaModelServing,
	"leaderworkerset":  LeaderWorkerSet,
	"disaggregatedset": DisaggregatedSet,
}

// Parse reads an owner kind as the operator's --ranktable-owner flag gives it: a preset
// name (modelserving, kthena, leaderworkerset, disaggregatedset), or
// group/version/Kind followed by comma-separated settings of its pods' labels:
//
//	example.com/v1/Engine,owner-label=example.com/engine,group-label=example.com/group,order=podindex
//
// owner-label (required: the label naming the owner on each pod), group-label,
// role-label, role-id-label, entry-label (defaults: kthena's labels),
// member-index-label and revision-label (together, they keep each group's table on
// its leader's revision) and order (natural, lexicographic or podindex). Such a
// kind's groups expect the pods they have.
func Parse(s string) (Preset, error) {
	if p, ok := Names[s]; ok {
		return p, nil
	}
	parts := strings.Split(s, ",")
	gvk := strings.Split(parts[0], "/")
	if len(gvk) != 3 || gvk[0] == "" || gvk[1] == "" || gvk[2] == "" {
		return Preset{}, fmt.Errorf("ranktable owner %q: neither a preset (modelserving, kthena, leaderworkerset, disaggregatedset) nor group/version/Kind", s)
	}
	p := Preset{GVK: schema.GroupVersionKind{Group: gvk[0], Version: gvk[1], Kind: gvk[2]}}
	if _, ok := For(p.GVK); ok {
		return Preset{}, fmt.Errorf("ranktable owner %q: %s has a preset: give its name", s, p.GVK.GroupKind())
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			return Preset{}, fmt.Errorf("ranktable owner %q: setting %q is not key=value", s, kv)
		}
		switch k {
		case "owner-label":
			p.Grouping.OwnerLabel = v
		case "group-label":
			p.Grouping.GroupLabel = v
		case "role-label":
			p.Grouping.RoleLabel = v
		case "role-id-label":
			p.Grouping.RoleIDLabel = v
		case "entry-label":
			p.Grouping.EntryLabel = v
		case "member-index-label":
			p.MemberIndexLabel = v
		case "revision-label":
			p.RevisionLabel = v
		case "order":
			orders := map[string]ranktable.Order{"natural": ranktable.Natural, "lexicographic": ranktable.Lexicographic, "podindex": ranktable.PodIndex}
			o, ok := orders[v]
			if ok {
				p.Order = o
			} else {
				return Preset{}, fmt.Errorf("ranktable owner %q: order %q: want natural, lexicographic or podindex", s, v)
			}
		default:
			return Preset{}, fmt.Errorf("ranktable owner %q: unknown setting %q", s, k)
		}
	}
	if p.Grouping.OwnerLabel == "" {
		return Preset{}, fmt.Errorf("ranktable owner %q: owner-label is required (the pod label naming the owner)", s)
	}
	return p, nil
}
