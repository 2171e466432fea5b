package revision

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/exact"
)

// fullSet returns a set with every pointer, map and slice field set.
func fullSet() *ConfigMapSet {
	limit, cc := int32(3), int32(1)
	p, mu := intstr.FromString("20%"), intstr.FromInt32(2)
	ts := metav1.NewTime(t0)
	return &ConfigMapSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kplan.dev/v1alpha1", Kind: "ConfigMapSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cms1", Labels: map[string]string{"a": "b"}},
		Spec: ConfigMapSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"x"}}}},
			Data: map[string]string{"f": "v"},
			Containers: []ContainerInjectSpec{{Name: "main", MountPath: "/a"},
				{NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['c']"}}, MountPath: "/b"}},
			RevisionHistoryLimit: &limit,
			InjectUpdateOrder:    true,
			UpdateStrategy:       ConfigMapSetUpdateStrategy{Partition: &p, RestartInjectedContainers: true, RestartMethod: RestartExternal, MaxUnavailable: &mu},
			InjectStrategy:       ConfigMapSetInjectStrategy{Pause: true},
		},
		Status: ConfigMapSetStatus{ObservedGeneration: 2, CurrentRevision: "c", UpdateRevision: "u", CollisionCount: &cc,
			MatchedPods: 3, UpdatedPods: 2, ReadyPods: 1, UpdatedReadyPods: 1, LastContainersTimestamp: &ts, LastContainersHash: "h",
			Conditions: []metav1.Condition{{Type: "Complete", Status: metav1.ConditionTrue, Reason: string(ReasonRolloutComplete), LastTransitionTime: ts}}},
	}
}

// mutate changes every field reachable through a pointer, map or slice.
func mutate(s *ConfigMapSet) {
	s.Labels["a"] = "changed"
	s.Spec.Selector.MatchLabels["app"] = "changed"
	s.Spec.Selector.MatchExpressions[0].Values[0] = "changed"
	s.Spec.Data["f"] = "changed"
	s.Spec.Containers[0].Name = "changed"
	s.Spec.Containers[1].NameFrom.FieldRef.FieldPath = "changed"
	*s.Spec.RevisionHistoryLimit = 9
	*s.Spec.UpdateStrategy.Partition = intstr.FromInt32(9)
	*s.Spec.UpdateStrategy.MaxUnavailable = intstr.FromInt32(9)
	*s.Status.CollisionCount = 9
	s.Status.LastContainersTimestamp.Time = now
	s.Status.Conditions[0].Reason = "Changed"
}

func TestDeepCopy(t *testing.T) {
	orig := fullSet()
	want, _ := json.Marshal(orig)
	t.Run("ConfigMapSet", func(t *testing.T) {
		c := orig.DeepCopyObject().(*ConfigMapSet)
		if diff := cmp.Diff(orig, c, exact.Options); diff != "" {
			t.Fatalf("copy differs (-original +copy):\n%s", diff)
		}
		mutate(c)
		if got, _ := json.Marshal(orig); string(got) != string(want) {
			t.Errorf("changing the copy changed the original:\n%s\n%s", got, want)
		}
	})
	t.Run("ConfigMapSetList", func(t *testing.T) {
		l := &ConfigMapSetList{Items: []ConfigMapSet{*fullSet()}}
		c := l.DeepCopyObject().(*ConfigMapSetList)
		mutate(&c.Items[0])
		if got, _ := json.Marshal(l.Items[0]); string(got) != string(want) {
			t.Errorf("changing the copy changed the original")
		}
	})
	t.Run("nil", func(t *testing.T) {
		var s *ConfigMapSet
		var l *ConfigMapSetList
		if s.DeepCopy() != nil || l.DeepCopy() != nil || (*ConfigMapSetSpec)(nil).DeepCopy() != nil || (*ConfigMapSetStatus)(nil).DeepCopy() != nil {
			t.Error("nil copies to non-nil")
		}
	})
	t.Run("JSON round trip", func(t *testing.T) {
		var back ConfigMapSet
		err := json.Unmarshal(want, &back)
		again, _ := json.Marshal(&back)
		if err != nil || string(again) != string(want) || !back.Status.LastContainersTimestamp.Equal(orig.Status.LastContainersTimestamp) {
			t.Errorf("%v\n%s\n%s", err, again, want)
		}
	})
}
