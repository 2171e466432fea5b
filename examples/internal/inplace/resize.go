package inplace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
)

// In-place resource resize. A revision that changes the cpu and memory
// requests and limits of a pod's containers (and perhaps their images) moves
// the pod in place too: after the readiness gate is set False, the new
// resources are written through the pod's resize subresource (Kubernetes 1.33
// and later), then the images, the revision label and the record are patched
// as for an image update (Apply). The node resizes the containers (restarting
// those whose resizePolicy says RestartContainer); the gate opens once it
// reports the new resources applied (each resized container's status resources and
// allocatedResources equal its spec, no PodResizePending or PodResizeInProgress
// condition) and the changed containers are ready.
//
// What the resize subresource cannot express recreates, as any other change:
// a change of other resources than cpu and memory, a request or limit removed,
// a QoS class change, resize policies changed, init containers changed, pod
// level resources, Windows pods; and a resize the API server refuses anyway.
// A resize the node reports Infeasible (PodResizePending, reason Infeasible)
// is never retried by the kubelet: the controller deletes the pod and creates
// it again under its name (ResizeBlocked). A Deferred one (the node may fit it
// later) waits up to deferredResizeTimeout, then is recreated the same way,
// where the scheduler may find room.

// deferredResizeTimeout is how long a resize the node defers is waited for
// before the pod is recreated. The kubelet retries a deferred resize whenever
// resources free up on its node; five minutes is the Vertical Pod Autoscaler's
// limit for the same wait. The pod is not serving meanwhile (its gate is
// False), so the wait spends the availability budget.
const deferredResizeTimeout = 5 * time.Minute

// inPlaceChange is what moving a pod to another revision in place changes.
type inPlaceChange struct {
	// images are the new images by container name.
	images map[string]string
	// resources are the new resources by container name (written through the
	// resize subresource).
	resources map[string]corev1.ResourceRequirements
}

// inPlaceChanges returns, when templates from and to differ only in what a
// pod can change in place (containers' images, and their cpu and memory
// requests and limits as the resize subresource allows), what changes (empty
// when they are equal); false when anything else differs.
func inPlaceChanges(from, to corev1.PodTemplateSpec) (inPlaceChange, bool) {
	if len(from.Spec.Containers) != len(to.Spec.Containers) {
		return inPlaceChange{}, false
	}
	ch := inPlaceChange{images: map[string]string{}, resources: map[string]corev1.ResourceRequirements{}}
	cp := to.DeepCopy()
	for i := range cp.Spec.Containers {
		c, f := &cp.Spec.Containers[i], from.Spec.Containers[i]
		if c.Name != f.Name {
			return inPlaceChange{}, false
		}
		if c.Image != f.Image {
			ch.images[c.Name] = c.Image
			c.Image = f.Image
		}
		if !equality.Semantic.DeepEqual(c.Resources, f.Resources) {
			if !resizable(f.Resources, c.Resources) {
				return inPlaceChange{}, false
			}
			ch.resources[c.Name] = *c.Resources.DeepCopy()
			c.Resources = *f.Resources.DeepCopy()
		}
	}
	if !equality.Semantic.DeepEqual(from, *cp) {
		return inPlaceChange{}, false
	}
	if len(ch.resources) > 0 {
		if from.Spec.Resources != nil || from.Spec.OS != nil && from.Spec.OS.Name == corev1.Windows {
			return inPlaceChange{}, false
		}
		if qosClass(from.Spec) != qosClass(to.Spec) {
			return inPlaceChange{}, false
		}
	}
	return ch, true
}

// resizable reports whether the resize subresource can move a container from
// resources from to resources to: only cpu and memory requests and limits
// change, none is removed, and the claims stay.
func resizable(from, to corev1.ResourceRequirements) bool {
	if !equality.Semantic.DeepEqual(from.Claims, to.Claims) {
		return false
	}
	for _, lists := range [][2]corev1.ResourceList{{from.Requests, to.Requests}, {from.Limits, to.Limits}} {
		f, t := lists[0], lists[1]
		for name, q := range f {
			n, ok := t[name]
			if !ok {
				return false // removing a request or limit is refused
			}
			if n.Cmp(q) != 0 && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return false
			}
		}
		for name := range t {
			if _, ok := f[name]; !ok && name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return false
			}
		}
	}
	return true
}

