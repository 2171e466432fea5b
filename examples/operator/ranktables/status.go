package ranktables

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// Finalizer is the finalizer the reconciler puts on every ranktable owner, so it
// cleans up (deletes the owner's ranktable ConfigMaps, forgets its cached plan)
// before the owner goes.
const Finalizer = "kplan.dev/ranktable"

// Reasons of the ModelServing's RanktableReady condition and events of its
// ranktable lifecycle.
const (
	// ReasonRanktableReady: every group's table is complete (condition True; Normal
	// event on the transition to ready).
	ReasonRanktableReady = "RanktableReady"
	// ReasonRanktableNotReady: a ready owner is no longer ready (Warning event).
	ReasonRanktableNotReady = "RanktableNotReady"
	// ReasonGroupsFailed: a group failed to parse, render or timed out (condition
	// False; the message names each group's pod and field).
	ReasonGroupsFailed = "GroupsFailed"
	// ReasonGroupsWaiting: a group waits for pod annotations (condition False).
	ReasonGroupsWaiting = "GroupsWaiting"
	// ReasonUpdateFailed: writing the owner's status failed (Warning event).
	ReasonUpdateFailed = "UpdateFailed"
	// ReasonCleanedUp: the owner's ranktable ConfigMaps were deleted (Normal event).
	ReasonCleanedUp = "RanktableCleanedUp"
)

// maxConditionMessage bounds the condition's message (the API server allows 32768
// bytes); longer ones are cut with a count of what was left out.
const maxConditionMessage = 4096

// ensureFinalizer adds Finalizer to a live owner (a merge patch carrying the
// resourceVersion, so a concurrent change of the finalizers is a conflict).
func (r *Reconciler) ensureFinalizer(ctx context.Context, ms *servingv1.ModelServing) error {
	patch, err := webhookpatch.AddFinalizerPatch(ms, Finalizer)
	if err != nil || patch == nil {
		return err
	}
	return r.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, patch))
}

// finalize cleans up after an owner that is being deleted or no longer asks for
// ranktables: it deletes the ranktable ConfigMaps the owner controls, forgets the
// owner's cached plan, and removes Finalizer.
func (r *Reconciler) finalize(ctx context.Context, ms *servingv1.ModelServing) error {
	if !slices.Contains(ms.Finalizers, Finalizer) {
		return nil
	}
	deleted, err := deleteTables(ctx, r.Client, ms)
	if err != nil {
		return err
	}
	r.planner.Forget(ms.UID)
	if len(deleted) > 0 {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, ReasonCleanedUp, "Finalize", "deleted ranktable ConfigMaps %s", strings.Join(deleted, ", "))
	}
	patch, err := webhookpatch.RemoveFinalizerPatch(ms, Finalizer)
	if err != nil || patch == nil {
		return err
	}
	return client.IgnoreNotFound(r.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, patch)))
}

// readyCondition sums up the plan's groups as the owner's RanktableReady condition,
// from the groups' own messages: failed groups come first (a group that timed out
// names the pods still missing the annotation and the annotation, a group that
// failed to parse or render names the pod and field).
func readyCondition(res ranktable.Result) metav1.Condition {
	var failed, waiting []string
	for _, g := range res.Groups {
		switch g.Phase {
		case ranktable.PhaseFailed:
			failed = append(failed, g.Message)
		case ranktable.PhaseWaiting:
			waiting = append(waiting, g.Message)
		}
	}
	c := metav1.Condition{Type: servingv1.ConditionRanktableReady, Status: metav1.ConditionTrue, Reason: ReasonRanktableReady,
		Message: fmt.Sprintf("%d ranktable groups complete", len(res.Groups))}
	switch {
	case len(failed) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonGroupsFailed, joinBounded(failed)
	case len(waiting) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonGroupsWaiting, joinBounded(waiting)
	}
	return c
}

func joinBounded(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if b.Len()+len(p) > maxConditionMessage {
			if i == 0 { // keep the start of a single long message rather than nothing
				b.WriteString(strings.ToValidUTF8(p[:maxConditionMessage], "") + "...")
				i++
			}
			if i < len(parts) {
				fmt.Fprintf(&b, "; and %d more", len(parts)-i)
			}
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// setCondition writes c into ms's status when it changed (an update carrying the
// resourceVersion, so neither this controller nor the ModelServing controller
// overwrites the other's newer conditions: the loser of a race gets a conflict and
// tries again), and records the transitions as KServe does: a Warning event when a
// ready ModelServing stops being ready, a Normal one when it becomes ready, a
// Warning UpdateFailed event when the write fails.
func (r *Reconciler) setCondition(ctx context.Context, ms *servingv1.ModelServing, c metav1.Condition) (ctrl.Result, error) {
	old := meta.FindStatusCondition(ms.Status.Conditions, c.Type)
	if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return ctrl.Result{}, nil
	}
	wasReady := old != nil && old.Status == metav1.ConditionTrue
	c.LastTransitionTime = metav1.NewTime(r.Now())
	c.ObservedGeneration = ms.Generation
	next := ms.DeepCopy()
	meta.SetStatusCondition(&next.Status.Conditions, c)
	if err := r.Client.Status().Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, ReasonUpdateFailed, "UpdateStatus",
			"failed to update status for ModelServing %q: %v", ms.Name, err)
		return ctrl.Result{}, fmt.Errorf("ModelServing %s/%s: status: %w", ms.Namespace, ms.Name, err)
	}
	switch isReady := c.Status == metav1.ConditionTrue; {
	case wasReady && !isReady:
		r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, ReasonRanktableNotReady, "UpdateStatus",
			"ModelServing %s is no longer ranktable-ready because of: %s", ms.Name, c.Message)
	case !wasReady && isReady:
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, ReasonRanktableReady, "UpdateStatus", "ModelServing %s is ranktable-ready", ms.Name)
	}
	return ctrl.Result{}, nil
}

// deleteTables deletes the ranktable ConfigMaps owner controls in its namespace and
// returns their names.
func deleteTables(ctx context.Context, c client.Client, owner client.Object) ([]string, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{ranktable.LabelComponent: ComponentRanktable}); err != nil {
		return nil, err
	}
	var deleted []string
	for i := range cms.Items {
		cm := &cms.Items[i]
		if !metav1.IsControlledBy(cm, owner) {
			continue
		}
		// Preconditions: never delete a ConfigMap re-created since it was listed.
		uid, rv := cm.UID, cm.ResourceVersion
		if err := c.Delete(ctx, cm, client.Preconditions{UID: &uid, ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("deleting ranktable ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		log.FromContext(ctx).Info("ranktable ConfigMap written", "action", "delete", "configMap", cm.Name, "reason", "OwnerNotAnnotated")
		deleted = append(deleted, cm.Name)
	}
	return deleted, nil
}

// existsSelector selects objects carrying label key.
func existsSelector(key string) (labels.Selector, error) {
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

// lower is s in lower case, for controller names.
func lower(s string) string { return strings.ToLower(s) }
