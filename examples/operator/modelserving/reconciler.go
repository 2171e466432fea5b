package modelserving

import (
	"cmp"
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/expectations"
	"github.com/kplan-dev/kplan/examples/internal/history"
	"github.com/kplan-dev/kplan/examples/internal/inplace"
	"github.com/kplan-dev/kplan/examples/internal/kube"
	"github.com/kplan-dev/kplan/revision"
)

// Reconciler creates and rolls out the pods of ModelServings
// (serving.examples.kplan.dev/v1alpha1). Each reconcile observes the owner's pods,
// builds package rollout's input for the strategy's mode, plans one step and
// carries it out: creates, deletes, and updates. A pod whose new revision
// differs from its current one only in container images and in containers' cpu
// and memory requests and limits (as far as the pod's resize subresource can
// change them) is updated in place (same name and UID; it carries the readiness
// gate servingv1.PodConditionImagesReady, False until its containers run the
// new images, the node has applied the new resources, and they are ready); any
// other revision change deletes the pod and creates it again under the same
// name, as does a resize the node reports infeasible (or defers for five
// minutes). Pods are named
// <modelserving>-<role>-<group>-<member> and labelled with kthena's ModelServing
// labels plus the group and member indices; the roles' templates are kept as
// ControllerRevisions, the pods' revision label naming one.
//
// A reconcile plans only once the cache shows every pod it created or deleted
// before (expectations), so a lagging cache never creates or deletes twice. A
// pod is created again under its name only once its old pod is gone (on a node
// a deleted pod terminates for a while); a create whose name another owner's
// pod holds is reported in the status (Failed, PodNameTaken) and retried. A
// serving group that lost members is made whole at its revision (rollout's
// Step.Repair). Pods are created in the slots the plan names (a serving group's
// index and its members' columns in Gang mode, a row and a column in Group
// mode); in Rolling and Lockstep mode a role's pod goes to its lowest free
// group and member. Every write is logged.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock (default time.Now).
	Now func() time.Time

	expect *expectations.Expectations
}

// SetupWithManager registers the reconciler for ModelServings and the pods and
// ControllerRevisions they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.expect = expectations.New(time.Minute)
	return ctrl.NewControllerManagedBy(mgr).
		Named("modelserving").
		WithOptions(controller.Options{MaxConcurrentReconciles: reconcileWorkers}).
		For(&servingv1.ModelServing{}).
		Owns(&corev1.Pod{}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&revision.ConfigMapSet{}, handler.EnqueueRequestsFromMapFunc(r.modelServingsOfSet)).
		Complete(r)
}

// conflictRetry is how soon a reconcile that lost a write race runs again.
const conflictRetry = 200 * time.Millisecond

// reconcileWorkers is how many ModelServings are reconciled at once.
const reconcileWorkers = 4

