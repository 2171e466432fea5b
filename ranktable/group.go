package ranktable

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/canonhash"
	"github.com/kplan-dev/kplan/internal/names"
	"github.com/kplan-dev/kplan/internal/natural"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kthena's ModelServing labels and annotations.
const (
	LabelModelServingName = "modelserving.volcano.sh/name"
	LabelGroupName        = "modelserving.volcano.sh/group-name"
	LabelRole             = "modelserving.volcano.sh/role"
	LabelRoleID           = "modelserving.volcano.sh/role-id"
	LabelEntry            = "modelserving.volcano.sh/entry"
	// AnnotationTemplate on the owner names the ranktable template ConfigMap.
	AnnotationTemplate = "kthena.io/ranktable-template"
	// AnnotationLevel on the owner overrides the template's level.
	AnnotationLevel = "kthena.io/ranktable-level"
	// AnnotationRankIndex on a pod is its stable rank index (PodIndex order).
	AnnotationRankIndex = "hccl/rankIndex"
)

// Grouping names the pod labels that place a pod in a group. The zero value means
// kthena's labels.
type Grouping struct {
	// GroupLabel names the serving group (default LabelGroupName). Every pod needs a
	// non-empty value, unless SingleGroup is set.
	GroupLabel string
	// RoleLabel names the role (default LabelRole).
	RoleLabel string
	// RoleIDLabel names the role replica (default LabelRoleID). At role level every
	// pod needs a non-empty value of RoleIDLabel or, failing that, of RoleLabel.
	RoleIDLabel string
	// EntryLabel marks the entry pod of a role replica (default LabelEntry).
	EntryLabel string
	// OwnerLabel, when set, names a pod label whose value is the owner's name, as
	// kthena finds a ModelServing's pods (LabelModelServingName): a pod with that
	// label belongs to the owner whatever its ownerReferences say. When empty (the
	// default) a pod belongs to the owner only through its controller
	// ownerReference.
	OwnerLabel string
	// SingleGroup, when set, makes all of the owner's pods one serving group, for
	// owners whose pods carry no serving-group label (a StatefulSet, or the single
	// group of the design's example): GroupLabel is not read and every key's Group is
	// empty, so tables are named "{owner}-{role}-ranktable" at role level and
	// "{owner}-ranktable" at group level.
	SingleGroup bool
}

func (g Grouping) withDefaults() Grouping {
	g.GroupLabel = cmp.Or(g.GroupLabel, LabelGroupName)
	g.RoleLabel = cmp.Or(g.RoleLabel, LabelRole)
	g.RoleIDLabel = cmp.Or(g.RoleIDLabel, LabelRoleID)
	g.EntryLabel = cmp.Or(g.EntryLabel, LabelEntry)
	return g
}

// GroupKey identifies one table: the serving group, and at role level the role
// replica (role id, or the role name when pods carry no role id).
type GroupKey struct {
	// Group is the serving group's label value; "" when Grouping.SingleGroup is set.
	Group string
	// Role is the role replica at role level; "" at group level.
	Role string
}

// String returns "group" or "group/role" ("/role" under Grouping.SingleGroup).
func (k GroupKey) String() string {
	if k.Role == "" {
		return k.Group
	}
	return k.Group + "/" + k.Role
}

func compareKeys(a, b GroupKey) int {
	if c := natural.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	return natural.Compare(a.Role, b.Role)
}

// KeyOf returns the group key of pod at level under grouping g. The pod needs a
// non-empty serving-group label (unless g.SingleGroup is set) and, at role level, a
// non-empty role id or role label; a pod without them belongs to no group, and the
// error names the pod and the labels it lacks. A nil pod or a level that is neither
// LevelRole nor LevelGroup is an error too.
func KeyOf(pod *corev1.Pod, level Level, g Grouping) (GroupKey, error) {
	if pod == nil {
		return GroupKey{}, fmt.Errorf("pod is nil")
	}
	if _, err := ParseLevel(string(level)); err != nil {
		return GroupKey{}, fmt.Errorf("pod %s/%s: level: %v", pod.Namespace, pod.Name, err)
	}
	k, missing := keyOf(pod, level, g.withDefaults())
	if missing != "" {
		return GroupKey{}, fmt.Errorf("pod %s/%s: %s", pod.Namespace, pod.Name, missing)
	}
	return k, nil
}

