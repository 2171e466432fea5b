package webhookpatch

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

// FuzzEnsureEnv: any variable name and value either fail cleanly (naming the pod) or
// give a valid pod, idempotently, with a patch that applies.
func FuzzEnsureEnv(f *testing.F) {
	for _, s := range [][2]string{{"RANKTABLEFILE", "/etc/ascend/ranktable.json"}, {"", "x"}, {"A=B", "1"}, {"1ABC", ""}, {"a.b-c", "~/"}, {"PATH", "/usr/bin"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		before := pf.Pod("ns", "p", pf.Containers("engine", "metrics"))
		before.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PATH", Value: "/bin"}}
		after := before.DeepCopy()
		e := corev1.EnvVar{Name: name, Value: value}
		if _, err := rankTable.EnsureEnv(after, e, ContainerSelector{}); err != nil {
			if !strings.Contains(err.Error(), "pod ns/p") {
				t.Fatalf("error does not name the pod: %v", err)
			}
			if !equalJSON(before, after) {
				t.Fatal("a failed call changed the pod")
			}
			return
		}
		if name == "PATH" && value != "/bin" {
			t.Fatal("overwrote the user's PATH")
		}
		if changed, err := rankTable.EnsureEnv(after, e, ContainerSelector{}); changed || err != nil {
			t.Fatalf("not idempotent: %v %v", changed, err)
		}
		if errs := Validate(after); len(errs) > 0 {
			t.Fatalf("accepted env %q but the pod is invalid: %v", name, errs)
		}
		applyDiff(t, before, after)
	})
}

// FuzzFinalizers: any finalizer name is added once and removed again, in memory and
// as a merge patch that applies to the object's JSON.
func FuzzFinalizers(f *testing.F) {
	for _, s := range []string{"kplan.dev/cleanup", "", "a", `"quoted"`, "x/y/z", "kplan.dev/other"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		obj := &metav1.ObjectMeta{Name: "qwen", ResourceVersion: "3", Finalizers: []string{"kplan.dev/other"}}
		orig := obj.DeepCopy()
		had := slices.Contains(obj.Finalizers, name)

		patch, err := AddFinalizerPatch(obj, name)
		valid := len(validation.IsQualifiedName(name)) == 0
		if err != nil {
			if valid || had || !strings.Contains(err.Error(), "qwen: finalizer") {
				t.Fatalf("AddFinalizerPatch(%q): %v", name, err)
			}
			return
		}
		if !valid && !had {
			t.Fatalf("AddFinalizerPatch accepted %q, which the API server rejects", name)
		}
		if !equalJSON(obj, orig) {
			t.Fatal("AddFinalizerPatch changed the object")
		}
		if had != (patch == nil) {
			t.Fatalf("patch %s for a finalizer the object had=%v", patch, had)
		}
		if patch != nil {
			objJSON, _ := json.Marshal(map[string]any{"metadata": obj})
			merged, err := jsonpatch.MergePatch(objJSON, patch)
			if err != nil {
				t.Fatalf("merge patch %s: %v", patch, err)
			}
			var got struct{ Metadata metav1.ObjectMeta }
			if err := json.Unmarshal(merged, &got); err != nil || !slices.Contains(got.Metadata.Finalizers, name) || !slices.Contains(got.Metadata.Finalizers, "kplan.dev/other") {
				t.Fatalf("patched finalizers %v (%v)", got.Metadata.Finalizers, err)
			}
		}

		changed := AddFinalizer(obj, name)
		if changed == had || AddFinalizer(obj, name) {
			t.Fatalf("AddFinalizer changed=%v for had=%v, or changed twice", changed, had)
		}
		if !RemoveFinalizer(obj, name) || slices.Contains(obj.Finalizers, name) || RemoveFinalizer(obj, name) {
			t.Fatalf("RemoveFinalizer left %v", obj.Finalizers)
		}
	})
}

// FuzzDiffAnnotationKey: Diff escapes an annotation key as one RFC 6901 reference
// token (no "/", and unescaping gives the key back), and applying the patch sets
// exactly that key.
func FuzzDiffAnnotationKey(f *testing.F) {
	for _, s := range []string{"kthena.io/ranktable-template", "a~b", "~1", "~01", "", "/", "~"} {
		f.Add(s)
	}
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	f.Fuzz(func(t *testing.T, key string) {
		if !utf8.ValidString(key) || key == "other" {
			return // JSON carries only UTF-8: such a key is never an annotation
		}
		before := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"other": "x"}}}
		after := before.DeepCopy()
		after.Annotations[key] = "v"
		ops, err := Diff(before, after)
		if err != nil || len(ops) != 1 {
			t.Fatalf("Diff = %v, %v; want one operation", ops, err)
		}
		tok, ok := strings.CutPrefix(ops[0].Path, "/metadata/annotations/")
		if !ok || ops[0].Op != "add" || strings.Contains(tok, "/") {
			t.Fatalf("operation %s: want an add of one token under /metadata/annotations", ops[0])
		}
		if got := unescape.Replace(tok); got != key {
			t.Fatalf("unescape(%q) = %q, want %q", tok, got, key)
		}
		patch, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Apply([]byte(`{"metadata":{"annotations":{"other":"x"}}}`))
		if err != nil {
			t.Fatalf("apply %s: %v", patch, err)
		}
		var got struct {
			Metadata struct{ Annotations map[string]string }
		}
		if err := json.Unmarshal(out, &got); err != nil || len(got.Metadata.Annotations) != 2 || got.Metadata.Annotations[key] != "v" {
			t.Fatalf("annotations after the patch: %v (%v)", got.Metadata.Annotations, err)
		}
	})
}