// Reconcile carries out one step of a ModelServing's rollout:
//
//  1. observe the pods it controls, once the cache shows every write of earlier
//     reconciles (package expectations);
//  2. open the readiness gates of pods that wait for nothing, and delete the pods
//     whose resize the node will not apply, to be created again (package inplace);
//  3. find or create the update revision among the ControllerRevisions (package
//     history);
//  4. plan one step with package rollout (planModelServing, pure);
//  5. carry the step out (execute);
//  6. delete revisions beyond the history limit;
//  7. write the status, a pure function of the plan and of what the step did;
//  8. requeue as the plan and the step say.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ms := &servingv1.ModelServing{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ms.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector deletes the pods
	}
	now := r.Now()
	pods, err := r.ownedPods(ctx, ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !r.expect.Satisfied(ms.UID, pods, now) {
		// The pod events still on their way trigger the next reconcile.
		log.FromContext(ctx).V(1).Info("waiting for the cache to show earlier pod writes", "waiting", "expectations")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	released, err := inplace.ReleaseGates(ctx, r.Client, cmp.Or(ms.Spec.RolloutStrategy.Mode, servingv1.RollingMode), pods, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	recreated, deferred, err := r.recreateBlockedResizes(ctx, ms, pods, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	data, planErr, err := r.dataRelease(ctx, ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The plan and the status read pods as their readiness gates and their data
	// make them.
	view := dataView(servingv1.ReadyByGates(pods), data)
	h, err := history.Sync(ctx, r.Client, ms, r.Client.Scheme())
	if err != nil {
		return retryConflict(err)
	}
	var plan *msPlan
	if planErr == nil {
		plan, planErr = planModelServing(ms, view, h.Names(), h.Update.Name, data, now)
	}
	logPlan(log.FromContext(ctx), ms, h.Update.Name, plan, planErr)
	res := &execResult{acted: released || recreated, resizeDeferred: deferred}
	var execErr error
	if planErr == nil {
		execErr = r.execute(ctx, ms, h, pods, plan, now, res)
	}
	if err := history.Truncate(ctx, r.Client, h, liveRevisions(pods), historyLimit(ms)); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, ms, status(ms, h, view, plan, planErr, res, now)); err != nil {
		return retryConflict(err)
	}
	return requeue(ms, view, planErr, execErr, res, now)
}

// retryConflict is the result of a reconcile that failed with err: soon again
// when it lost a write race, else the error.
func retryConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// liveRevisions are the revisions pods run.
func liveRevisions(pods []*corev1.Pod) map[string]bool {
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Labels[servingv1.LabelRevision]] = true
	}
	return live
}

// historyLimit is how many old revisions no pod runs are kept (10 when unset).
func historyLimit(ms *servingv1.ModelServing) int {
	if ms.Spec.RevisionHistoryLimit != nil {
		return int(*ms.Spec.RevisionHistoryLimit)
	}
	return 10
}

// writeStatus writes st as ms's status when it changed, and records the
// conditions' transitions.
func (r *Reconciler) writeStatus(ctx context.Context, ms *servingv1.ModelServing, st servingv1.ModelServingStatus) error {
	if equality.Semantic.DeepEqual(ms.Status, st) {
		return nil
	}
	old := ms.Status
	ms.Status = st
	if err := r.Client.Status().Update(ctx, ms); err != nil {
		return err
	}
	r.recordTransitions(ms, old, st)
	return nil
}

// requeue is the reconcile's result once the status is written: nothing more on
// bad input (a new spec triggers a reconcile), soon again after a lost write race,
// else when the next pod becomes available or a taken name may be free.
func requeue(ms *servingv1.ModelServing, view []*corev1.Pod, planErr, execErr error, res *execResult, now time.Time) (ctrl.Result, error) {
	if planErr != nil {
		// Bad input waits for the spec to change (which triggers a reconcile).
		return ctrl.Result{}, nil
	}
	if execErr != nil {
		if apierrors.IsConflict(execErr) || apierrors.IsAlreadyExists(execErr) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, execErr
	}
	next := minPositive(availableIn(view, ms.Spec.RolloutStrategy.MinReadySeconds, now), res.resizeDeferred)
	switch {
	case len(res.taken) > 0:
		// Another owner's pod holds the name: nothing of ours changes when it
		// goes, so look again later.
		next = minPositive(next, nameTakenRetry)
	case res.exists:
		// Our own pod still holds the name (terminating, or the cache lags):
		// its deletion or creation event triggers a reconcile; this one is a
		// safety net.
		next = minPositive(next, existsRetry)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// How soon a reconcile runs again when a create found its name taken: by
// another owner's pod, or by one of ours still terminating.
const (
	nameTakenRetry = 10 * time.Second
	existsRetry    = 2 * time.Second
)

// minPositive is the smaller of two durations, ignoring zeros.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// ownedPods lists the pods ms controls, sorted by name.
func (r *Reconciler) ownedPods(ctx context.Context, ms *servingv1.ModelServing) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], ms) {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// availableIn is how long until the next ready pod becomes available after
// minReadySeconds; 0 when none is waiting for that.
func availableIn(pods []*corev1.Pod, minReady int32, now time.Time) time.Duration {
	if minReady <= 0 {
		return 0
	}
	var next time.Duration
	for _, p := range pods {
		c := kube.PodCondition(p, corev1.PodReady)
		if c == nil || c.Status != corev1.ConditionTrue || p.DeletionTimestamp != nil {
			continue
		}
		at := c.LastTransitionTime.Add(time.Duration(minReady) * time.Second)
		if d := at.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	if next > 0 {
		next += 100 * time.Millisecond
	}
	return next
}
