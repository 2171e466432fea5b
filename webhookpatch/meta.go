package webhookpatch

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EnsureAnnotation makes the pod carry annotation key=value. An existing different
// value that this injector did not set is a conflict. The key must be a qualified
// name and must not be [RecordAnnotation]. A value that is not valid UTF-8 is set as
// the API server stores it, with U+FFFD for every invalid byte, so calling
// EnsureAnnotation again on the stored pod changes nothing.
func (in Injector) EnsureAnnotation(pod *corev1.Pod, key, value string) (bool, error) {
	return in.ensureMeta(pod, "annotation", key, storedString(value))
}

// EnsureLabel makes the pod carry label key=value. An existing different value that
// this injector did not set is a conflict. The key must be a qualified name and the
// value a valid label value.
func (in Injector) EnsureLabel(pod *corev1.Pod, key, value string) (bool, error) {
	return in.ensureMeta(pod, "label", key, value)
}

func (in Injector) ensureMeta(pod *corev1.Pod, kind, key, value string) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	field := "metadata." + kind + "s[" + key + "]"
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return false, fmt.Errorf("%s: %s: key is not a qualified name: %s", podRef(pod), field, strings.Join(errs, "; "))
	}
	if key == RecordAnnotation {
		return false, fmt.Errorf("%s: %s: the key is reserved for the injection record", podRef(pod), field)
	}
	m := &pod.Annotations
	if kind == "label" {
		m = &pod.Labels
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return false, fmt.Errorf("%s: %s: value %q: %s", podRef(pod), field, value, strings.Join(errs, "; "))
		}
	}
	item, hash := kind+"/"+key, contentHash(value)
	old, exists := (*m)[key]
	switch {
	case !exists:
	case storedString(old) == value:
		if !rec.owns(in.Name, item) || rec.hash(in.Name, item) == hash {
			return false, nil
		}
	case rec.owns(in.Name, item):
	default:
		return false, in.conflict(pod, field, "the %s is already set to %q", kind, old)
	}
	rec.set(in.Name, item, hash)
	annotationKey := key
	if kind == "label" {
		annotationKey = ""
	}
	if err := checkAnnotationSize(pod, rec, annotationKey, value); err != nil {
		return false, err
	}
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
	writeRecord(pod, rec)
	return true, nil
}
