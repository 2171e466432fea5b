package webhookpatch

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

// storeThroughAPIServer applies the webhook's patch for before -> after to before's
// JSON, as the API server does, and reads the stored pod back.
func storeThroughAPIServer(t *testing.T, before, after *corev1.Pod) *corev1.Pod {
	t.Helper()
	ops, err := Diff(before, after)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	patch, _, err := Patch(ops)
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	raw, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) > 0 {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("decode patch: %v", err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("apply patch: %v", err)
		}
	}
	stored := &corev1.Pod{}
	if err := json.Unmarshal(raw, stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

// The API server stores strings as JSON, which turns invalid UTF-8 into U+FFFD. A
// webhook re-invoked on the stored pod (reinvocationPolicy IfNeeded, or a second
// webhook) must find what it wrote and answer with an empty patch.
func TestMutatingTheStoredPodAgainAfterInvalidUTF8GivesAnEmptyPatch(t *testing.T) {
	const bad = "rank\xff\xfetable\xe2\x82" // two invalid bytes and a cut-off 3-byte rune
	tests := []struct {
		name string
		run  func(*corev1.Pod) (bool, error)
	}{
		{"annotation value", func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, "example.com/note", bad) }},
		{"mount path", func(p *corev1.Pod) (bool, error) {
			if _, err := rankTable.EnsureVolume(p, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}); err != nil {
				return false, err
			}
			return rankTable.EnsureVolumeMount(p, corev1.VolumeMount{Name: "cfg", MountPath: "/etc/" + bad}, ContainerSelector{})
		}},
		{"env value", func(p *corev1.Pod) (bool, error) {
			return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "RANKTABLE", Value: bad}, ContainerSelector{})
		}},
		{"container args", func(p *corev1.Pod) (bool, error) {
			return rankTable.EnsureInitContainer(p, corev1.Container{Name: "wait", Image: "busybox", Args: []string{bad}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			received := pf.Pod("ns", "p", pf.Containers("engine"))
			mutated := received.DeepCopy()
			if changed, err := tt.run(mutated); err != nil || !changed {
				t.Fatalf("first mutation: changed %v, %v", changed, err)
			}
			stored := storeThroughAPIServer(t, received, mutated)
			again := stored.DeepCopy()
			changed, err := tt.run(again)
			if err != nil {
				t.Fatalf("second mutation: %v", err)
			}
			ops, err := Diff(stored, again)
			if err != nil {
				t.Fatal(err)
			}
			if changed || len(ops) != 0 {
				b, _ := json.Marshal(ops)
				t.Errorf("mutating the stored pod again: changed %v, patch %s", changed, b)
			}
		})
	}
}

// The API server (Kubernetes 1.34 and later: relaxed names) rejects env var names
// that are empty, hold '=' or anything but printable ASCII, and envFrom prefixes alike.
// The primitives and Validate reject them the same way; the names it accepts pass.
func TestEnvVarNamesTheAPIServerRejectsAreRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", false}, {"A=B", false}, {"=", false}, {"A\x00", false}, {"tab\tname", false}, {"é", false}, {"A\x7f", false},
		{"RANKTABLEFILE", true}, {"my.env-name", true}, {"1ABC", true}, {"with space", true}, {"a:b/c~{}", true}, {"..", true},
	} {
		t.Run(strings.ReplaceAll(tc.name, "\x00", "NUL"), func(t *testing.T) {
			pod := pf.Pod("ns", "p", pf.Containers("engine"))
			_, err := rankTable.EnsureEnv(pod, corev1.EnvVar{Name: tc.name, Value: "1"}, ContainerSelector{})
			if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "pod ns/p: env var")) {
				t.Errorf("EnsureEnv: %v, want ok=%v", err, tc.ok)
			}
			c := corev1.Container{Name: "side", Image: "img", Env: []corev1.EnvVar{{Name: "OK", Value: "1"}, {Name: tc.name, Value: "1"}}}
			_, err = rankTable.EnsureSidecar(pf.Pod("ns", "p", pf.Containers("engine")), c, SidecarNative)
			if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), `container "side": env[1].name`)) {
				t.Errorf("EnsureSidecar: %v, want ok=%v", err, tc.ok)
			}
			c.Env = nil
			c.EnvFrom = []corev1.EnvFromSource{{Prefix: tc.name, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
			_, err = rankTable.EnsureContainer(pf.Pod("ns", "p", pf.Containers("engine")), c)
			if wantOK := tc.ok || tc.name == ""; (err == nil) != wantOK { // an empty prefix means none
				t.Errorf("EnsureContainer with envFrom prefix: %v, want ok=%v", err, wantOK)
			}
			user := pf.Pod("ns", "p", pf.Containers("engine"))
			user.Spec.Containers[0].Env = []corev1.EnvVar{{Name: tc.name}}
			if errs := Validate(user); (len(errs) == 0) != tc.ok || (len(errs) > 0 && errs[0].Field != "spec.containers[0].env[0].name") {
				t.Errorf("Validate: %v, want ok=%v", errs, tc.ok)
			}
		})
	}
}

// A nil object (untyped or a typed nil pointer) is an error for the patch builders,
// never a panic; the in-place helpers have nothing to change.
func TestFinalizerHelpersRejectANilObject(t *testing.T) {
	for _, obj := range []metav1.Object{nil, (*corev1.Pod)(nil), (*metav1.ObjectMeta)(nil)} {
		if p, err := AddFinalizerPatch(obj, "kplan.dev/cleanup"); err == nil || p != nil || !strings.Contains(err.Error(), "nil object") {
			t.Errorf("AddFinalizerPatch(%T) = %s, %v; want a nil-object error", obj, p, err)
		}
		if p, err := RemoveFinalizerPatch(obj, "kplan.dev/cleanup"); err == nil || p != nil || !strings.Contains(err.Error(), "nil object") {
			t.Errorf("RemoveFinalizerPatch(%T) = %s, %v; want a nil-object error", obj, p, err)
		}
		if AddFinalizer(obj, "kplan.dev/cleanup") || RemoveFinalizer(obj, "kplan.dev/cleanup") {
			t.Errorf("AddFinalizer/RemoveFinalizer(%T) report a change", obj)
		}
	}
}
