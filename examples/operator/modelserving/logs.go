package modelserving

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kplan-dev/kplan"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
)

// What the controller logs (examples/operator/README.md, "Logs", lists every line
// and key). The reconcile's logger (log.FromContext) already names the controller,
// the ModelServing and its namespace; the lines add stable keys: mode, revision,
// reason, step, waiting, pod, group, action.

// The reasons of the pod writes, in the key "reason" of their lines. The plan's
// own reasons (rollout's Step.Reason and Wait.Reason) appear as they are.
const (
	// reasonBelowDesired: a step's Create while the pool has fewer replicas than
	// wanted: a new ModelServing, a scale up, or a pod deleted to be recreated
	// (whose create waits until the old pod is gone).
	reasonBelowDesired = "BelowDesired"
	// reasonSurge: a step's Create beyond the wanted count (maxSurge).
	reasonSurge = "Surge"
	// reasonScaleDown: a step's Delete of a replica at the update revision.
	reasonScaleDown = "ScaleDown"
	// reasonOldRevision: a step's Delete of a replica at an older revision (its
	// replacement was created first).
	reasonOldRevision = "OldRevision"
	// reasonRecreate: a step's Update whose revision changes more than images:
	// the pod is deleted and created again under its name.
	reasonRecreate = "Recreate"
	// reasonRepair: a serving group's missing member is created (Step.Repair).
	reasonRepair = "Repair"
	// reasonReplacement: recovery creates a replacement beside a failed replica.
	reasonReplacement = "Replacement"
	// reasonReleased: recovery deletes a failed replica its replacement took over.
	reasonReleased = "Released"
	// reasonCancelled: recovery deletes a replacement it no longer needs.
	reasonCancelled = "ReplacementCancelled"
	// reasonSwapped: recovery marks a failed replica swapped out and its
	// replacement ordinary.
	reasonSwapped = "Swapped"
	// reasonNameTaken: a create found its pod name held by another owner's pod.
	reasonNameTaken = "PodNameTaken"
)

// The values of the key "action" of the pod write lines.
const (
	actionCreate   = "create"
	actionDelete   = "delete"
	actionAnnotate = "annotate"
)

// reasonKey carries the reason of the writes a call makes in its context.
type reasonKey struct{}

// withReason returns ctx carrying the reason of the pod writes made with it.
func withReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, reasonKey{}, reason)
}

// reasonOf is the reason ctx carries ("" when none).
func reasonOf(ctx context.Context) string {
	r, _ := ctx.Value(reasonKey{}).(string)
	return r
}

// stepCounts are the actions of one reconcile's plan, summed over its pools.
type stepCounts struct {
	Creates int `json:"creates"`
	Deletes int `json:"deletes"`
	Updates int `json:"updates"`
	Repairs int `json:"repairs"`
	// Recovery's actions, when a recovery policy acts this reconcile.
	Replacements int `json:"replacements,omitempty"`
	Swaps        int `json:"swaps,omitempty"`
	Releases     int `json:"releases,omitempty"`
	Cancels      int `json:"cancels,omitempty"`
}

// summary returns the plan's action counts and how many replicas wait, by
// reason.
func (p *msPlan) summary() (stepCounts, map[kplan.Reason]int) {
	var c stepCounts
	waiting := map[kplan.Reason]int{}
	for _, pl := range p.pools {
		if p.recovering {
			c.Replacements += len(pl.recover.Replace)
			c.Swaps += len(pl.recover.Swap)
			c.Releases += len(pl.recover.Release)
			c.Cancels += len(pl.recover.Cancel)
		} else {
			c.Creates += len(pl.step.Create)
			c.Deletes += len(pl.step.Delete)
			c.Updates += len(pl.step.Update)
		}
		c.Repairs += len(pl.step.Repair)
		for _, w := range pl.step.Waiting {
			waiting[w.Reason]++
		}
	}
	return c, waiting
}

// settled reports whether ms's status already says the rollout to target is
// complete for its generation.
func settled(ms *servingv1.ModelServing, target string) bool {
	c := meta.FindStatusCondition(ms.Status.Conditions, servingv1.ConditionProgressing)
	return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision == target &&
		c != nil && c.Reason == servingv1.ReasonRolloutComplete
}

// logPlan logs one reconcile's plan: a line when the update revision changed,
// the plan's summary (at V(1) when the rollout is complete and the status
// already says so, so a settled ModelServing stays quiet), and each pool's step
// at V(1).
func logPlan(l logr.Logger, ms *servingv1.ModelServing, target string, p *msPlan, planErr error) {
	if prev := ms.Status.UpdateRevision; prev != target {
		l.Info("update revision changed", "revision", target, "previous", prev)
	}
	if planErr != nil {
		l.Error(planErr, "cannot plan the rollout", "revision", target)
		return
	}
	counts, waiting := p.summary()
	sl := l
	if p.complete && !p.recovering && counts.Repairs == 0 && settled(ms, target) {
		sl = l.V(1)
	}
	kv := []any{"mode", p.mode, "revision", target, "complete", p.complete, "reason", p.reason, "step", counts}
	if len(waiting) > 0 {
		kv = append(kv, "waiting", waiting)
	}
	if p.recovering {
		kv = append(kv, "recovering", true)
	}
	if p.message != "" {
		kv = append(kv, "message", p.message)
	}
	sl.Info("rollout step", kv...)
	if d := l.V(1); d.Enabled() {
		for _, pl := range p.pools {
			d.Info("pool step", poolDetail(pl)...)
		}
	}
}

// poolDetail is the key/values of a pool's step at V(1): its role (Rolling and
// Lockstep), budget, the actions by replica and every wait with its message.
func poolDetail(pl msPool) []any {
	s := pl.step
	kv := []any{"role", pl.role, "complete", s.Complete, "reason", s.Reason,
		"maxUnavailable", s.Budget.MaxUnavailable, "maxSurge", s.Budget.MaxSurge, "latest", s.Latest}
	names := func(n int, name func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		return out
	}
	if len(s.Delete) > 0 {
		kv = append(kv, "delete", names(len(s.Delete), func(i int) string { return s.Delete[i].Replica }))
	}
	if len(s.Update) > 0 {
		kv = append(kv, "update", names(len(s.Update), func(i int) string { return s.Update[i].Replica + " " + s.Update[i].From + "->" + s.Update[i].To }))
	}
	if len(s.Create) > 0 {
		kv = append(kv, "create", names(len(s.Create), func(i int) string { return s.Create[i].Revision }))
	}
	if len(s.Repair) > 0 {
		kv = append(kv, "repair", names(len(s.Repair), func(i int) string { return s.Repair[i].Replica }))
	}
	if len(s.Waiting) > 0 {
		kv = append(kv, "waiting", names(len(s.Waiting), func(i int) string { return waitText(s.Waiting[i]) }))
	}
	return kv
}

// waitText is one wait for a log line: the replica, the reason and the message.
func waitText(w rollout.Wait) string {
	return w.Replica + ": " + string(w.Reason) + ": " + w.Message
}

// createReason is the reason of a step's Create: BelowDesired while the pool
// (the column in Group mode) has fewer live replicas than wanted, else Surge. live
// counts the pool's replicas that are not terminating, the step's earlier
// creates included.
func createReason(live, want int) string {
	if live < want {
		return reasonBelowDesired
	}
	return reasonSurge
}

// deleteReason is the reason of a step's Delete of a replica at rev.
func deleteReason(rev, target string) string {
	if rev == target {
		return reasonScaleDown
	}
	return reasonOldRevision
}
