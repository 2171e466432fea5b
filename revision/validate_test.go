package revision

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidate(t *testing.T) {
	ref := func(p string) *ValueFromSource {
		return &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: p}}
	}
	tests := []struct {
		name   string
		change func(*ConfigMapSet)
		want   string // "" = valid
	}{
		{"the base set is valid", func(*ConfigMapSet) {}, ""},
		{"a fieldRef to a label is valid", func(s *ConfigMapSet) {
			s.Spec.Containers = append(s.Spec.Containers, ContainerInjectSpec{NameFrom: ref("metadata.labels['cName']"), MountPath: "/data/c3"})
		}, ""},
		{"a missing selector is required", func(s *ConfigMapSet) { s.Spec.Selector = nil }, "spec.selector: Required"},
		{"an empty selector is invalid", func(s *ConfigMapSet) { s.Spec.Selector = &metav1.LabelSelector{} }, "spec.selector: Invalid"},
		{"a bad data key is invalid", func(s *ConfigMapSet) { s.Spec.Data = map[string]string{"a/b": ""} }, "spec.data[a/b]"},
		{"a relative mount path is invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].MountPath = "data" }, "spec.containers[0].mountPath"},
		{"a path with .. is invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].MountPath = "/a/../b" }, "spec.containers[0].mountPath"},
		{"name and nameFrom together are invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].NameFrom = ref("metadata.labels['x']") }, "not both"},
		{"an unsupported fieldPath is invalid", func(s *ConfigMapSet) {
			s.Spec.Containers[0] = ContainerInjectSpec{NameFrom: ref("spec.nodeName"), MountPath: "/x"}
		}, "fieldPath"},
		{"the same container and path twice is a duplicate", func(s *ConfigMapSet) {
			s.Spec.Containers = append(s.Spec.Containers, s.Spec.Containers[0])
		}, "Duplicate"},
		{"a negative history limit is invalid", func(s *ConfigMapSet) { l := int32(-1); s.Spec.RevisionHistoryLimit = &l }, "revisionHistoryLimit"},
		{"a partition over 100% is invalid", func(s *ConfigMapSet) { v := intstr.FromString("101%"); s.Spec.UpdateStrategy.Partition = &v }, "partition"},
		{"a negative partition is invalid", func(s *ConfigMapSet) { v := intstr.FromInt(-1); s.Spec.UpdateStrategy.Partition = &v }, "partition"},
		{"maxUnavailable 0 is invalid", func(s *ConfigMapSet) { v := intstr.FromInt(0); s.Spec.UpdateStrategy.MaxUnavailable = &v }, "maxUnavailable"},
		{"an invalid name is reported", func(s *ConfigMapSet) { s.Name = "Bad" }, "metadata.name"},
		{"no containers is required", func(s *ConfigMapSet) { s.Spec.Containers = nil }, "spec.containers: Required"},
		{"an entry without name or nameFrom is required", func(s *ConfigMapSet) { s.Spec.Containers[0].Name = "" }, "spec.containers[0]: Required"},
		{"a bad container name is invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].Name = "Main_1" }, "spec.containers[0].name"},
		{"a fieldRef apiVersion other than v1 is unsupported", func(s *ConfigMapSet) {
			s.Spec.Containers[0] = ContainerInjectSpec{NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.labels['x']"}}, MountPath: "/x"}
		}, "fieldRef.apiVersion: Unsupported"},
		{"a missing mount path is required", func(s *ConfigMapSet) { s.Spec.Containers[0].MountPath = "" }, "mountPath: Required"},
		{"a mount path with ':' is invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].MountPath = "/a:b" }, "must not contain ':'"},
		{"an unclean mount path is invalid", func(s *ConfigMapSet) { s.Spec.Containers[0].MountPath = "/a//b/" }, "clean path"},
		{"a malformed percent is invalid", func(s *ConfigMapSet) { v := intstr.FromString("half"); s.Spec.UpdateStrategy.Partition = &v }, "partition"},
		{"maxUnavailable 0% is invalid", func(s *ConfigMapSet) { v := intstr.FromString("0%"); s.Spec.UpdateStrategy.MaxUnavailable = &v }, "maxUnavailable"},
		{"restartMethod Signal is valid", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.RestartMethod = RestartSignal }, ""},
		{"restartMethod External is valid", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.RestartMethod = RestartExternal }, ""},
		{"another restartMethod is unsupported", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.RestartMethod = "Recreate" }, `spec.updateStrategy.restartMethod: Unsupported value: "Recreate"`},
		{"type RollingUpdate is valid", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.Type = RollingUpdate }, ""},
		{"type External is valid", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.Type = ExternalUpdate }, ""},
		{"type External with restarts is valid", func(s *ConfigMapSet) {
			s.Spec.UpdateStrategy.Type, s.Spec.UpdateStrategy.RestartInjectedContainers = ExternalUpdate, true
		}, ""},
		{"another type is unsupported", func(s *ConfigMapSet) { s.Spec.UpdateStrategy.Type = "OnDelete" }, `spec.updateStrategy.type: Unsupported value: "OnDelete"`},
		{"a partition with type External is forbidden", func(s *ConfigMapSet) {
			v := intstr.FromInt(0)
			s.Spec.UpdateStrategy.Type, s.Spec.UpdateStrategy.Partition = ExternalUpdate, &v
		}, "spec.updateStrategy.partition: Forbidden: must be unset when type is External"},
		{"maxUnavailable with type External is forbidden", func(s *ConfigMapSet) {
			v := intstr.FromInt(1)
			s.Spec.UpdateStrategy.Type, s.Spec.UpdateStrategy.MaxUnavailable = ExternalUpdate, &v
		}, "spec.updateStrategy.maxUnavailable: Forbidden: must be unset when type is External"},
		{"a bad selector is invalid", func(s *ConfigMapSet) { s.Spec.Selector.MatchLabels = map[string]string{"a b": "c"} }, "spec.selector.matchLabels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(data("a"))
			tt.change(s)
			errs := Validate(s)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Errorf("unexpected %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tt.want) {
				t.Errorf("errors %v, want %q", errs, tt.want)
			}
		})
	}
}

func TestParseFieldPath(t *testing.T) {
	src, key, err := parseFieldPath("metadata.annotations['example.com/c']")
	if err != nil || src != fromAnnotation || key != "example.com/c" {
		t.Errorf("%v %q %v", src, key, err)
	}
	for _, bad := range []string{"metadata.labels['a'", "metadata.labels['']", "metadata.labels['a']x", "metadata.labels['a']']"} {
		if _, _, err := parseFieldPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
