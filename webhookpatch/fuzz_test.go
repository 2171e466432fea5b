package webhookpatch

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

// FuzzEnsureAnnotation: any key and value either fail cleanly or give a pod that
// passes Validate, is idempotent, and diffs to a patch that applies.
func FuzzEnsureAnnotation(f *testing.F) {
	for _, s := range [][2]string{{"app", "v"}, {"example.com/role", "x"}, {"a/b/c", ""}, {"~/", "~"}, {RecordAnnotation, "{}"}, {"", ""}, {"example.com/note", "bad\xff\xe2\x82"}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, key, value string, label bool) {
		before := pf.Pod("ns", "p", pf.Containers("engine"), pf.Annotation("keep", "1"))
		after := before.DeepCopy()
		ensure := rankTable.EnsureAnnotation
		if label {
			ensure = rankTable.EnsureLabel
		}
		if _, err := ensure(after, key, value); err != nil {
			if !strings.Contains(err.Error(), "pod ns/p") {
				t.Fatalf("error does not name the pod: %v", err)
			}
			return
		}
		if errs := Validate(after); len(errs) > 0 {
			t.Fatalf("accepted %q=%q but the pod is invalid: %v", key, value, errs)
		}
		if changed, err := ensure(after, key, value); changed || err != nil {
			t.Fatalf("not idempotent: %v %v", changed, err)
		}
		applyDiff(t, before, after)
		// Re-invoked on the pod the API server stored, it changes nothing.
		stored := storeThroughAPIServer(t, before, after)
		again := stored.DeepCopy()
		if changed, err := ensure(again, key, value); changed || err != nil || !equalJSON(stored, again) {
			t.Fatalf("not idempotent on the stored pod: %v %v", changed, err)
		}
	})
}

// FuzzEnsureVolumeMount: any mountPath either fails cleanly or mounts idempotently
// with an applicable patch; a second path equal to the first never duplicates it.
func FuzzEnsureVolumeMount(f *testing.F) {
	for _, s := range []string{"/etc/ascend/ranktable", "", "/a~b/c", "relative", "/x/../y", "/etc/cfg", "/etc/\xff\xe2\x82"} {
		f.Add(s, "/etc/cfg")
	}
	f.Fuzz(func(t *testing.T, path, userPath string) {
		before := pf.Pod("ns", "p", pf.Volume(emptyDir), pf.Volume(corev1.Volume{Name: "user"}),
			pf.Container(corev1.Container{Name: "engine", VolumeMounts: []corev1.VolumeMount{{Name: "user", MountPath: userPath}}}))
		after := before.DeepCopy()
		m := corev1.VolumeMount{Name: "ranktable", MountPath: path, ReadOnly: true}
		_, err := rankTable.EnsureVolumeMount(after, m, ContainerSelector{})
		if err != nil {
			if path == userPath && path != "" && !errors.Is(err, ErrConflict) {
				t.Fatalf("a path the user mounts must be a conflict: %v", err)
			}
			return
		}
		if path == userPath {
			t.Fatalf("mounted %q over the user's mount", path)
		}
		if changed, err := rankTable.EnsureVolumeMount(after, m, ContainerSelector{}); changed || err != nil {
			t.Fatalf("not idempotent: %v %v", changed, err)
		}
		stored := storeThroughAPIServer(t, before, after)
		if changed, err := rankTable.EnsureVolumeMount(stored.DeepCopy(), m, ContainerSelector{}); changed || err != nil {
			t.Fatalf("not idempotent on the stored pod: %v %v", changed, err)
		}
		if userPath != "" {
			if errs := Validate(after); len(errs) > 0 {
				t.Fatalf("invalid result: %v", errs)
			}
		}
		applyDiff(t, before, after)
	})
}

// FuzzSidecarModeFor: any version string gives a mode or an error, never a panic,
// and the mode is native exactly from 1.29 on.
func FuzzSidecarModeFor(f *testing.F) {
	for _, s := range []string{"v1.29.0", "1.28", "v1.30.2-eks", "", "v", "1.", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		mode, err := SidecarModeFor(v)
		if err == nil && mode != SidecarNative && mode != SidecarLaunchPriority {
			t.Fatalf("SidecarModeFor(%q) = %v", v, mode)
		}
	})
}

// FuzzDiffMetadata: arbitrary annotation and label keys and values (JSON pointer
// escapes included) diff to a patch that applies exactly.
func FuzzDiffMetadata(f *testing.F) {
	f.Add("a/b", "1", "~0~1", "x", "fin/1")
	f.Add("", "", "/", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, finalizer string) {
		before := pf.Pod("ns", "p", pf.Annotation(k1, v1), pf.Labels(k2, v2))
		after := before.DeepCopy()
		after.Annotations[k2] = v2
		delete(after.Labels, k2)
		after.Labels = map[string]string{k1: v1}
		after.Finalizers = append(after.Finalizers, finalizer)
		applyDiff(t, before, after)
	})
}

// FuzzRecordAnnotation: whatever text the record annotation holds (it is user-editable),
// the primitives and Strip either fail with an error naming the pod, or return a valid
// pod whose record decodes and on which a second call changes nothing. Never a panic.
func FuzzRecordAnnotation(f *testing.F) {
	for _, s := range []string{"", "null", "{}", "[]", `"x"`, "{not json", `{"ranktable":null}`,
		`{"ranktable":{"volume/ranktable":"0000000000000000"}}`, `{"ranktable":{"volume/ranktable":1}}`,
		`{"configmapset-demo":{"annotation/example.com~1a":"00"}}`, `{"ranktable":{"mount/engine/etc":"ab"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		calls := []func(*corev1.Pod) (bool, error){
			func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, "example.com/a", "v") },
			func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "A", Value: "1"}, ContainerSelector{})
			},
			func(p *corev1.Pod) (bool, error) { return rankTable.EnsureInitContainer(p, waitInit) },
			rankTable.Strip,
		}
		for i, call := range calls {
			pod := pf.Pod("ns", "p", pf.Containers("engine"), pf.Annotation(RecordAnnotation, raw))
			if _, err := call(pod); err != nil {
				if !strings.Contains(err.Error(), "pod ns/p") {
					t.Fatalf("call %d: error does not name the pod: %v", i, err)
				}
				continue
			}
			if got, ok := pod.Annotations[RecordAnnotation]; ok && got != raw {
				if _, err := readRecord(pod); err != nil {
					t.Fatalf("call %d wrote a record that does not decode: %q: %v", i, got, err)
				}
				if errs := Validate(pod); len(errs) > 0 {
					t.Fatalf("call %d: invalid pod: %v", i, errs)
				}
			}
			if changed, err := call(pod); changed || err != nil {
				t.Fatalf("call %d not idempotent on record %q: %v %v", i, raw, changed, err)
			}
		}
	})
}
