package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/ranktable"
)

var rankTableCommand = &command{
	name:    "ranktable",
	summary: "the ranktable ConfigMaps to write and each group's status (ranktable.Plan)",
	usage: `The input holds the owner (any kind annotated kthena.io/ranktable-template, e.g. a
ModelServing or StatefulSet), its pods, and optionally the existing ranktable
ConfigMaps and the template ConfigMaps (from --templates-namespace; templates
that ship with kplan, like ascend-ranktable-template-mindie-role, need not be
given). Prints the desired ConfigMaps with their action, each group's phase,
the events to record and when to requeue.

Pods belong to the owner through their controller ownerReference or, as kthena
finds a ModelServing's pods, through the --owner-label label naming the owner.
They are grouped by kthena's serving-group label (and role id or role label at
role level); with --single-group, for owners whose pods carry no serving-group
label, all the owner's pods are one serving group. Pods that belong to no group
(another owner's, or without the labels their group needs) are listed under
unmatched with the reason, and each gets a warning on stderr. Unknown keys in
the template ConfigMaps are warnings too. Each group has a reason and message a
reconciler sets on a condition; with --expect, ConfigMaps of the owner's groups
no longer expected are deleted.

A LeaderWorkerSet (leaderworkerset.x-k8s.io) or a DisaggregatedSet
(disaggregatedset.x-k8s.io) is read with its own labels: its pods by the set's
name label, a group per LeaderWorkerSet replica (leader and workers: the group
index; for a DisaggregatedSet, whose roles are LeaderWorkerSets, the group key
and the role label), ranks in worker index order (podindex). --order and
--owner-label, when given, win.

  kubectl get modelserving qwen -o yaml > owner.yaml
  kubectl get pods -l modelserving.volcano.sh/name=qwen -o yaml | kplan ranktable -f owner.yaml -f -
  kubectl get lws vllm -o yaml > lws.yaml
  kubectl get pods -l leaderworkerset.sigs.k8s.io/name=vllm -o yaml | kplan ranktable -f lws.yaml -f -
`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.owner, "owner", "", "the owner, as name or namespace/name, when the input holds several")
		fs.StringVar(&o.templatesNamespace, "templates-namespace", ranktable.DefaultTemplateNamespace, "namespace of the template ConfigMaps")
		fs.Var(&o.expect, "expect", "expected pods of a group, as group/role=N or group=N, or /role=N with --single-group (repeatable; default: every group expects the pods it has)")
		fs.StringVar(&o.order, "order", "natural", "rank order: natural, lexicographic or podindex (a LeaderWorkerSet's or DisaggregatedSet's pods: podindex unless given)")
		fs.DurationVar(&o.timeout, "timeout", 0, "how long a group may wait for its pods' annotations (0: forever)")
		fs.Var(&o.now, "now", "the current time, RFC 3339 (default: the clock)")
		fs.StringVar(&o.timestamp, "timestamp", "", "the value templates see as .Timestamp")
		fs.BoolVar(&o.configMapsOnly, "configmaps", false, "print only the ConfigMaps to create or update, as a v1 List for kubectl apply")
		fs.StringVar(&o.ownerLabel, "owner-label", ranktable.LabelModelServingName, "pod label whose value names the owner (\"\": ownerReferences only)")
		fs.BoolVar(&o.singleGroup, "single-group", false, "the owner's pods carry no serving-group label: they are all one serving group")
	},
	run: runRankTable,
}

// rankTablePlan is what ranktable prints.
type rankTablePlan struct {
	Owner        string         `json:"owner"`
	Template     string         `json:"template"`
	Level        string         `json:"level"`
	Groups       []groupStatus  `json:"groups"`
	ConfigMaps   []configMapOut `json:"configMaps"`
	Events       []eventOut     `json:"events,omitempty"`
	RequeueAfter string         `json:"requeueAfter,omitempty"`
	Unmatched    []unmatchedPod `json:"unmatched,omitempty"`
}

type unmatchedPod struct {
	Pod     string `json:"pod"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type groupStatus struct {
	Group     string   `json:"group,omitempty"`
	Role      string   `json:"role,omitempty"`
	ConfigMap string   `json:"configMap"`
	Phase     string   `json:"phase"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message"`
	Pods      int      `json:"pods"`
	Expected  int      `json:"expected"`
	Missing   []string `json:"missing,omitempty"`
	Absent    []string `json:"absent,omitempty"`
	Error     string   `json:"error,omitempty"`
}

type configMapOut struct {
	Action    string            `json:"action"`
	ConfigMap *corev1.ConfigMap `json:"configMap"`
}

