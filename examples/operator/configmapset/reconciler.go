package configmapset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/examples/internal/kube"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
)

// Reconciler writes each ConfigMapSet's hub ConfigMap, its pods' revision
// annotations and its status, as revision.Plan says, with the ConditionComplete
// condition taken from the plan's Complete and Waiting.
type Reconciler struct {
	Client client.Client
	// Pods is the cache whose pod events trigger reconciles (nil: the manager's);
	// Client must read pods from it.
	Pods     cache.Cache
	Recorder events.EventRecorder
	// Now is the clock.
	Now func() time.Time
}

// SetupWithManager registers the reconciler: ConfigMapSets, their hubs and the pods
// their selectors match.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	pods := r.Pods
	if pods == nil {
		pods = mgr.GetCache()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("configmapset").
		For(&revision.ConfigMapSet{}).
		Owns(&corev1.ConfigMap{}).
		WatchesRawSource(source.Kind(pods, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(r.setsOfPod))).
		Complete(r)
}

// setsOfPod maps a pod to the ConfigMapSets of its namespace whose selector matches it.
func (r *Reconciler) setsOfPod(ctx context.Context, o client.Object) []reconcile.Request {
	var sets revision.ConfigMapSetList
	if err := r.Client.List(ctx, &sets, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing ConfigMapSets for a pod")
		return nil
	}
	var reqs []reconcile.Request
	for i := range sets.Items {
		sel, err := metav1.LabelSelectorAsSelector(sets.Items[i].Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(o.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
		}
	}
	return reqs
}

// Reconcile plans one ConfigMapSet and writes the hub, the pod patches and the status,
// in that order (a pod never names a revision the hub does not hold yet).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set revision.ConfigMapSet
	if err := r.Client.Get(ctx, req.NamespacedName, &set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if set.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if errs := revision.Validate(&set); len(errs) > 0 {
		err := fmt.Errorf("ConfigMapSet %s: %w", req, errs.ToAggregate())
		r.Recorder.Eventf(&set, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "%v", err)
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, err
	}
	var hub *corev1.ConfigMap
	var cur corev1.ConfigMap
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: set.Namespace, Name: revision.HubName(set.Name)}, &cur); {
	case err == nil:
		hub = &cur
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	res, err := revision.Plan(revision.Input{Set: &set, Hub: hub, Pods: kube.Pointers(pods.Items), Now: r.Now()})
	if err != nil {
		r.Recorder.Eventf(&set, nil, corev1.EventTypeWarning, "PlanFailed", "Reconcile", "%v", err)
		return ctrl.Result{}, err
	}
	l := log.FromContext(ctx)
	logPlan(l, &set, res)
	if set.Spec.UpdateStrategy.Type == revision.ExternalUpdate {
		l.V(1).Info("pods are moved by their owner (updateStrategy.type External)", "updateRevision", res.Status.UpdateRevision, "waiting", len(res.Waiting))
	}
	switch cm := res.Hub.ConfigMap; res.Hub.Action {
	case kplan.ActionCreate:
		labelHub(cm)
		if err := controllerutil.SetControllerReference(&set, cm, r.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		err = r.Client.Create(ctx, cm)
	case kplan.ActionUpdate:
		err = r.Client.Update(ctx, cm)
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("hub ConfigMap %s/%s: %w", res.Hub.ConfigMap.Namespace, res.Hub.ConfigMap.Name, err)
	}
	if res.Hub.Action != kplan.ActionNone {
		l.Info("wrote hub ConfigMap", "action", string(res.Hub.Action), "configMap", res.Hub.ConfigMap.Name,
			"revision", res.Status.UpdateRevision, "revisions", len(res.Revisions))
	}
	for _, p := range res.Pods {
		patch, err := p.MergePatch()
		if err != nil {
			return ctrl.Result{}, err
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		err = r.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		logPodPatch(l, &set, res, p, err == nil)
	}
	cond := completeCondition(&set, res, r.Now())
	was := meta.FindStatusCondition(set.Status.Conditions, ConditionComplete)
	meta.SetStatusCondition(&res.Status.Conditions, cond)
	if !equality.Semantic.DeepEqual(set.Status, res.Status) {
		set.Status = res.Status
		if err := r.Client.Status().Update(ctx, &set); err != nil {
			return ctrl.Result{}, err
		}
	}
	logCondition(l, res, was, cond)
	// The events name the set (ev.Object); recording them on &set lets the scheme
	// fill in the API group, which a typed Get leaves out of the set's TypeMeta.
	for _, ev := range res.Events {
		r.Recorder.Eventf(&set, nil, ev.Type, string(ev.Reason), "Reconcile", "%s", ev.Message)
	}
	return ctrl.Result{}, nil
}

// ConditionComplete is the condition type the reconciler sets on a ConfigMapSet:
// True when the rollout has gone as far as the partition allows
// (revision.Result.Complete), with reason RolloutComplete, or Partitioned while the
// partition keeps pods on older revisions; False with the reason and message of the
// first pod that waits for something else (revision.Result.Waiting).
const ConditionComplete = "Complete"

// completeCondition is the ConditionComplete condition of the plan res, taken from
// its Complete and Waiting as they are.
func completeCondition(set *revision.ConfigMapSet, res revision.Result, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: ConditionComplete, ObservedGeneration: set.Generation, LastTransitionTime: metav1.NewTime(now)}
	kept := 0
	for _, w := range res.Waiting {
		if w.Reason == revision.ReasonPartitioned {
			kept++
			continue
		}
		if c.Reason == "" {
			c.Status, c.Reason = metav1.ConditionFalse, string(w.Reason)
			c.Message = fmt.Sprintf("pod %s: %s", w.Name, w.Message)
		}
	}
	switch {
	case !res.Complete:
		if n := len(res.Waiting) - kept; n > 1 {
			c.Message = fmt.Sprintf("%d pods wait; %s", n, c.Message)
		}
	case kept > 0:
		c.Status, c.Reason = metav1.ConditionTrue, string(revision.ReasonPartitioned)
		c.Message = fmt.Sprintf("%d of %d pods run revision %s; the partition keeps %d on older revisions",
			res.Status.MatchedPods-int32(kept), res.Status.MatchedPods, res.Status.UpdateRevision, kept)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, string(revision.ReasonRolloutComplete)
		c.Message = fmt.Sprintf("every pod runs revision %s", res.Status.UpdateRevision)
	}
	return c
}

// ComponentHub is the value of the app.kubernetes.io/component label
// (ranktable.LabelComponent) on the hub ConfigMaps the reconciler creates, so the
// operator's cache, which holds only labeled ConfigMaps, sees them.
const ComponentHub = "configmapset-hub"

// labelHub marks a hub ConfigMap the reconciler creates, so its cache sees it.
func labelHub(cm *corev1.ConfigMap) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ranktable.LabelComponent] = ComponentHub
}
