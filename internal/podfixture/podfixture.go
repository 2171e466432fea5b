// Package podfixture builds pods for tests: short, readable and deterministic.
//
//	pod := podfixture.Pod("default", "qwen-0",
//		podfixture.Labels("app", "qwen"),
//		podfixture.Annotation("ascend.com/ranktable", `{...}`),
//		podfixture.Containers("engine"),
//		podfixture.Ready())
//
// It is meant for tests only; library code never imports it.
package podfixture

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Option changes a pod under construction.
type Option func(*corev1.Pod)

// Pod returns a pod with the given namespace and name, a UID derived from them,
// one phase (Pending) and the options applied in order.
func Pod(namespace, name string, opts ...Option) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			UID:       types.UID("uid-" + namespace + "-" + name),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// UID sets the pod UID.
func UID(uid string) Option { return func(p *corev1.Pod) { p.UID = types.UID(uid) } }

// Labels adds labels given as key, value pairs (an odd trailing key is ignored).
func Labels(kv ...string) Option {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// Annotation sets one annotation.
func Annotation(key, value string) Option {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

// Containers appends app containers with the given names and image "busybox".
func Containers(names ...string) Option {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
		}
	}
}

// InitContainers appends init containers with the given names and image "busybox".
func InitContainers(names ...string) Option {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
		}
	}
}

// Container appends a fully specified app container.
func Container(c corev1.Container) Option {
	return func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, c) }
}

// Volume appends a volume.
func Volume(v corev1.Volume) Option {
	return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
}

// Node sets spec.nodeName.
func Node(name string) Option { return func(p *corev1.Pod) { p.Spec.NodeName = name } }

// IP sets status.podIP and status.podIPs.
func IP(ip string) Option {
	return func(p *corev1.Pod) {
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
}

// Owner adds a controller owner reference.
func Owner(apiVersion, kind, name, uid string) Option {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes,
		})
	}
}

// Ready marks the pod Running with a true Ready condition since the zero time.
func Ready() Option { return ReadySince(time.Time{}) }

// ReadySince marks the pod Running with a true Ready condition since t.
func ReadySince(t time.Time) Option {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		setCondition(p, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t),
		})
	}
}

// NotReady marks the pod Running with a false Ready condition.
func NotReady() Option {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		setCondition(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

// Deleting sets a deletion timestamp.
func Deleting(at time.Time) Option {
	return func(p *corev1.Pod) {
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
	}
}

// Created sets the creation timestamp.
func Created(at time.Time) Option {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
}

func setCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

// RecordChanges decodes the injection record under annotation key of both pods with
// encoding/json, independently of the code under test, and returns the items of
// injector whose content hash differs or that only one pod has, sorted. A record that
// does not decode is an error.
func RecordChanges(a, b *corev1.Pod, key, injector string) ([]string, error) {
	read := func(p *corev1.Pod) (map[string]string, error) {
		var rec map[string]map[string]string
		if raw := p.Annotations[key]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return nil, fmt.Errorf("pod %s: annotation %s: %w", p.Name, key, err)
			}
		}
		return rec[injector], nil
	}
	ra, err := read(a)
	if err != nil {
		return nil, err
	}
	rb, err := read(b)
	if err != nil {
		return nil, err
	}
	var out []string
	for item, h := range ra {
		if hb, ok := rb[item]; !ok || hb != h {
			out = append(out, item)
		}
	}
	for item := range rb {
		if _, ok := ra[item]; !ok {
			out = append(out, item)
		}
	}
	slices.Sort(out)
	return out, nil
}