type eventOut struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Object  string `json:"object"`
	Message string `json:"message"`
}

// toEventOut is how an event is printed.
func toEventOut(e kplan.Event) eventOut {
	return eventOut{Type: e.Type, Reason: string(e.Reason), Object: e.Object.Kind + " " + e.Object.Namespace + "/" + e.Object.Name, Message: e.Message}
}

// objectList is a v1 List.
type objectList struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []any  `json:"items"`
}

func runRankTable(o *options, objs []manifest.Object) (any, error) {
	order, err := parseOrder(o.order)
	if err != nil {
		return nil, err
	}
	expected, err := parseExpect(o.expect)
	if err != nil {
		return nil, err
	}
	ownerObj, err := pick(o, rankTableOwners(objs), "owner annotated "+ranktable.AnnotationTemplate, "owner", o.owner)
	if err != nil {
		return nil, err
	}
	grouping := ranktable.Grouping{OwnerLabel: o.ownerLabel, SingleGroup: o.singleGroup}
	if p, ok := owners.For(schema.FromAPIVersionAndKind(ownerObj.APIVersion, ownerObj.Kind)); ok {
		// The owner kind's labels and order; flags given explicitly win.
		grouping.GroupLabel, grouping.RoleLabel, grouping.RoleIDLabel, grouping.EntryLabel =
			p.Grouping.GroupLabel, p.Grouping.RoleLabel, p.Grouping.RoleIDLabel, p.Grouping.EntryLabel
		if !o.given("owner-label") {
			grouping.OwnerLabel = p.Grouping.OwnerLabel
		}
		if !o.given("order") && p.Order != "" {
			order = p.Order
		}
	}
	owner, tmpl, err := loadOwner(ownerObj, objs, o.templatesNamespace)
	if err != nil {
		return nil, err
	}
	pods, podObjs, err := decodePods(objs)
	if err != nil {
		return nil, err
	}
	var cms []*corev1.ConfigMap
	for _, obj := range byKind(objs, "ConfigMap") {
		if namespaceOf(obj) != owner.Namespace {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := obj.Decode(cm); err != nil {
			return nil, err
		}
		cm.Namespace = namespaceOf(obj)
		cms = append(cms, cm)
	}
	in := ranktable.Input{
		Owner: owner, Template: tmpl, Pods: pods, ConfigMaps: cms, Expected: expected, Order: order,
		Timeout: o.timeout, Timestamp: o.timestamp, Grouping: grouping,
	}
	if o.timeout > 0 {
		in.Now = o.now.Time()
	}
	res, err := ranktable.Plan(in)
	if err != nil {
		return nil, blame(err, ownerObj, podObjs)
	}
	o.warnings = append(o.warnings, tmpl.Warnings...)
	for _, u := range res.Unmatched {
		o.warnings = append(o.warnings, fmt.Sprintf("%s, so it is in no group of %s (%s)", u.Message, ownerObj.ID(), u.Reason))
	}
	if o.configMapsOnly {
		list := objectList{APIVersion: "v1", Kind: "List", Items: []any{}}
		for _, c := range res.ConfigMaps {
			if c.Action == kplan.ActionCreate || c.Action == kplan.ActionUpdate {
				list.Items = append(list.Items, withTypeMeta(c.ConfigMap))
			}
		}
		return list, nil
	}
	out := rankTablePlan{
		Owner: ownerObj.ID(), Template: tmpl.Name, Level: string(res.Level),
		Groups: []groupStatus{}, ConfigMaps: []configMapOut{},
	}
	for _, g := range res.Groups {
		gs := groupStatus{
			Group: g.Group.Group, Role: g.Group.Role, ConfigMap: g.ConfigMapName, Phase: string(g.Phase),
			Reason: string(g.Reason), Message: g.Message,
			Pods: g.Pods, Expected: g.Expected, Missing: g.Missing, Absent: g.Absent,
		}
		if g.Error != nil {
			gs.Error = g.Error.Error()
		}
		out.Groups = append(out.Groups, gs)
	}
	for _, c := range res.ConfigMaps {
		out.ConfigMaps = append(out.ConfigMaps, configMapOut{Action: string(c.Action), ConfigMap: withTypeMeta(c.ConfigMap)})
	}
	out.Events = convert(res.Events, toEventOut)
	if res.RequeueAfter > 0 {
		out.RequeueAfter = res.RequeueAfter.String()
	}
	out.Unmatched = convert(res.Unmatched, func(u ranktable.UnmatchedPod) unmatchedPod {
		return unmatchedPod{Pod: u.Pod, Reason: string(u.Reason), Message: u.Message}
	})
	return out, nil
}

func withTypeMeta(cm *corev1.ConfigMap) *corev1.ConfigMap {
	cm = cm.DeepCopy()
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	return cm
}

// rankTableOwners returns the objects annotated with a ranktable template.
func rankTableOwners(objs []manifest.Object) []*manifest.Object {
	var out []*manifest.Object
	for i := range objs {
		o := &objs[i]
		if o.Kind == "Pod" || o.Kind == "ConfigMap" {
			continue
		}
		var m struct {
			Metadata struct {
				Annotations map[string]any `json:"annotations"`
			} `json:"metadata"`
		}
		if o.Decode(&m) == nil {
			if _, ok := m.Metadata.Annotations[ranktable.AnnotationTemplate]; ok {
				out = append(out, o)
			}
		}
	}
	return out
}

// loadOwner decodes the owner and loads the template its annotation names.
func loadOwner(obj *manifest.Object, objs []manifest.Object, templatesNamespace string) (ranktable.Owner, *ranktable.Template, error) {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := obj.Decode(&m); err != nil {
		return ranktable.Owner{}, nil, err
	}
	owner := ranktable.Owner{ObjectMeta: m.Metadata, GVK: schema.FromAPIVersionAndKind(obj.APIVersion, obj.Kind)}
	owner.Namespace = namespaceOf(obj)
	if owner.UID == "" {
		return owner, nil, obj.Errorf("metadata.uid is missing (the ranktable ConfigMaps and pods refer to the owner by uid; use kubectl get -o yaml output)")
	}
	ref := owner.Annotations[ranktable.AnnotationTemplate]
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		ns, name = templatesNamespace, ref
	}
	rt, rtWhere, err := findConfigMap(objs, ns, name)
	if err != nil {
		return owner, nil, err
	}
	if rt == nil {
		return owner, nil, obj.Errorf("metadata.annotations[%s]: template ConfigMap %s/%s is neither in the input nor one of kplan's library templates",
			ranktable.AnnotationTemplate, ns, name)
	}
	var parser *corev1.ConfigMap
	if p := ranktable.ParserConfigMapName(rt); p != "" {
		if parser, _, err = findConfigMap(objs, rt.Namespace, p); err != nil {
			return owner, nil, err
		}
	}
	tmpl, err := ranktable.LoadTemplate(rt, parser, ranktable.LoadOptions{})
	if err != nil {
		return owner, nil, fmt.Errorf("%s: %v", rtWhere, err)
	}
	return owner, tmpl, nil
}

