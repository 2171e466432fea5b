package v1alpha1

import "strconv"

// The shape of a ModelServing: how many serving groups it asks for, how many pods
// each has and how they are named. The controller creates pods to this shape; the
// ranktable controller expects the same members in each group's table.

// GroupCount is how many serving groups ms asks for: spec.replicas, 1 when unset.
func (ms *ModelServing) GroupCount() int {
	if ms.Spec.Replicas == nil {
		return 1
	}
	return int(*ms.Spec.Replicas)
}

// GroupName is the name of serving group g (its gang): <name>-<g>, the value of
// LabelGroupName on the group's pods.
func (ms *ModelServing) GroupName(g int) string { return ms.Name + "-" + strconv.Itoa(g) }

// GroupSize is how many pods a serving group of ms has: every role's members.
func (ms *ModelServing) GroupSize() int {
	n := 0
	for _, r := range ms.Spec.Roles {
		n += r.Members()
	}
	return n
}

// Members is how many pods of the role each serving group has: its replicas, at
// least 1.
func (r Role) Members() int { return int(max(r.Replicas, 1)) }

// ColumnName is the column of member m of role: <role>-<m>, the value of
// LabelColumn on its pods (a serving group's member in Gang mode, a pool in Group
// mode).
func ColumnName(role string, m int) string { return role + "-" + strconv.Itoa(m) }
