package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The statuses the test kubelet reports. Each function returns a new status from
// the pod's current one and keeps what it does not own (conditions of readiness
// gates, fields of other writers), so a status it would write again is equal to
// the one it wrote.

// ImageID is the image ID the test kubelet reports for a container running image.
func ImageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// isSidecar reports whether an init container is a native sidecar (restartPolicy
// Always): it runs beside the containers.
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// liveStatus is the status of a bound pod that is not being deleted at now: pending
// until its start deadline (and while Allow refuses it), then running, with the
// containers whose spec image changed restarting.
func (k *Kubelet) liveStatus(p *corev1.Pod, st *podTimes, now time.Time) *corev1.PodStatus {
	s := p.Status.DeepCopy()
	at := metav1.NewTime(now)
	if s.StartTime == nil {
		s.StartTime = &at
	}
	if s.HostIP == "" {
		ip := nodeIP(k.opts.Node)
		s.HostIP, s.HostIPs = ip, []corev1.HostIP{{IP: ip}}
	}
	allowed := k.allowed(p)
	if s.Phase != corev1.PodRunning {
		if !allowed || now.Before(st.bound.Add(k.delay(p, "start", k.opts.StartDelay))) {
			s.Phase = corev1.PodPending
			reason := "ContainerCreating"
			if len(p.Spec.InitContainers) > 0 {
				reason = "PodInitializing"
			}
			s.InitContainerStatuses = pendingStatuses(p.Spec.InitContainers, s.InitContainerStatuses, "PodInitializing")
			s.ContainerStatuses = pendingStatuses(p.Spec.Containers, s.ContainerStatuses, reason)
			setConditions(s, p, now)
			return s
		}
		// The containers start: init containers have run to completion, sidecars
		// and containers run.
		s.Phase = corev1.PodRunning
		if s.PodIP == "" {
			ip := podIP(p)
			if p.Spec.HostNetwork {
				ip = s.HostIP
			}
			s.PodIP, s.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		}
		s.InitContainerStatuses = nil
		for _, c := range p.Spec.InitContainers {
			if isSidecar(c) {
				s.InitContainerStatuses = append(s.InitContainerStatuses, runningStatus(c, at))
			} else {
				s.InitContainerStatuses = append(s.InitContainerStatuses, completedStatus(c, at))
			}
		}
		s.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, runningStatus(c, at))
		}
		k.resize(p, st, s, now)
		setConditions(s, p, now)
		return s
	}
	keys := map[string]bool{}
	converge := func(c corev1.Container, old []corev1.ContainerStatus) corev1.ContainerStatus {
		keys[c.Name+"@"+c.Image] = true
		return k.converge(p, st, c, findStatus(old, c.Name), allowed, now)
	}
	inits := make([]corev1.ContainerStatus, 0, len(p.Spec.InitContainers))
	for _, c := range p.Spec.InitContainers {
		switch old := findStatus(s.InitContainerStatuses, c.Name); {
		case isSidecar(c):
			inits = append(inits, converge(c, s.InitContainerStatuses))
		case old != nil:
			inits = append(inits, *old)
		default:
			inits = append(inits, completedStatus(c, at))
		}
	}
	containers := make([]corev1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		containers = append(containers, converge(c, s.ContainerStatuses))
	}
	s.InitContainerStatuses, s.ContainerStatuses = inits, containers
	for key := range st.restarts {
		if !keys[key] {
			delete(st.restarts, key) // the spec moved on to another image
		}
	}
	k.resize(p, st, s, now)
	setConditions(s, p, now)
	return s
}

// converge is the status of container c of a running pod: running the spec's
// image, or stopped since the kubelet saw it differ and running it RestartDelay
// later (when allowed).
func (k *Kubelet) converge(p *corev1.Pod, st *podTimes, c corev1.Container, old *corev1.ContainerStatus, allowed bool, now time.Time) corev1.ContainerStatus {
	at := metav1.NewTime(now)
	if old != nil && old.State.Running != nil && old.Image == c.Image {
		cs := *old.DeepCopy()
		cs.Ready, cs.Started = true, ptrTo(true)
		return cs
	}
	key := c.Name + "@" + c.Image
	since, ok := st.restarts[key]
	if !ok {
		since = now
		st.restarts[key] = now
	}
	var cs corev1.ContainerStatus
	if old != nil {
		cs = *old.DeepCopy()
	} else {
		cs = corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	}
	if r := cs.State.Running; r != nil {
		// Stopped: the kubelet kills the container at once.
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: r.StartedAt, FinishedAt: at}}
	}
	if allowed && !now.Before(since.Add(k.delay(p, "restart "+key, k.opts.RestartDelay))) {
		delete(st.restarts, key)
		next := runningStatus(c, at)
		if old != nil {
			next.RestartCount = old.RestartCount + 1
			next.LastTerminationState = cs.LastTerminationState
		}
		return next
	}
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	cs.Ready, cs.Started = false, ptrTo(false)
	return cs
}

// stoppingStatus is the status of a pod being deleted before its containers have
// exited: nothing is ready.
func stoppingStatus(p *corev1.Pod, now time.Time) *corev1.PodStatus {
	s := p.Status.DeepCopy()
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for i := range list {
			if list[i].State.Terminated == nil {
				list[i].Ready = false
			}
		}
	}
	setConditions(s, p, now)
	return s
}

