package configmapset

import (
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/revision"
)

// What the controller logs (examples/operator/README.md, "Logs", lists every line
// and key). The reconcile's logger (log.FromContext) already names the controller,
// the ConfigMapSet and its namespace.

// logPlan logs a plan: a line when the update revision moves (with the plan's
// event reason: RevisionCreated or RevisionRestored), and the plan's summary at
// V(1).
func logPlan(l logr.Logger, set *revision.ConfigMapSet, res revision.Result) {
	if prev, now := set.Status.UpdateRevision, res.Status.UpdateRevision; prev != now {
		var reason kplan.Reason
		for _, ev := range res.Events {
			if ev.Reason == revision.ReasonRevisionCreated || ev.Reason == revision.ReasonRevisionRestored {
				reason = ev.Reason
			}
		}
		l.Info("update revision changed", "revision", now, "previous", prev, "reason", reason)
	}
	if d := l.V(1); d.Enabled() {
		waiting := map[kplan.Reason]int{}
		for _, w := range res.Waiting {
			waiting[w.Reason]++
		}
		d.Info("configmapset plan", "revision", res.Status.UpdateRevision, "current", res.Status.CurrentRevision,
			"complete", res.Complete, "hub", string(res.Hub.Action), "patches", len(res.Pods), "waiting", waiting, "cold", len(res.Cold))
	}
}

// logPodPatch logs a pod patch the plan asked for: a move to a revision (reason
// PodsUpdated, or PodsRolledBack when the partition sends it back) by default,
// a change of the update-order label alone at V(1). applied is false when the
// pod was gone.
func logPodPatch(l logr.Logger, set *revision.ConfigMapSet, res revision.Result, p revision.PodPatch, applied bool) {
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		return // Plan checked the name
	}
	if !applied {
		l.V(1).Info("pod gone before its patch", "pod", p.Name)
		return
	}
	if to := p.Annotations[keys.UpdateRevision]; to != nil {
		reason := revision.ReasonPodsUpdated
		if *to != res.Status.UpdateRevision {
			reason = revision.ReasonPodsRolledBack
		}
		l.Info("moved pod to revision", "action", "patch", "pod", p.Name, "revision", *to, "reason", reason)
		return
	}
	if v, ok := p.Labels[keys.UpdateOrder]; ok {
		l.V(1).Info("set pod update-order label", "action", "patch", "pod", p.Name, "removed", v == nil)
	}
}

// logCondition logs the ConditionComplete condition when its status or reason
// changes (or, complete, its message: another revision or pod count): the
// rollout complete (RolloutComplete, Partitioned), or waiting with the first
// waiting pod's reason.
func logCondition(l logr.Logger, res revision.Result, was *metav1.Condition, now metav1.Condition) {
	if was != nil && was.Status == now.Status && was.Reason == now.Reason &&
		(now.Status != metav1.ConditionTrue || was.Message == now.Message) {
		return
	}
	if now.Status == metav1.ConditionTrue {
		l.Info("rollout complete", "revision", res.Status.UpdateRevision, "reason", now.Reason, "pods", res.Status.MatchedPods, "message", now.Message)
		return
	}
	l.Info("rollout waiting", "revision", res.Status.UpdateRevision, "reason", now.Reason, "waiting", len(res.Waiting), "message", now.Message)
}
