package revision

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Restarts returns the containers the node side must restart now for the pod to load
// its wanted revision, in order. The reload sidecar comes alone and first; only once
// it has started after the wanted revision's timestamp, and with
// restartInjectedContainers, the injected containers that started before it follow (in
// pod order). The injected containers are those that mount the set's volume
// (VolumeName) in the pod, so a pod created before spec.containers changed (cold)
// restarts the containers it really mounts the files in. Containers that are not
// running are restarting already and are not listed. Nothing is restarted for a pod
// that runs its wanted revision or has none. The pod is not changed.
//
// Cold pods are finished like any other: Plan never changes a cold pod's wanted
// revision, but a change it asked for before the pod turned cold completes, so the
// pod does not stay unavailable (and block maxUnavailable) for ever.
//
// Container start times have one-second precision; a container started in the same
// second as the timestamp counts as started before it, so it may restart once more
// but never keeps old files.
func Restarts(pod *corev1.Pod, set *ConfigMapSet) ([]string, error) {
	need, _, err := restartState(pod, set)
	return need, err
}

// MarkCurrent returns the patch that records the pod's wanted revision as its current
// revision, with now as its timestamp, when the node side may write it: the pod is
// ready, and every container that must restart (the reload sidecar, and with
// restartInjectedContainers the injected containers) runs and started after the wanted
// revision's timestamp. ok is false when the pod is not there yet or already current.
// A zero now, or one outside 1970 to 9999, is an error.
func MarkCurrent(pod *corev1.Pod, set *ConfigMapSet, now time.Time) (patch PodPatch, ok bool, err error) {
	need, pending, err := restartState(pod, set)
	if err == nil {
		if err = checkNow(now); err != nil {
			err = fmt.Errorf("revision.MarkCurrent: pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if err != nil || len(need) > 0 || pending || !podReady(pod) {
		return PodPatch{}, false, err
	}
	keys, err := KeysFor(set.Name)
	if err != nil {
		return PodPatch{}, false, err
	}
	st, _ := keys.Read(pod) // restartState read it already
	if st.UpdateRevision == "" || st.Updated() {
		return PodPatch{}, false, nil
	}
	rev, ts := st.UpdateRevision, FormatTimestamp(now)
	return PodPatch{
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		Annotations: map[string]*string{keys.CurrentRevision: &rev, keys.CurrentRevisionTimestamp: &ts},
	}, true, nil
}

// isColdAt reports whether the pod was created before lastContainers. A pod without
// a creation timestamp (not created yet) is never cold.
func isColdAt(pod *corev1.Pod, lastContainers *metav1.Time) bool {
	return lastContainers != nil && !pod.CreationTimestamp.IsZero() && pod.CreationTimestamp.Before(lastContainers)
}

// restartState returns the containers that must restart now and whether some
// required container is still restarting (not running).
func restartState(pod *corev1.Pod, set *ConfigMapSet) (need []string, pending bool, err error) {
	if pod == nil {
		return nil, false, fmt.Errorf("revision: no pod")
	}
	if set == nil {
		return nil, false, fmt.Errorf("revision: pod %s/%s: no ConfigMapSet", pod.Namespace, pod.Name)
	}
	keys, err := KeysFor(set.Name)
	if err != nil {
		return nil, false, err
	}
	st, err := keys.Read(pod)
	if err != nil {
		return nil, false, err
	}
	if st.UpdateRevision == "" || st.Updated() {
		return nil, false, nil
	}
	since := st.UpdateTimestamp
	sidecar := ReloadSidecarName(set.Name)
	switch containerStarted(pod, sidecar, since) {
	case startedBefore:
		return []string{sidecar}, false, nil
	case notRunning:
		return nil, true, nil
	}
	if !set.Spec.UpdateStrategy.RestartInjectedContainers {
		return nil, false, nil
	}
	vol := VolumeName(set.Name)
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == sidecar || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol }) {
				continue
			}
			switch containerStarted(pod, c.Name, since) {
			case startedBefore:
				need = append(need, c.Name)
			case notRunning:
				pending = true
			}
		}
	}
	return need, pending, nil
}

type startState int

const (
	startedAfter startState = iota
	startedBefore
	notRunning
)

// containerStarted says whether the named container runs and started at or after
// since. A container without status is not running.
func containerStarted(pod *corev1.Pod, name string, since time.Time) startState {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name != name {
				continue
			}
			if cs.State.Running == nil {
				return notRunning
			}
			if cs.State.Running.StartedAt.Time.Before(since) {
				return startedBefore
			}
			return startedAfter
		}
	}
	return notRunning
}
