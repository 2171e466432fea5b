package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kplan-dev/kplan/ranktable"
)

// RanktableReconciler keeps the ranktable ConfigMaps of StatefulSets annotated
// kthena.io/ranktable-template.
type RanktableReconciler struct {
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

var statefulSetGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// reconcileWorkers is how many owners are reconciled at once. A template that uses up
// its budget takes about a second; the Planner plans different owners in parallel, so
// one such owner occupies one worker and delays no other owner.
const reconcileWorkers = 4

// SetupWithManager registers the reconciler: StatefulSets, their ConfigMaps and pods,
// and the template ConfigMaps.
func (r *RanktableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.planner = ranktable.NewPlanner()
	return ctrl.NewControllerManagedBy(mgr).
		Named("ranktable").
		WithOptions(controller.Options{MaxConcurrentReconciles: reconcileWorkers}).
		For(&appsv1.StatefulSet{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1.StatefulSet{}, handler.OnlyControllerOwner())).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.ownersOfTemplate)).
		Complete(r)
}

// ownersOfTemplate maps a ConfigMap in the templates namespace to every annotated
// StatefulSet (a template or the parser it names changed).
func (r *RanktableReconciler) ownersOfTemplate(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.TemplateNamespace {
		return nil
	}
	var list appsv1.StatefulSetList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing StatefulSets for a template change")
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

// loadTemplate loads the ranktable template named by the owner's annotation, and the
// parser ConfigMap it names unless that is a built-in parser.
func loadTemplate(ctx context.Context, c client.Reader, cache *ranktable.TemplateCache, ns, name string) (*ranktable.Template, error) {
	var rt corev1.ConfigMap
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rt); err != nil {
		return nil, fmt.Errorf("ranktable template ConfigMap %s/%s: %w", ns, name, err)
	}
	var parser *corev1.ConfigMap
	if p := ranktable.ParserConfigMapName(&rt); p != "" {
		parser = &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: p}, parser); err != nil {
			return nil, fmt.Errorf("pod parser ConfigMap %s/%s: %w", ns, p, err)
		}
	}
	return cache.Load(&rt, parser, ranktable.LoadOptions{})
}

// Reconcile plans and writes one owner's ranktable ConfigMaps.
func (r *RanktableReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sts appsv1.StatefulSet
	if err := r.Client.Get(ctx, req.NamespacedName, &sts); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tmplName, ok := sts.Annotations[ranktable.AnnotationTemplate]
	if !ok || sts.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, &sts)
	}
	if err := r.ensureFinalizer(ctx, &sts); err != nil {
		return ctrl.Result{}, err
	}
	tmpl, err := loadTemplate(ctx, r.Client, &r.templates, r.TemplateNamespace, tmplName)
	if err != nil {
		generationErrors.Inc()
		r.Recorder.Eventf(&sts, nil, corev1.EventTypeWarning, string(ranktable.ReasonGenerationFailed), "LoadTemplate", "%v", err)
		c := appsv1.StatefulSetCondition{Type: ConditionRanktableReady, Status: corev1.ConditionFalse,
			Reason: string(ranktable.ReasonGenerationFailed), Message: joinBounded([]string{err.Error()})}
		if cerr := r.setCondition(ctx, &sts, c); cerr != nil {
			return ctrl.Result{}, cerr
		}
		return ctrl.Result{}, err
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("StatefulSet %s: spec.selector: %w", req, err))
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(sts.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, err
	}
	in := ranktable.Input{
		Owner:    ranktable.NewOwner(&sts, statefulSetGVK),
		Template: tmpl,
		Pods:     podPointers(pods.Items),
		Now:      r.Now(),
		Timeout:  r.Timeout,
	}
	in.Expected, err = expected(&sts, tmpl)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}

	var res ranktable.Result
	var written []ranktable.DesiredConfigMap
	reader := client.Reader(r.Client)
	attempt := 0
	err = retry.OnError(retry.DefaultBackoff, retriable, func() error {
		attempt++
		if attempt > 1 {
			reader = r.APIReader // the cache may still hold what we conflicted with
		}
		var cms corev1.ConfigMapList
		// Every ConfigMap of the namespace: Plan picks its own by name, and must see a
		// same-named ConfigMap someone else owns to report it instead of colliding.
		if err := reader.List(ctx, &cms, client.InNamespace(sts.Namespace)); err != nil {
			return err
		}
		in.ConfigMaps = configMapPointers(cms.Items)
		start := time.Now()
		res, err = r.planner.Plan(in)
		generationDuration.Observe(time.Since(start).Seconds())
		if err != nil {
			return err
		}
		written, err = r.apply(ctx, res.ConfigMaps)
		return err
	})
	if err != nil {
		if !retriable(err) && !apierrors.IsNotFound(err) {
			generationErrors.Inc()
		}
		return ctrl.Result{}, err
	}
	r.record(&sts, pods.Items, written, res)
	if err := r.setCondition(ctx, &sts, readyCondition(res, tmpl)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// retriable reports whether a write failed because the cache was behind: a
// resourceVersion conflict or a create of something that exists.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// apply creates and updates the ConfigMaps the plan asks for and returns those it
// wrote, with the API server's answer (name, UID) filled in.
func (r *RanktableReconciler) apply(ctx context.Context, desired []ranktable.DesiredConfigMap) ([]ranktable.DesiredConfigMap, error) {
	var written []ranktable.DesiredConfigMap
	for _, dc := range desired {
		var err error
		switch dc.Action {
		case ranktable.ActionCreate:
			err = r.Client.Create(ctx, dc.ConfigMap)
		case ranktable.ActionUpdate:
			err = r.Client.Update(ctx, dc.ConfigMap) // carries resourceVersion: optimistic lock
		default:
			continue
		}
		if err != nil {
			return written, fmt.Errorf("%s ConfigMap %s/%s: %w", dc.Action, dc.ConfigMap.Namespace, dc.ConfigMap.Name, err)
		}
		configMapUpdates.WithLabelValues(strings.ToLower(string(dc.Action))).Inc() // "create" or "update"
		written = append(written, dc)
	}
	return written, nil
}

// record emits the plan's events on the objects they name and counts failed groups.
// Events about ConfigMaps are emitted only for ConfigMaps this reconcile wrote.
func (r *RanktableReconciler) record(sts *appsv1.StatefulSet, pods []corev1.Pod, written []ranktable.DesiredConfigMap, res ranktable.Result) {
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
		var regarding runtime.Object = sts
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
		r.Recorder.Eventf(regarding, sts, ev.Type, string(ev.Reason), "Reconcile", "%s", ev.Message)
	}
}

// expected returns the pods each group must have: spec.replicas for the group the pod
// template names, or nil (each group expects the pods it has) when the template's
// labels do not place pods in a group.
func expected(sts *appsv1.StatefulSet, tmpl *ranktable.Template) (map[ranktable.GroupKey]int, error) {
	level, err := ranktable.ResolveLevel(sts, tmpl)
	if err != nil {
		return nil, fmt.Errorf("StatefulSet: %w", err)
	}
	key := ranktable.KeyOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: sts.Spec.Template.Labels}}, level, ranktable.Grouping{})
	if key == (ranktable.GroupKey{}) {
		return nil, nil
	}
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	return map[ranktable.GroupKey]int{key: replicas}, nil
}

func podPointers(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func configMapPointers(items []corev1.ConfigMap) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
