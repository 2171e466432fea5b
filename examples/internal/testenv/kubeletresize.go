package testenv

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetResizeInfeasible replaces the rule that refuses pods' in-place resizes
// (nil: every resize is accepted). A resize already refused is decided again at
// the next poll.
func (k *Kubelet) SetResizeInfeasible(f func(*corev1.Pod) bool) {
	k.mu.Lock()
	k.infeasible = f
	k.mu.Unlock()
}

func (k *Kubelet) resizeInfeasible(p *corev1.Pod) bool {
	k.mu.Lock()
	f := k.infeasible
	k.mu.Unlock()
	return f != nil && f(p)
}

// resize plays the node's side of in-place pod resize on s, the new status of
// a running pod (p.Status is the status before this sync), as the kubelet of
// Kubernetes 1.33 and later does:
//
//   - Every container status reports resources (the resources the container
//     runs with) and allocatedResources (the requests the node has admitted).
//   - When a container's spec resources differ from those it runs with, the
//     node either refuses the resize (ResizeInfeasible: condition
//     PodResizePending, reason Infeasible; nothing changes) or accepts it:
//     allocatedResources are the spec's requests at once, the pod reports
//     PodResizeInProgress, containers whose resizePolicy is RestartContainer
//     for a changed resource are stopped (and restarted as for a new image),
//     and RestartDelay later every container runs with its spec's resources
//     and the condition is removed.
func (k *Kubelet) resize(p *corev1.Pod, st *podTimes, s *corev1.PodStatus, now time.Time) {
	applied := map[string]corev1.ResourceRequirements{}
	var changed []corev1.Container
	var key strings.Builder
	for _, c := range p.Spec.Containers {
		a := *c.Resources.DeepCopy()
		if o := findStatus(p.Status.ContainerStatuses, c.Name); o != nil && o.Resources != nil {
			a = *o.Resources.DeepCopy()
		}
		applied[c.Name] = a
		if !equality.Semantic.DeepEqual(a, c.Resources) {
			changed = append(changed, c)
			key.WriteString(c.Name + "=" + c.Resources.String() + ";")
		}
	}
	report := func(allocated func(c corev1.Container) corev1.ResourceList) {
		for _, c := range p.Spec.Containers {
			if cs := findStatus(s.ContainerStatuses, c.Name); cs != nil {
				r := applied[c.Name]
				cs.Resources = r.DeepCopy()
				cs.AllocatedResources = allocated(c).DeepCopy()
			}
		}
	}
	old := func(c corev1.Container) corev1.ResourceList { return applied[c.Name].Requests }
	spec := func(c corev1.Container) corev1.ResourceList { return c.Resources.Requests }
	switch {
	case len(changed) == 0:
		st.resizing, st.resizeTo, st.resizeRestarts = time.Time{}, "", nil
		removeCondition(s, corev1.PodResizePending)
		removeCondition(s, corev1.PodResizeInProgress)
		report(old)
		return
	case k.resizeInfeasible(p):
		st.resizing, st.resizeTo, st.resizeRestarts = time.Time{}, "", nil
		removeCondition(s, corev1.PodResizeInProgress)
		setResizeCondition(s, corev1.PodResizePending, corev1.PodReasonInfeasible,
			"the node refuses the resize of containers "+containerNames(changed), p.Generation, now)
		report(old)
		return
	}
	removeCondition(s, corev1.PodResizePending)
	if st.resizing.IsZero() || st.resizeTo != key.String() {
		st.resizing, st.resizeTo = now, key.String()
		st.resizeRestarts = map[string]int32{}
		for _, c := range changed {
			if o := findStatus(p.Status.ContainerStatuses, c.Name); o != nil {
				st.resizeRestarts[c.Name] = o.RestartCount
			}
		}
	}
	// A container the resize restarts is stopped until its restart count
	// passes the one it had when the resize began (the restart itself is
	// converge's, as for a new image); decided from the status read, so a
	// status write that failed is made again.
	stopping := false
	at := metav1.NewTime(now)
	for _, c := range changed {
		in := findStatus(p.Status.ContainerStatuses, c.Name)
		cs := findStatus(s.ContainerStatuses, c.Name)
		if in == nil || cs == nil || !restartsOnResize(c, applied[c.Name]) || in.RestartCount != st.resizeRestarts[c.Name] {
			continue
		}
		stopping = true
		if in.State.Running == nil {
			continue // stopped already: converge restarts it
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: in.State.Running.StartedAt, FinishedAt: at}}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		cs.Ready, cs.Started = false, ptrTo(false)
	}
	if !stopping && !now.Before(st.resizing.Add(k.delay(p, "resize "+st.resizeTo, k.opts.RestartDelay))) {
		st.resizing, st.resizeTo, st.resizeRestarts = time.Time{}, "", nil
		for _, c := range changed {
			applied[c.Name] = *c.Resources.DeepCopy()
		}
		removeCondition(s, corev1.PodResizeInProgress)
		report(spec)
		return
	}
	setResizeCondition(s, corev1.PodResizeInProgress, "", "", p.Generation, now)
	report(spec)
}

// restartsOnResize reports whether container c restarts to move from resources
// from to its spec's: its resizePolicy is RestartContainer for a resource
// (cpu or memory) whose request or limit changes.
func restartsOnResize(c corev1.Container, from corev1.ResourceRequirements) bool {
	for _, pol := range c.ResizePolicy {
		if pol.RestartPolicy != corev1.RestartContainer {
			continue
		}
		r := pol.ResourceName
		if !sameQuantity(c.Resources.Requests, from.Requests, r) || !sameQuantity(c.Resources.Limits, from.Limits, r) {
			return true
		}
	}
	return false
}

func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, oka := a[name]
	qb, okb := b[name]
	return oka == okb && qa.Cmp(qb) == 0
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// setResizeCondition sets a resize condition (status True), keeping its last
// transition time while its reason stays.
func setResizeCondition(s *corev1.PodStatus, t corev1.PodConditionType, reason, msg string, generation int64, now time.Time) {
	i := slices.IndexFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
	if i < 0 {
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, LastTransitionTime: metav1.NewTime(now)})
		i = len(s.Conditions) - 1
	}
	c := &s.Conditions[i]
	if c.Reason != reason {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	c.Status, c.Reason, c.Message, c.ObservedGeneration = corev1.ConditionTrue, reason, msg, generation
}

func removeCondition(s *corev1.PodStatus, t corev1.PodConditionType) {
	s.Conditions = slices.DeleteFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
}