// exitedStatus is the status of a pod whose processes exited with code: the phase
// given, every container and sidecar terminated, nothing ready.
func exitedStatus(p *corev1.Pod, now time.Time, phase corev1.PodPhase, code int32, reason string) corev1.PodStatus {
	s := p.Status.DeepCopy()
	at := metav1.NewTime(now)
	exit := func(c corev1.Container, old []corev1.ContainerStatus) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		if o := findStatus(old, c.Name); o != nil {
			cs = *o.DeepCopy()
		}
		if cs.State.Terminated != nil {
			return cs // an init container that completed
		}
		t := &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: at}
		if r := cs.State.Running; r != nil {
			t.StartedAt = r.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: t}
		cs.Ready, cs.Started = false, ptrTo(false)
		return cs
	}
	var inits, containers []corev1.ContainerStatus
	for _, c := range p.Spec.InitContainers {
		inits = append(inits, exit(c, s.InitContainerStatuses))
	}
	for _, c := range p.Spec.Containers {
		containers = append(containers, exit(c, s.ContainerStatuses))
	}
	s.InitContainerStatuses, s.ContainerStatuses = inits, containers
	s.Phase = phase
	setConditions(s, p, now)
	return *s
}

// pendingStatuses are the statuses of containers not started yet: waiting for
// reason, reporting the spec's image.
func pendingStatuses(spec []corev1.Container, old []corev1.ContainerStatus, reason string) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(spec))
	for _, c := range spec {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptrTo(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
		if o := findStatus(old, c.Name); o != nil {
			cs.RestartCount, cs.LastTerminationState = o.RestartCount, o.LastTerminationState
		}
		out = append(out, cs)
	}
	return out
}

func runningStatus(c corev1.Container, at metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: ImageID(c.Image), Ready: true, Started: ptrTo(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}
}

func completedStatus(c corev1.Container, at metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: ImageID(c.Image), Ready: true, Started: ptrTo(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: at, FinishedAt: at}}}
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	i := slices.IndexFunc(list, func(s corev1.ContainerStatus) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &list[i]
}

// setConditions sets the conditions the kubelet owns from the containers'
// statuses: PodScheduled, Initialized, ContainersReady and Ready (containers ready
// and every readiness gate's condition True). Other conditions are kept.
func setConditions(s *corev1.PodStatus, p *corev1.Pod, now time.Time) {
	running := s.Phase == corev1.PodRunning
	var unready, incomplete []string
	for _, c := range p.Spec.InitContainers {
		cs := findStatus(s.InitContainerStatuses, c.Name)
		if isSidecar(c) && (cs == nil || !cs.Ready) {
			unready = append(unready, c.Name)
		}
		if isSidecar(c) && (cs == nil || cs.State.Running == nil) ||
			!isSidecar(c) && (cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0) {
			incomplete = append(incomplete, c.Name)
		}
	}
	// A pod stays initialized: a sidecar restarting or the pod exiting does not
	// run its init containers again.
	if i := slices.IndexFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodInitialized }); i >= 0 && s.Conditions[i].Status == corev1.ConditionTrue {
		incomplete = nil
	}
	for _, c := range p.Spec.Containers {
		if cs := findStatus(s.ContainerStatuses, c.Name); cs == nil || !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	containersReady := running && len(unready) == 0
	var gates []string
	for _, g := range p.Spec.ReadinessGates {
		i := slices.IndexFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		if i < 0 || s.Conditions[i].Status != corev1.ConditionTrue {
			gates = append(gates, string(g.ConditionType))
		}
	}
	set := func(t corev1.PodConditionType, ok bool, reason, message string) {
		status := corev1.ConditionFalse
		if ok {
			status, reason, message = corev1.ConditionTrue, "", ""
		}
		i := slices.IndexFunc(s.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
		if i < 0 {
			s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t})
			i = len(s.Conditions) - 1
		}
		c := &s.Conditions[i]
		if c.Status != status {
			c.Status, c.LastTransitionTime = status, metav1.NewTime(now)
		}
		c.Reason, c.Message = reason, message
	}
	set(corev1.PodScheduled, true, "", "")
	set(corev1.PodInitialized, len(incomplete) == 0, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: %v", incomplete))
	set(corev1.ContainersReady, containersReady, "ContainersNotReady", fmt.Sprintf("containers with unready status: %v", unready))
	switch {
	case !containersReady:
		set(corev1.PodReady, false, "ContainersNotReady", fmt.Sprintf("containers with unready status: %v", unready))
	default:
		set(corev1.PodReady, len(gates) == 0, "ReadinessGatesNotReady", fmt.Sprintf("readiness gates not True: %v", gates))
	}
}

// podIP is the pod's address: 10.244.x.y from a hash of its UID.
func podIP(p *corev1.Pod) string {
	h := fnv.New32a()
	h.Write([]byte(p.UID))
	v := h.Sum32()
	return fmt.Sprintf("10.244.%d.%d", v>>8%256, v%254+1)
}

func ptrTo[T any](v T) *T { return &v }
