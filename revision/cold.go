package revision

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/canonhash"
)

// Cold pods: pods Plan leaves alone because they lack the set's sidecar or mounts.

// coldStart returns status.lastContainersTimestamp and lastContainersHash for the
// current spec.containers, and whether they changed. On the first reconcile the
// timestamp is the set's creation time (pods older than the set were never injected),
// or now when that is unknown.
func coldStart(set *ConfigMapSet, now time.Time) (*metav1.Time, string, bool) {
	h := canonhash.New().String("kplan.dev/configmapset-containers/v1")
	h.Uint64(uint64(len(set.Spec.Containers)))
	for _, c := range set.Spec.Containers {
		fp := ""
		if c.NameFrom != nil {
			fp = c.NameFrom.FieldRef.FieldPath
		}
		h.Strings(c.Name, fp, c.MountPath)
	}
	hash := h.Hex(16)
	st := set.Status
	switch {
	case st.LastContainersHash == "":
		ts := metav1.NewTime(ceilSecond(now))
		if !set.CreationTimestamp.IsZero() {
			ts = set.CreationTimestamp
		}
		return &ts, hash, false
	case st.LastContainersHash != hash || st.LastContainersTimestamp == nil:
		ts := metav1.NewTime(ceilSecond(now))
		return &ts, hash, st.LastContainersHash != hash
	default:
		return st.LastContainersTimestamp.DeepCopy(), hash, false
	}
}

// ceilSecond rounds t up to a whole second. The API server stores status
// timestamps in whole seconds, so a sub-second lastContainersTimestamp would read
// back earlier than Plan wrote it and a pod created in that second would turn from
// cold to warm between two reconciles. Rounding up keeps such a pod cold in both:
// created in the second the containers changed, it may lack the new mounts.
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}

// coldKind is a cold pod's reason in one byte (podInfo is kept small: Plan holds one
// per pod).
type coldKind uint8

const (
	coldNone coldKind = iota
	coldNotInjected
	coldBeforeContainers
)

func (k coldKind) reason() kplan.Reason {
	switch k {
	case coldNotInjected:
		return ReasonNotInjected
	case coldBeforeContainers:
		return ReasonCreatedBeforeContainersChange
	}
	return ""
}

// coldOf says why Plan leaves the pod alone, or coldNone: the one implementation of the
// rule (the package doc's Algorithm step 2).
func coldOf(p *corev1.Pod, sidecar string, lastContainers *metav1.Time) coldKind {
	switch {
	case !hasContainer(p, sidecar):
		return coldNotInjected
	case isColdAt(p, lastContainers):
		return coldBeforeContainers
	}
	return coldNone
}

// coldPods lists the cold pods, in the pods' (name) order.
func coldPods(pods []podInfo, sidecar string, lastContainers *metav1.Time) []PodReason {
	var out []PodReason
	for i := range pods {
		if p := &pods[i]; p.cold != coldNone {
			out = append(out, coldReason(p, sidecar, lastContainers))
		}
	}
	return out
}

// coldReason says why the cold pod p is cold.
func coldReason(p *podInfo, sidecar string, lastContainers *metav1.Time) PodReason {
	msg := "not injected (no reload sidecar " + sidecar + ")"
	if p.cold == coldBeforeContainers {
		msg = fmt.Sprintf("created %s, before status.lastContainersTimestamp %s (lacks the current mounts)",
			p.pod.CreationTimestamp.UTC().Format(time.RFC3339), lastContainers.UTC().Format(time.RFC3339))
	}
	return PodReason{Namespace: p.pod.Namespace, Name: p.pod.Name, Reason: p.cold.reason(), Message: msg}
}
