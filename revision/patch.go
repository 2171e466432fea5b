package revision

import (
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodPatch is the change Plan wants on one pod's metadata. A key mapped to nil is
// removed.
type PodPatch struct {
	// Namespace is the pod's namespace.
	Namespace string
	// Name is the pod's name.
	Name string
	// UID is the pod's UID, for a precondition.
	UID types.UID
	// Annotations are the annotations to set, or to remove where the value is nil.
	// Nil when no annotation changes.
	Annotations map[string]*string
	// Labels are the labels to set, or to remove where the value is nil. Nil when no
	// label changes.
	Labels map[string]*string
}

// MergePatch returns the patch as a JSON merge patch (RFC 7386) for the pod, with keys
// in sorted order. When UID is set the patch carries it as metadata.uid, a
// precondition: the API server refuses the patch if the pod was deleted and
// re-created under the same name since it was read, instead of giving the new pod
// the old one's revision.
func (p PodPatch) MergePatch() ([]byte, error) {
	meta := map[string]any{}
	if p.UID != "" {
		meta["uid"] = p.UID
	}
	if len(p.Annotations) > 0 {
		meta["annotations"] = p.Annotations
	}
	if len(p.Labels) > 0 {
		meta["labels"] = p.Labels
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// Apply returns a deep copy of pod with the patch applied; pod is not changed. The
// caller passes the pod the patch names (Apply does not check).
func (p PodPatch) Apply(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	out.Annotations = applyMap(out.Annotations, p.Annotations)
	out.Labels = applyMap(out.Labels, p.Labels)
	return out
}

func applyMap(m map[string]string, ch map[string]*string) map[string]string {
	if len(ch) == 0 {
		return m
	}
	m = maps.Clone(m)
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range ch {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = *v
		}
	}
	return m
}