// findConfigMap returns the ConfigMap namespace/name from the input, else from kplan's
// template library, else nil; and where it came from.
func findConfigMap(objs []manifest.Object, namespace, name string) (*corev1.ConfigMap, string, error) {
	for _, obj := range byKind(objs, "ConfigMap") {
		if obj.Name == name && namespaceOf(obj) == namespace {
			cm := &corev1.ConfigMap{}
			if err := obj.Decode(cm); err != nil {
				return nil, "", err
			}
			cm.Namespace = namespace
			return cm, obj.Where(), nil
		}
	}
	if cm, ok := ranktable.LibraryConfigMap(name); ok && cm.Namespace == namespace {
		return cm, "kplan's template library", nil
	}
	return nil, "", nil
}

// decodePods decodes every pod of the input, in input order.
func decodePods(objs []manifest.Object) ([]*corev1.Pod, []*manifest.Object, error) {
	var pods []*corev1.Pod
	podObjs := byKind(objs, "Pod")
	for _, obj := range podObjs {
		p := &corev1.Pod{}
		if err := obj.Decode(p); err != nil {
			return nil, nil, err
		}
		p.Namespace = namespaceOf(obj)
		pods = append(pods, p)
	}
	return pods, podObjs, nil
}

// parseOrder reads --order, in any case.
func parseOrder(s string) (ranktable.Order, error) {
	return choice("order", strings.ToLower(s), []string{"natural", "lexicographic", "podindex"},
		[]ranktable.Order{ranktable.Natural, ranktable.Lexicographic, ranktable.PodIndex})
}

// parseExpect reads --expect group/role=N flags.
func parseExpect(flags []string) (map[ranktable.GroupKey]int, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	m := map[ranktable.GroupKey]int{}
	for _, f := range flags {
		key, n, ok := strings.Cut(f, "=")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 0 || key == "" {
			return nil, usagef("--expect %q: want group/role=N, group=N or (with --single-group) /role=N, with N >= 0", f)
		}
		group, role, _ := strings.Cut(key, "/")
		m[ranktable.GroupKey{Group: group, Role: role}] = count
	}
	return m, nil
}
