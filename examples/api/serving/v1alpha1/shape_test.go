package v1alpha1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// TestShape: the groups a ModelServing asks for, their size and names, as the
// controller creates them and the ranktable controller expects them.
func TestShape(t *testing.T) {
	three, zero := int32(3), int32(0)
	for _, tc := range []struct {
		name      string
		replicas  *int32
		roles     []servingv1.Role
		groups    int
		size      int
		members   []int
		groupName string // of group 2
	}{
		{"replicas unset is one group", nil, []servingv1.Role{{Name: "w", Replicas: 2}}, 1, 2, []int{2}, "llm-2"},
		{"replicas zero is no group", &zero, []servingv1.Role{{Name: "w", Replicas: 2}}, 0, 2, []int{2}, "llm-2"},
		{"every role's members make a group", &three, []servingv1.Role{{Name: "p", Replicas: 1}, {Name: "d", Replicas: 4}}, 3, 5, []int{1, 4}, "llm-2"},
		{"a role without replicas has one member", &three, []servingv1.Role{{Name: "p"}, {Name: "d", Replicas: 2}}, 3, 3, []int{1, 2}, "llm-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "llm"},
				Spec: servingv1.ModelServingSpec{Replicas: tc.replicas, Roles: tc.roles}}
			if got := ms.GroupCount(); got != tc.groups {
				t.Errorf("GroupCount %d, want %d", got, tc.groups)
			}
			if got := ms.GroupSize(); got != tc.size {
				t.Errorf("GroupSize %d, want %d", got, tc.size)
			}
			for i, r := range tc.roles {
				if got := r.Members(); got != tc.members[i] {
					t.Errorf("role %s: Members %d, want %d", r.Name, got, tc.members[i])
				}
			}
			if got := ms.GroupName(2); got != tc.groupName {
				t.Errorf("GroupName(2) %q, want %q", got, tc.groupName)
			}
		})
	}
	if got := servingv1.ColumnName("decode", 3); got != "decode-3" {
		t.Errorf("ColumnName %q, want decode-3", got)
	}
}
