package webhookpatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	pf "github.com/kplan-dev/kplan/internal/podfixture"

	"github.com/kplan-dev/kplan/internal/exact"
)

// A pod whose annotations are 10 bytes under the API server's limit passes Validate;
// every primitive that would grow them (each writes the injection record) must fail
// with the limit named and leave the pod as it was, never return a pod the API server
// rejects.
func TestPrimitivesKeepAnnotationsWithinTheLimit(t *testing.T) {
	const bigKey = "example.com/big"
	userData := corev1.Volume{Name: "user-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	nearLimit := func() *corev1.Pod {
		p := pf.Pod("ns", "p", pf.Containers("engine"), pf.Annotation(bigKey, strings.Repeat("x", apivalidation.TotalAnnotationSizeLimitB-len(bigKey)-10)))
		p.Spec.Volumes = []corev1.Volume{userData}
		return p
	}
	if errs := Validate(nearLimit()); len(errs) > 0 {
		t.Fatalf("the starting pod is invalid: %v", errs)
	}
	mount := corev1.VolumeMount{Name: userData.Name, MountPath: "/etc/ascend"}
	calls := []struct {
		name string
		call func(*corev1.Pod) (bool, error)
	}{
		{"EnsureVolume", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) }},
		{"EnsureInitContainer", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureInitContainer(p, waitInit) }},
		{"EnsureContainer", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureContainer(p, waitInit) }},
		{"EnsureSidecar native", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureSidecar(p, waitInit, SidecarNative) }},
		{"EnsureSidecar launch priority", func(p *corev1.Pod) (bool, error) {
			return rankTable.EnsureSidecar(p, waitInit, SidecarLaunchPriority)
		}},
		{"EnsureVolumeMount", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolumeMount(p, mount, ContainerSelector{}) }},
		{"EnsureEnv", func(p *corev1.Pod) (bool, error) {
			return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/etc/ascend/ranktable.json"}, ContainerSelector{})
		}},
		{"EnsureAnnotation", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, "example.com/a", "v") }},
		{"EnsureLabel", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureLabel(p, "app", "v") }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := nearLimit()
			pod := before.DeepCopy()
			changed, err := c.call(pod)
			if err == nil || !strings.Contains(err.Error(), "pod ns/p: metadata.annotations") || !strings.Contains(err.Error(), "more than the limit of 262144") {
				t.Fatalf("changed=%v err=%v, want the annotation limit named", changed, err)
			}
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Errorf("a failed call changed the pod (-before +after):\n%s", diff)
			}
		})
	}
	t.Run("a call that fits still works at the limit", func(t *testing.T) {
		p := pf.Pod("ns", "p", pf.Containers("engine"))
		if _, err := rankTable.EnsureVolume(p, configMap); err != nil {
			t.Fatal(err)
		}
		used := 0
		for k, v := range p.Annotations {
			used += len(k) + len(v)
		}
		// Fill the annotations to exactly the limit with the record in place: an
		// idempotent re-call changes nothing and is fine.
		p.Annotations[bigKey] = strings.Repeat("x", apivalidation.TotalAnnotationSizeLimitB-used-len(bigKey))
		if errs := Validate(p); len(errs) > 0 {
			t.Fatalf("pod at the limit invalid: %v", errs)
		}
		if changed, err := rankTable.EnsureVolume(p, configMap); changed || err != nil {
			t.Errorf("re-call at the limit: changed=%v err=%v", changed, err)
		}
	})
}

// The record annotation is user-editable text: JSON null, an empty object, an injector
// mapped to null, all mean "nothing recorded" and never panic; anything else that is
// not a record is an error naming the annotation.
func TestRecordAnnotationForms(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		wantErr   bool
	}{
		{"JSON null", "null", false},
		{"an empty object", "{}", false},
		{"an injector mapped to null", `{"ranktable":null}`, false},
		{"another injector's items", `{"configmapset-demo":{"volume/x":"00"}}`, false},
		{"an array", "[]", true},
		{"a string", `"ranktable"`, true},
		{"items that are not strings", `{"ranktable":{"volume/x":1}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []func(*corev1.Pod) (bool, error){
				func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
				func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, "example.com/a", "v") },
				func(p *corev1.Pod) (bool, error) {
					return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "A", Value: "1"}, ContainerSelector{})
				},
				rankTable.Strip,
			} {
				pod := pf.Pod("ns", "p", pf.Containers("engine"), pf.Annotation(RecordAnnotation, tc.raw))
				_, err := call(pod)
				if tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), "pod ns/p: annotation "+RecordAnnotation) {
						t.Errorf("err = %v, want one naming the record annotation", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if pod.Annotations[RecordAnnotation] == tc.raw {
					continue // Strip had nothing of ours to remove: the pod is as it was
				}
				if raw, ok := pod.Annotations[RecordAnnotation]; ok {
					var rec map[string]map[string]string
					if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec == nil {
						t.Errorf("record after the call is %q", raw)
					}
				}
				if errs := Validate(pod); len(errs) > 0 {
					t.Errorf("invalid pod: %v", errs)
				}
			}
		})
	}
}