// keyOf returns the group key of pod at level under g (with defaults), or a
// description of the labels the pod lacks for it ("" when none).
func keyOf(pod *corev1.Pod, level Level, g Grouping) (GroupKey, string) {
	var k GroupKey
	var lacks []string
	if !g.SingleGroup {
		k.Group = pod.Labels[g.GroupLabel]
		if k.Group == "" {
			lacks = append(lacks, fmt.Sprintf("label %s (its serving group)", g.GroupLabel))
		}
	}
	if level == LevelRole {
		k.Role = cmp.Or(pod.Labels[g.RoleIDLabel], pod.Labels[g.RoleLabel])
		if k.Role == "" {
			lacks = append(lacks, fmt.Sprintf("label %s or %s (its role, needed at role level)", g.RoleIDLabel, g.RoleLabel))
		}
	}
	if len(lacks) > 0 {
		return GroupKey{}, "has no (or an empty) " + strings.Join(lacks, " and no ")
	}
	return k, ""
}

// PodConfigMapName returns the name of the ranktable ConfigMap pod mounts: the table
// of the pod's group at the level owner's pods are planned at (see ResolveLevel),
// named by ConfigMapName. It is what a webhook needs before the owner has been
// planned. The errors are those of ResolveLevel and KeyOf: a nil argument, a bad
// level annotation on the owner, or a pod without the labels its group needs.
func PodConfigMapName(owner metav1.Object, t *Template, g Grouping, pod *corev1.Pod) (string, error) {
	level, err := ResolveLevel(owner, t)
	if err != nil {
		return "", err
	}
	k, err := KeyOf(pod, level, g)
	if err != nil {
		return "", err
	}
	return ConfigMapName(owner.GetName(), k), nil
}

// ConfigMapName returns the name of the ranktable ConfigMap of group k of owner
// ownerName: "{owner}-{group suffix}-{role}-ranktable", where the group suffix is the
// serving group name without a leading "{owner}-" (kthena names groups "{owner}-{i}").
// Empty parts are left out; a name over 253 characters is cut and given a hash suffix.
// When the parts do not make a valid ConfigMap name (label values may hold upper case
// and '_', hand-written input anything), each part is lowered to its lower-case
// letters and digits joined by '-', and the name ends in "-" and 8 hex digits of a
// hash of the original parts, so group "Qwen 0" gets "{owner}-qwen-0-ranktable-{hash}"
// and stays apart from group "qwen-0". The result is always a valid DNS-1123
// subdomain of at most 253 characters.
func ConfigMapName(ownerName string, k GroupKey) string {
	g := k.Group
	if len(g) > len(ownerName) && g[:len(ownerName)] == ownerName && g[len(ownerName)] == '-' {
		g = g[len(ownerName)+1:]
	} else if g == ownerName {
		g = ""
	}
	name := names.Subdomain(ownerName, g, k.Role, "ranktable")
	if isDNSSubdomain(name) {
		return name
	}
	return names.Subdomain(dnsPart(ownerName), dnsPart(g), dnsPart(k.Role), "ranktable", canonhash.Short(ownerName, g, k.Role))
}

// dnsPart returns the runs of ASCII letters (lowered) and digits of s joined by '-'.
func dnsPart(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		default:
			if len(b) > 0 && b[len(b)-1] != '-' {
				b = append(b, '-')
			}
			continue
		}
		b = append(b, c)
	}
	return strings.TrimSuffix(string(b), "-")
}

// rankIndex reads a pod's stable rank index annotation, or -1.
func rankIndex(pod *corev1.Pod) int {
	v, ok := pod.Annotations[AnnotationRankIndex]
	if !ok || !isSmallInt(v) {
		return -1
	}
	n, _ := strconv.Atoi(v)
	return n
}
