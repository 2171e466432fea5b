package ranktables

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kplan-dev/kplan"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
	"github.com/kplan-dev/kplan/ranktable"
)

// Reconciler keeps the ranktable ConfigMaps of ModelServings annotated
// kthena.io/ranktable-template: one per role of each serving group, or one per
// serving group at group level.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly; used after a write conflict, when
	// the cache may still hold the object the conflict came from.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// TemplateNamespace holds the template ConfigMaps.
	TemplateNamespace string
	// Timeout is how long a group may wait for its pods' annotations (0: forever).
	Timeout time.Duration
	// Now is the clock.
	Now func() time.Time

	planner   *ranktable.Planner
	templates ranktable.TemplateCache
}

var modelServingGVK = servingv1.GroupVersion.WithKind("ModelServing")

// conflictRetry is how soon a reconcile that lost a write race runs again.
const conflictRetry = 200 * time.Millisecond

// reconcileWorkers is how many owners are reconciled at once. A template that uses up
// its budget takes about a second; the Planner plans different owners in parallel, so
// one such owner occupies one worker and delays no other owner.
const reconcileWorkers = 4

// SetupWithManager registers the reconciler: ModelServings, their ConfigMaps and
// pods, and the template ConfigMaps.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.planner = ranktable.NewPlanner()
	return ctrl.NewControllerManagedBy(mgr).
		Named("ranktable").
		WithOptions(controller.Options{MaxConcurrentReconciles: reconcileWorkers}).
		// Not the ModelServing controller's status writes: only a new spec, deletion
		// (both change the generation) or new annotations change the tables.
		For(&servingv1.ModelServing{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &servingv1.ModelServing{}, handler.OnlyControllerOwner())).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.ownersOfTemplate)).
		Complete(r)
}

// ownersOfTemplate maps a ConfigMap in the templates namespace to every annotated
// ModelServing (a template or the parser it names changed).
func (r *Reconciler) ownersOfTemplate(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.TemplateNamespace {
		return nil
	}
	var list servingv1.ModelServingList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing ModelServings for a template change")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[ranktable.AnnotationTemplate]; ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Reconcile plans and writes one ModelServing's ranktable ConfigMaps.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ms servingv1.ModelServing
	if err := r.Client.Get(ctx, req.NamespacedName, &ms); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tmplName, ok := ms.Annotations[ranktable.AnnotationTemplate]
	if !ok || ms.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, &ms)
	}
	if err := r.ensureFinalizer(ctx, &ms); err != nil {
		return ctrl.Result{}, err
	}
	tmpl, err := LoadTemplate(ctx, r.Client, &r.templates, r.TemplateNamespace, tmplName)
	var level ranktable.Level
	if err == nil {
		level, err = ranktable.ResolveLevel(&ms, tmpl)
	}
	if err != nil {
		generationErrors.Inc()
		r.Recorder.Eventf(&ms, nil, corev1.EventTypeWarning, string(ranktable.ReasonGenerationFailed), "LoadTemplate", "%v", err)
		c := metav1.Condition{Type: servingv1.ConditionRanktableReady, Status: metav1.ConditionFalse,
			Reason: string(ranktable.ReasonGenerationFailed), Message: joinBounded([]string{err.Error()})}
		if _, cerr := r.setCondition(ctx, &ms, c); cerr != nil {
			return ctrl.Result{}, cerr
		}
		return ctrl.Result{}, err
	}
	// The pods this operator created for ms (Plan keeps those ms controls).
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		return ctrl.Result{}, err
	}
	in := ranktable.Input{
		Owner:    ranktable.NewOwner(&ms, modelServingGVK),
		Template: tmpl,
		Pods:     kube.Pointers(pods.Items),
		Expected: expected(&ms, level, pods.Items),
		Now:      r.Now(),
		Timeout:  r.Timeout,
	}

	res, written, err := planAndApply(ctx, r.Client, r.APIReader, r.planner, ms.Namespace, in)
	if err != nil {
		if !retriable(err) && !apierrors.IsNotFound(err) {
			generationErrors.Inc()
		}
		return ctrl.Result{}, err
	}
	recordPlan(r.Recorder, &ms, pods.Items, written, res)
	logPlan(log.FromContext(ctx).WithValues("owner", req.String(), "kind", "ModelServing"), res, written)
	result, err := r.setCondition(ctx, &ms, readyCondition(res))
	if result.IsZero() {
		result.RequeueAfter = res.RequeueAfter
	}
	return result, err
}

// retriable reports whether a write failed because the cache was behind: a
// resourceVersion conflict or a create of something that exists.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// apply creates, updates and deletes the ConfigMaps the plan asks for and returns
// those it wrote, with the API server's answer (name, UID) filled in. A deletion
// carries the UID and resourceVersion the plan saw as preconditions, so a ConfigMap
// re-created or changed since is not deleted (the write fails with a conflict and
// the reconcile plans again).
func applyPlan(ctx context.Context, c client.Client, res ranktable.Result) ([]ranktable.DesiredConfigMap, error) {
	logger := log.FromContext(ctx)
	pods := map[ranktable.GroupKey]int{}
	for _, g := range res.Groups {
		pods[g.Group] = g.Pods
	}
	desired := res.ConfigMaps
	var written []ranktable.DesiredConfigMap
	for _, dc := range desired {
		var err error
		switch dc.Action {
		case kplan.ActionCreate:
			err = c.Create(ctx, dc.ConfigMap)
		case kplan.ActionUpdate:
			err = c.Update(ctx, dc.ConfigMap) // carries resourceVersion: optimistic lock
		case kplan.ActionDelete:
			uid, rv := dc.ConfigMap.UID, dc.ConfigMap.ResourceVersion
			err = client.IgnoreNotFound(c.Delete(ctx, dc.ConfigMap, client.Preconditions{UID: &uid, ResourceVersion: &rv}))
		default:
			continue
		}
		if err != nil {
			return written, fmt.Errorf("%s ConfigMap %s/%s: %w", dc.Action, dc.ConfigMap.Namespace, dc.ConfigMap.Name, err)
		}
		configMapUpdates.WithLabelValues(strings.ToLower(string(dc.Action))).Inc() // "create", "update" or "delete"
		logger.Info("ranktable ConfigMap written", "action", strings.ToLower(string(dc.Action)),
			"configMap", dc.ConfigMap.Name, "group", dc.Group.String(), "pods", pods[dc.Group])
		written = append(written, dc)
	}
	return written, nil
}