// qosClass is the QoS class Kubernetes gives a pod of spec (with requests
// defaulted from limits, as the API server does): Guaranteed when every
// container has cpu and memory limits equal to its requests, BestEffort when
// none has a cpu or memory request or limit, else Burstable.
func qosClass(spec corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		sum := q.DeepCopy()
		if cur, ok := l[name]; ok {
			sum.Add(cur)
		}
		l[name] = sum
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		req := maps.Clone(c.Resources.Requests)
		if req == nil {
			req = corev1.ResourceList{}
		}
		for name, q := range c.Resources.Limits {
			if _, ok := req[name]; !ok {
				req[name] = q
			}
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := req[name]; ok && q.Sign() > 0 {
				add(requests, name, q)
			}
			q, ok := c.Resources.Limits[name]
			if ok && q.Sign() > 0 {
				add(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed && len(requests) == len(limits) {
		for name, q := range requests {
			if l, ok := limits[name]; !ok || l.Cmp(q) != 0 {
				guaranteed = false
			}
		}
		if guaranteed {
			return corev1.PodQOSGuaranteed
		}
	}
	return corev1.PodQOSBurstable
}

// withDefaultRequests returns r with its requests defaulted from its limits,
// as the API server defaults a pod's containers: a resize must name the
// requests the pod has, not the template's absent ones.
func withDefaultRequests(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	for name, q := range r.Limits {
		if _, ok := out.Requests[name]; !ok {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
	}
	return out
}

// resize writes new container resources through the pod's resize
// subresource; wrote reports whether it did. It returns ok false, with no
// error, when the API server refuses the resize as invalid (a change it cannot
// express for this pod, whatever the templates say): the caller recreates the
// pod instead.
func resize(ctx context.Context, c client.Client, p *corev1.Pod, resources map[string]corev1.ResourceRequirements) (wrote, ok bool, err error) {
	var containers []map[string]any
	for _, name := range slices.Sorted(maps.Keys(resources)) {
		containers = append(containers, map[string]any{"name": name, "resources": withDefaultRequests(resources[name])})
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"spec":     map[string]any{"containers": containers},
	})
	if err != nil {
		return false, false, err
	}
	if err := c.SubResource("resize").Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return false, true, nil
		case apierrors.IsInvalid(err):
			log.FromContext(ctx).Info("resize refused, recreating the pod", "pod", p.Name, "error", err.Error())
			return false, false, nil
		}
		return false, false, fmt.Errorf("resizing pod %s: %w", p.Name, err)
	}
	log.FromContext(ctx).Info("resized pod", "pod", p.Name, "containers", slices.Sorted(maps.Keys(resources)))
	return true, true, nil
}

// resized reports whether the node has applied the resize an in-place update
// recorded: no PodResizePending or PodResizeInProgress condition, and every
// resized container reports status resources and allocatedResources equal to
// its spec (cpu and memory) and is ready.
func resized(p *corev1.Pod, rec *inPlaceUpdateRecord) bool {
	if len(rec.Resized) == 0 {
		return true
	}
	for _, t := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if c := kube.PodCondition(p, t); c != nil && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	for _, name := range rec.Resized {
		i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
		j := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
		if i < 0 {
			continue // a container the pod lost: nothing to wait for
		}
		if j < 0 {
			return false
		}
		spec, s := p.Spec.Containers[i].Resources, p.Status.ContainerStatuses[j]
		if !s.Ready || s.Resources == nil || !sameCPUMemory(s.AllocatedResources, spec.Requests) ||
			!sameCPUMemory(s.Resources.Requests, spec.Requests) || !sameCPUMemory(s.Resources.Limits, spec.Limits) {
			return false
		}
	}
	return true
}

// sameCPUMemory compares the cpu and memory of two resource lists by value.
func sameCPUMemory(a, b corev1.ResourceList) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		qa, oka := a[name]
		qb, okb := b[name]
		if oka != okb || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// ResizeBlocked reports whether the node will not apply the resize of a pod's
// in-place update to its current revision: it reports the resize Infeasible,
// or Deferred for five minutes (the pod is to be recreated; reason is the
// PodResizePending condition's). Otherwise wait is how long until a deferred
// resize reaches that limit (0 when none is deferred).
func ResizeBlocked(p *corev1.Pod, now time.Time) (blocked bool, reason string, wait time.Duration) {
	rec := inPlaceRecord(p)
	if rec == nil || rec.Revision != p.Labels[servingv1.LabelRevision] || len(rec.Resized) == 0 || p.DeletionTimestamp != nil {
		return false, "", 0
	}
	c := kube.PodCondition(p, corev1.PodResizePending)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false, "", 0
	}
	if c.Reason == corev1.PodReasonInfeasible {
		return true, c.Reason, 0
	}
	left := c.LastTransitionTime.Add(deferredResizeTimeout).Sub(now)
	if left <= 0 {
		return true, c.Reason, 0
	}
	return false, "", left
}
