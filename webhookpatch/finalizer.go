package webhookpatch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AddFinalizer adds name to obj's finalizers in place and reports whether it changed
// anything. Calling it again changes nothing. Existing finalizers keep their order;
// the new one is appended. A nil obj has nothing to change: the result is false.
func AddFinalizer(obj metav1.Object, name string) bool {
	if isNil(obj) {
		return false
	}
	fs := obj.GetFinalizers()
	if slices.Contains(fs, name) {
		return false
	}
	obj.SetFinalizers(append(slices.Clone(fs), name))
	return true
}

// RemoveFinalizer removes every occurrence of name from obj's finalizers in place and
// reports whether it changed anything. An emptied list becomes nil. A nil obj has
// nothing to change: the result is false.
func RemoveFinalizer(obj metav1.Object, name string) bool {
	if isNil(obj) {
		return false
	}
	fs := obj.GetFinalizers()
	if !slices.Contains(fs, name) {
		return false
	}
	out := slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == name })
	if len(out) == 0 {
		out = nil
	}
	obj.SetFinalizers(out)
	return true
}

// AddFinalizerPatch returns the JSON merge patch (RFC 7386) that adds name to obj's
// finalizers, or nil when obj already has it. obj is not changed. A nil obj, or a
// name the API server would reject (not a qualified name, e.g. "example.com/cleanup"),
// is an error.
//
// A merge patch replaces lists whole, so the patch carries the full new list. When
// obj has a resourceVersion the patch carries it too: the API server then rejects the
// patch with a conflict if someone changed the finalizers since obj was read, instead
// of silently dropping their change.
func AddFinalizerPatch(obj metav1.Object, name string) ([]byte, error) {
	if isNil(obj) {
		return nil, fmt.Errorf("webhookpatch: adding finalizer %q: nil object", name)
	}
	if slices.Contains(obj.GetFinalizers(), name) {
		return nil, nil
	}
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return nil, fmt.Errorf("%s %s: finalizer %q: %s", kindOf(obj), obj.GetName(), name, strings.Join(errs, "; "))
	}
	return finalizerPatch(obj, append(slices.Clone(obj.GetFinalizers()), name))
}

// RemoveFinalizerPatch returns the JSON merge patch that removes name from obj's
// finalizers, or nil when obj does not have it. obj is not changed. Removing the last
// finalizer writes null, which deletes the field. See [AddFinalizerPatch] for the
// resourceVersion. A nil obj is an error.
func RemoveFinalizerPatch(obj metav1.Object, name string) ([]byte, error) {
	if isNil(obj) {
		return nil, fmt.Errorf("webhookpatch: removing finalizer %q: nil object", name)
	}
	if !slices.Contains(obj.GetFinalizers(), name) {
		return nil, nil
	}
	return finalizerPatch(obj, slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == name }))
}

// isNil reports whether obj is nil or a nil pointer in an interface (a typed nil such
// as (*corev1.Pod)(nil), whose methods would panic).
func isNil(obj metav1.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// kindOf names obj's kind for errors ("object" when it does not carry one).
func kindOf(obj metav1.Object) string {
	if t, ok := obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		if k := t.GetObjectKind().GroupVersionKind().Kind; k != "" {
			return k
		}
	}
	return "object"
}

func finalizerPatch(obj metav1.Object, finalizers []string) ([]byte, error) {
	type metadata struct {
		Finalizers      []string `json:"finalizers"` // null deletes the field
		ResourceVersion string   `json:"resourceVersion,omitempty"`
	}
	if len(finalizers) == 0 {
		finalizers = nil
	}
	return json.Marshal(struct {
		Metadata metadata `json:"metadata"`
	}{metadata{finalizers, obj.GetResourceVersion()}})
}