// logPlan logs the plan's summary: one line per reconcile, each group's phase at V(1).
func logPlan(logger logr.Logger, res ranktable.Result, written []ranktable.DesiredConfigMap) {
	phases := map[ranktable.Phase]int{}
	for _, g := range res.Groups {
		phases[g.Phase]++
		logger.V(1).Info("ranktable group", "group", g.Group.String(), "pods", g.Pods, "expected", g.Expected,
			"phase", string(g.Phase), "reason", string(g.Reason), "message", g.Message)
	}
	logger.Info("ranktables planned", "groups", len(res.Groups), "completed", phases[ranktable.PhaseCompleted],
		"waiting", phases[ranktable.PhaseWaiting], "failed", phases[ranktable.PhaseFailed],
		"written", len(written), "unmatched", len(res.Unmatched), "requeueAfter", res.RequeueAfter.String())
	for _, u := range res.Unmatched {
		logger.V(1).Info("pod in no ranktable group", "pod", u.Pod, "reason", string(u.Reason), "message", u.Message)
	}
}

// record emits the plan's events on the objects they name and counts failed groups.
// Events about ConfigMaps are emitted only for ConfigMaps this reconcile wrote.
func recordPlan(rec events.EventRecorder, owner runtime.Object, pods []corev1.Pod, written []ranktable.DesiredConfigMap, res ranktable.Result) {
	for _, g := range res.Groups {
		if g.Phase == ranktable.PhaseFailed {
			generationErrors.Inc()
		}
	}
	cms := map[string]*corev1.ConfigMap{}
	for _, dc := range written {
		cms[dc.ConfigMap.Namespace+"/"+dc.ConfigMap.Name] = dc.ConfigMap
	}
	podsByKey := map[string]*corev1.Pod{}
	for i := range pods {
		podsByKey[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
	}
	for _, ev := range res.Events {
		regarding := owner
		key := ev.Object.Namespace + "/" + ev.Object.Name
		switch ev.Object.Kind {
		case "ConfigMap":
			cm, ok := cms[key]
			if !ok {
				continue // planned before, written by an earlier reconcile
			}
			regarding = cm
		case "Pod":
			if p, ok := podsByKey[key]; ok {
				regarding = p
			}
		}
		rec.Eventf(regarding, owner, ev.Type, string(ev.Reason), "Reconcile", "%s", ev.Message)
	}
}

// expected returns the pods each group must have, from ms's spec: every role's
// members in each serving group at role level, all roles' members together at
// group level. The groups are those ms's pods are in (a Gang rollout's surge group
// has an index beyond spec.replicas, and the group it replaced leaves its index
// free) and, while fewer than spec.replicas, the lowest free indexes, where the
// ModelServing controller creates groups.
func expected(ms *servingv1.ModelServing, level ranktable.Level, pods []corev1.Pod) map[ranktable.GroupKey]int {
	groups := map[int]bool{}
	for i := range pods {
		g, err := strconv.Atoi(pods[i].Labels[servingv1.LabelGroupIndex])
		if err == nil && g >= 0 && pods[i].DeletionTimestamp == nil && metav1.IsControlledBy(&pods[i], ms) {
			groups[g] = true
		}
	}
	for g := 0; len(groups) < ms.GroupCount(); g++ {
		groups[g] = true
	}
	out := map[ranktable.GroupKey]int{}
	for g := range groups {
		for _, role := range ms.Spec.Roles {
			k := ranktable.GroupKey{Group: ms.GroupName(g)}
			if level == ranktable.LevelRole {
				k.Role = role.Name
			}
			out[k] += role.Members()
		}
	}
	return out
}

// planAndApply plans the owner's tables and writes them, re-reading the namespace's
// ConfigMaps from the API server (apiReader) and planning again after a write
// conflict: the cache may still hold what the write conflicted with.
func planAndApply(ctx context.Context, c client.Client, apiReader client.Reader, planner *ranktable.Planner, ns string, in ranktable.Input) (ranktable.Result, []ranktable.DesiredConfigMap, error) {
	var res ranktable.Result
	var written []ranktable.DesiredConfigMap
	reader := client.Reader(c)
	attempt := 0
	err := retry.OnError(retry.DefaultBackoff, retriable, func() error {
		attempt++
		if attempt > 1 {
			reader = apiReader
		}
		var cms corev1.ConfigMapList
		// Every ConfigMap of the namespace: Plan picks its own by name, and must see a
		// same-named ConfigMap someone else owns to report it instead of colliding.
		if err := reader.List(ctx, &cms, client.InNamespace(ns)); err != nil {
			return err
		}
		in.ConfigMaps = kube.Pointers(cms.Items)
		start := time.Now()
		var err error
		res, err = planner.Plan(in)
		generationDuration.Observe(time.Since(start).Seconds())
		if err != nil {
			return err
		}
		written, err = applyPlan(ctx, c, res)
		return err
	})
	return res, written, err
}
