package revision

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waiting lists, in the pods' (name) order, every pod that does not run the update
// revision confirmed and ready, or that the partition sends back from it, with why,
// and reports whether the set is complete: no pod waits for anything but the
// partition. pods hold the plan's targets; assigned
// is the number of pods whose target is the update revision.
//
// One reason per pod, the first that applies:
//
//   - a warm pod the maxUnavailable budget kept from a revision: MaxUnavailableReached;
//   - a warm pod whose target is not confirmed: RevisionNotConfirmed;
//   - a warm pod that is not ready: PodNotReady;
//   - a warm pod on another revision, with updateStrategy.type External:
//     UpdatedByOwner (only the pod's owner moves it);
//   - a warm pod on another revision: Partitioned. selectPods tries the warm pods
//     off the update in priority order until want pods are on it, and marks as
//     refused the first of those the budget kept back, as many as the update is
//     short of; the others are the pods the partition keeps;
//   - a cold pod that is ready on a confirmed revision other than the update, while
//     want pods are on the update: Partitioned (the partition would keep it anyway);
//     any other cold pod: its cold reason, since Plan never changes it.
func waiting(pods []podInfo, update string, sel selection, assigned int, set *ConfigMapSet, sidecar string, lastContainers *metav1.Time) ([]PodReason, bool) {
	var out []PodReason
	complete := true
	for i := range pods {
		p := &pods[i]
		settled := p.target != "" && p.target == p.state.CurrentRevision
		if settled && p.ready && p.target == update && p.refused == "" {
			continue // current
		}
		r := PodReason{Namespace: p.pod.Namespace, Name: p.pod.Name}
		switch {
		case p.cold != coldNone && !(settled && p.ready && assigned >= sel.want):
			r = coldReason(p, sidecar, lastContainers)
		case p.refused != "":
			r.Reason = ReasonMaxUnavailableReached
			r.Message = fmt.Sprintf("waits to move to revision %s: %d of %d pods are unavailable or restarting, and maxUnavailable is %d",
				p.refused, sel.unavailable, len(pods), sel.maxUnavailable)
		case !settled:
			r.Reason = ReasonRevisionNotConfirmed
			r.Message = notConfirmed(p, set, sidecar)
		case !p.ready:
			r.Reason = ReasonPodNotReady
			r.Message = "runs revision " + p.target + " but is not ready"
		case set.Spec.UpdateStrategy.Type == ExternalUpdate:
			r.Reason = ReasonUpdatedByOwner
			r.Message = fmt.Sprintf("runs revision %s; with spec.updateStrategy.type External its owner moves it to revision %s", p.target, update)
		default:
			r.Reason = ReasonPartitioned
			r.Message = fmt.Sprintf("kept on revision %s: spec.updateStrategy.partition keeps %d of %d pods on older revisions", p.target, sel.kept, len(pods))
		}
		complete = complete && r.Reason == ReasonPartitioned
		out = append(out, r)
	}
	return out, complete
}

// notConfirmed explains a pod whose target revision is not confirmed. When the pod
// already wanted that revision before this plan and its reload sidecar serves it, the
// message names the injected containers that still have to restart and who restarts
// them; a pod that cannot be restarted by signal (it does not share its process
// namespace, as pods injected before restartInjectedContainers was set) says so and
// how to get out.
func notConfirmed(p *podInfo, set *ConfigMapSet, sidecar string) string {
	us := set.Spec.UpdateStrategy
	who := "its reload sidecar has"
	if us.RestartInjectedContainers {
		who = "its reload sidecar and injected containers have"
	}
	runs := "it has confirmed no revision yet"
	if c := p.state.CurrentRevision; c != "" {
		runs = "it runs revision " + c
	}
	if us.RestartInjectedContainers && p.state.UpdateRevision == p.target {
		if need, _, err := restartState(p.pod, set); err == nil && len(need) > 0 && need[0] != sidecar {
			by := "the reload sidecar signals them"
			switch spec := p.pod.Spec; {
			case us.RestartMethod == RestartExternal:
				by = "restartMethod External: another restarter must"
			case !spec.HostPID && (spec.ShareProcessNamespace == nil || !*spec.ShareProcessNamespace):
				by = "the pod does not share its process namespace, so the reload sidecar cannot signal them: re-create the pod"
			}
			return fmt.Sprintf("asked for revision %s; its reload sidecar serves it, containers %v still have to restart (%s; %s)", p.target, need, by, runs)
		}
	}
	return fmt.Sprintf("asked for revision %s; %s not loaded it yet (%s)", p.target, who, runs)
}
