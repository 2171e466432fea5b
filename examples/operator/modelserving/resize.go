package modelserving

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/inplace"
)

// recreateBlockedResizes deletes the pods whose resize the node will not apply
// (inplace.ResizeBlocked: Infeasible, or Deferred for too long): the next
// reconciles create each again under its name at its revision, as after any
// recreate. The pods are not serving (their gates are False), so this spends
// no more of the budget than they already do; the copies in pods are marked
// terminating for the rest of this reconcile. It returns whether it deleted
// any, and how soon a deferred resize reaches its limit.
func (r *Reconciler) recreateBlockedResizes(ctx context.Context, ms *servingv1.ModelServing, pods []*corev1.Pod, now time.Time) (bool, time.Duration, error) {
	acted := false
	var next time.Duration
	for _, p := range pods {
		blocked, reason, wait := inplace.ResizeBlocked(p, now)
		if !blocked {
			next = minPositive(next, wait)
			continue
		}
		uid := p.UID
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &uid}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return acted, next, fmt.Errorf("deleting pod %s, whose resize is %s: %w", p.Name, reason, err)
		}
		log.FromContext(ctx).Info("deleted pod to recreate it: the node will not resize it", "pod", p.Name, "revision", p.Labels[servingv1.LabelRevision], "reason", reason)
		acted = true
		r.expect.Deleted(ms.UID, uid, now)
		at := metav1.NewTime(now)
		p.DeletionTimestamp = &at
	}
	return acted, next, nil
}
