package modelserving

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/history"
	"github.com/kplan-dev/kplan/examples/internal/kube"
)

// status computes ms's status from its pods, this reconcile's plan (or the error
// that kept it from planning) and what carrying the plan out did and met. It
// writes nothing.
func status(ms *servingv1.ModelServing, h *history.History, pods []*corev1.Pod, plan *msPlan, planErr error, res *execResult, now time.Time) servingv1.ModelServingStatus {
	minReady := time.Duration(ms.Spec.RolloutStrategy.MinReadySeconds) * time.Second
	st := servingv1.ModelServingStatus{
		ObservedGeneration: ms.Generation,
		UpdateRevision:     h.Update.Name,
		Conditions:         slices.Clone(ms.Status.Conditions),
	}
	if h.CollisionCount != 0 {
		cc := h.CollisionCount
		st.CollisionCount = &cc
	}
	type group struct {
		pods                      int
		ready, available, updated int
		failed                    bool
		revisions                 map[string]int
	}
	groups := map[int]*group{}
	roles := map[string]*servingv1.RoleStatus{}
	for _, role := range ms.Spec.Roles {
		roles[role.Name] = &servingv1.RoleStatus{Name: role.Name}
	}
	revCount := map[string]int{}
	failed := []string{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		s, ok := slotOf(p)
		if !ok {
			continue
		}
		g := groups[s.group]
		if g == nil {
			g = &group{revisions: map[string]int{}}
			groups[s.group] = g
		}
		rev := p.Labels[servingv1.LabelRevision]
		g.pods++
		g.revisions[rev]++
		revCount[rev]++
		rs := roles[s.role]
		if rs == nil {
			rs = &servingv1.RoleStatus{Name: s.role}
			roles[s.role] = rs
		}
		rs.Replicas++
		if rev == h.Update.Name {
			rs.Updated++
			g.updated++
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			g.failed = true
			failed = append(failed, p.Name)
		}
		if c := kube.PodCondition(p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
			rs.Ready++
			g.ready++
			if !now.Before(c.LastTransitionTime.Add(minReady)) {
				rs.Available++
				g.available++
			}
		}
	}
	size := ms.GroupSize()
	for _, idx := range slices.Sorted(maps.Keys(groups)) {
		g := groups[idx]
		gs := servingv1.GroupStatus{Index: int32(idx)}
		best := 0
		for _, rev := range slices.Sorted(maps.Keys(g.revisions)) {
			if g.revisions[rev] > best {
				best, gs.Revision = g.revisions[rev], rev
			}
		}
		switch {
		case g.failed:
			gs.Phase = servingv1.GroupFailed
		case len(g.revisions) > 1:
			gs.Phase = servingv1.GroupUpdating
		case g.available == size && g.pods == size:
			gs.Phase = servingv1.GroupRunning
		default:
			gs.Phase = servingv1.GroupCreating
		}
		st.Groups = append(st.Groups, gs)
		st.Replicas++
		whole := g.pods == size && len(g.revisions) == 1
		if whole && g.ready == size {
			st.ReadyReplicas++
		}
		if whole && g.available == size {
			st.AvailableReplicas++
		}
		if whole && g.updated == size {
			st.UpdatedReplicas++
		}
	}
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		st.Roles = append(st.Roles, *roles[role])
	}
	// CurrentRevision: the newest revision other than the update that pods run,
	// or the update revision when they run no other.
	st.CurrentRevision = h.Update.Name
	for i := len(h.Revisions) - 1; i >= 0; i-- {
		if name := h.Revisions[i].Name; name != h.Update.Name && revCount[name] > 0 {
			st.CurrentRevision = name
			break
		}
	}
	if st.CurrentRevision == h.Update.Name && ms.Status.CurrentRevision != "" && plan != nil && !plan.complete {
		if h.ByName(ms.Status.CurrentRevision) != nil {
			st.CurrentRevision = ms.Status.CurrentRevision
		}
	}

	gen := ms.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate(msg), ObservedGeneration: gen})
	}
	if planErr != nil {
		set(servingv1.ConditionFailed, metav1.ConditionTrue, servingv1.ReasonPlanFailed, planErr.Error())
		set(servingv1.ConditionProgressing, metav1.ConditionFalse, servingv1.ReasonPlanFailed, planErr.Error())
		return st
	}
	switch {
	case len(res.taken) > 0:
		set(servingv1.ConditionFailed, metav1.ConditionTrue, servingv1.ReasonPodNameTaken,
			listNames(res.taken, 5)+": rename a role or the ModelServing, or delete the other pod")
	case len(failed) > 0:
		set(servingv1.ConditionFailed, metav1.ConditionTrue, servingv1.ReasonPodFailed, "failed pods: "+listNames(failed, 5))
	default:
		set(servingv1.ConditionFailed, metav1.ConditionFalse, servingv1.ReasonNoFailures, "")
	}
	// Available: every pool keeps its floor (n - maxUnavailable available).
	avail, short := true, []string{}
	for _, pl := range plan.pools {
		var n int
		if plan.mode == servingv1.GroupMode {
			// A row serves only when all its columns run one revision.
			for _, r := range pl.step.Rows {
				n += r.AvailableRows
			}
		} else {
			for i := range pl.replicas {
				if s := pl.replicas[i].Effective(); s.Available && s.Ready && s.Healthy && !s.Failed && !s.Lost && !s.Terminating {
					n++
				}
			}
		}
		floor := pl.strategy.Replicas - pl.step.Budget.MaxUnavailable
		if n < floor {
			avail = false
			short = append(short, fmt.Sprintf("%s%d available, %d needed", rolePrefix(pl.role), n, floor))
		}
	}
	if avail {
		set(servingv1.ConditionAvailable, metav1.ConditionTrue, servingv1.ReasonMinimumReplicasAvailable, "")
	} else {
		set(servingv1.ConditionAvailable, metav1.ConditionFalse, servingv1.ReasonMinimumReplicasUnavailable, strings.Join(short, "; "))
	}
	old := 0
	for rev, n := range revCount {
		if rev != h.Update.Name {
			old += n
		}
	}
	switch {
	case plan.complete:
		set(servingv1.ConditionProgressing, metav1.ConditionFalse, servingv1.ReasonRolloutComplete, "")
		if old > 0 {
			set(servingv1.ConditionRollingUpdate, metav1.ConditionFalse, servingv1.ReasonPartitioned,
				fmt.Sprintf("the partition keeps %d pods on %s", old, st.CurrentRevision))
		} else {
			set(servingv1.ConditionRollingUpdate, metav1.ConditionFalse, servingv1.ReasonRolloutComplete, "")
		}
	case res.acted:
		set(servingv1.ConditionProgressing, metav1.ConditionTrue, servingv1.ReasonUpdating, "")
		if old > 0 {
			set(servingv1.ConditionRollingUpdate, metav1.ConditionTrue, servingv1.ReasonUpdating,
				fmt.Sprintf("%d pods on older revisions", old))
		}
	default:
		// Nothing was written: the plan's own reason says what it waits for.
		reason := string(plan.reason)
		set(servingv1.ConditionProgressing, metav1.ConditionTrue, reason, plan.message)
		if old > 0 {
			set(servingv1.ConditionRollingUpdate, metav1.ConditionTrue, reason, plan.message)
		}
	}
	if old == 0 && !plan.complete {
		// Every pod runs the update revision; what is left is waiting for them.
		set(servingv1.ConditionRollingUpdate, metav1.ConditionFalse, servingv1.ReasonAllPodsUpdated, "")
	}
	return st
}

func rolePrefix(role string) string {
	if role == "" {
		return ""
	}
	return "role " + role + ": "
}

// truncate keeps a condition message within the API's 32 KiB.
func truncate(s string) string {
	const limit = 32 * 1024
	if len(s) <= limit {
		return s
	}
	return s[:limit-3] + "..."
}

// recordTransitions emits an event when a condition changes status or reason.
func (r *Reconciler) recordTransitions(ms *servingv1.ModelServing, old, now servingv1.ModelServingStatus) {
	if r.Recorder == nil {
		return
	}
	for _, c := range now.Conditions {
		o := meta.FindStatusCondition(old.Conditions, c.Type)
		if o != nil && o.Status == c.Status && o.Reason == c.Reason {
			continue
		}
		typ := corev1.EventTypeNormal
		if c.Type == servingv1.ConditionFailed && c.Status == metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(ms, nil, typ, c.Reason, "Reconcile", "%s=%s: %s", c.Type, c.Status, c.Message)
	}
}

// listNames lists up to max names and counts the rest.
func listNames(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}
