package ranktables

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kplan-dev/kplan/examples/internal/kube"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/ranktable"
)

// OwnerReconciler keeps the rank table ConfigMaps of owners of one kind another
// controller runs (a LeaderWorkerSet, a DisaggregatedSet, kthena's ModelServing, or
// any kind given by its labels), annotated kthena.io/ranktable-template. It reads
// the owners as unstructured objects and never writes them: no finalizer, no status.
// Their ConfigMaps carry a controller owner reference to the owner, so the garbage
// collector deletes them with it; removing the annotation deletes them at once. It
// reports with events on the owner and its ConfigMaps, and with the ConfigMaps.
type OwnerReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly (after a write conflict).
	APIReader client.Reader
	// Owners reads the owners (in Reconcile, and to list them when a template
	// changes). Give it the manager's cache (mgr.GetCache()), which holds every
	// owner of the kind already: the controller watches them. nil:
	// SetupWithManager sets it to mgr.GetCache(). Client does not serve them from
	// the cache unless the manager's client caches unstructured objects, so each
	// read would go to the API server.
	Owners client.Reader
	// Pods reads the kind's pods (those carrying Kind.Grouping.OwnerLabel); nil:
	// SetupWithManager makes a cache of its own for them.
	Pods     client.Reader
	Recorder events.EventRecorder
	// Kind says which owners, and how their pods are grouped, ordered and counted.
	Kind owners.Preset
	// TemplateNamespace holds the template ConfigMaps.
	TemplateNamespace string
	// Timeout is how long a group may wait for its pods' annotations (0: forever).
	Timeout time.Duration
	// Now is the clock.
	Now func() time.Time

	planner   *ranktable.Planner
	templates ranktable.TemplateCache
	// uids remembers each planned owner's UID by name, so that the plan the
	// Planner keeps for an owner is forgotten once the owner is gone.
	uids sync.Map // types.NamespacedName -> types.UID
}

// SetupWithManager registers the reconciler, named ranktable-<kind in lower case>:
// the owners, their ConfigMaps and pods, and the template ConfigMaps. The owner's
// pods are found by the kind's owner label (their controller may be another object:
// a LeaderWorkerSet's pods are its StatefulSets'), read through a cache of the pods
// carrying that label.
func (r *OwnerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Kind.Grouping.OwnerLabel == "" {
		return fmt.Errorf("ranktable owner kind %s: no owner label: its pods could not be found", r.Kind.GVK)
	}
	r.planner = ranktable.NewPlanner()
	if r.Owners == nil {
		r.Owners = mgr.GetCache()
	}
	podCache := r.Pods
	var podSource source.TypedSource[reconcile.Request]
	if podCache == nil {
		c, err := PodCache(mgr, r.Kind.Grouping.OwnerLabel)
		if err != nil {
			return err
		}
		podCache = c
		r.Pods = c
		podSource = source.Kind(c, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(r.ownerOfPod))
	}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(r.Kind.GVK)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("ranktable-"+lower(r.Kind.GVK.Kind)+"-"+lower(r.Kind.GVK.Group)).
		WithOptions(controller.Options{MaxConcurrentReconciles: reconcileWorkers}).
		// Not the owner controller's status writes: only a new spec or annotations.
		For(owner, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.ownersOfTemplate))
	if podSource != nil {
		b = b.WatchesRawSource(podSource)
	} else {
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.ownerOfPod))
	}
	return b.Complete(r)
}

// PodCache returns a cache, started with mgr, of the pods carrying label (any
// value), without their managedFields.
func PodCache(mgr ctrl.Manager, label string) (cache.Cache, error) {
	sel, err := existsSelector(label)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject:                    map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: sel}},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("pods labeled %s: cache: %w", label, err)
	}
	if _, err := c.GetInformer(context.Background(), &corev1.Pod{}); err != nil {
		return nil, fmt.Errorf("pods labeled %s: cache: %w", label, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

// ownerOfPod maps a pod to the owner its owner label names.
func (r *OwnerReconciler) ownerOfPod(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[r.Kind.Grouping.OwnerLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// ownersOfTemplate maps a ConfigMap in the templates namespace to every annotated
// owner of the kind.
func (r *OwnerReconciler) ownersOfTemplate(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != r.TemplateNamespace {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(r.Kind.GVK.GroupVersion().WithKind(r.Kind.GVK.Kind + "List"))
	if err := r.Owners.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing owners for a template change", "kind", r.Kind.GVK.String())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if _, ok := list.Items[i].GetAnnotations()[ranktable.AnnotationTemplate]; ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Reconcile plans and writes one owner's ranktable ConfigMaps.
func (r *OwnerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("owner", req.String(), "kind", r.Kind.GVK.Kind)
	ctx = log.IntoContext(ctx, logger)
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(r.Kind.GVK)
	if err := r.Owners.Get(ctx, req.NamespacedName, owner); err != nil {
		if apierrors.IsNotFound(err) {
			// Its ConfigMaps go with it (owner references); forget its plan.
			if uid, ok := r.uids.LoadAndDelete(req.NamespacedName); ok {
				r.planner.Forget(uid.(types.UID))
				logger.V(1).Info("owner gone; the garbage collector deletes its ranktable ConfigMaps")
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if owner.GetDeletionTimestamp() != nil {
		r.planner.Forget(owner.GetUID())
		return ctrl.Result{}, nil
	}
	if old, loaded := r.uids.Swap(req.NamespacedName, owner.GetUID()); loaded && old.(types.UID) != owner.GetUID() {
		r.planner.Forget(old.(types.UID)) // deleted and re-created under the same name
	}
	tmplName, ok := owner.GetAnnotations()[ranktable.AnnotationTemplate]
	if !ok {
		return ctrl.Result{}, r.removeTables(ctx, owner)
	}
	tmpl, err := LoadTemplate(ctx, r.Client, &r.templates, r.TemplateNamespace, tmplName)
	var level ranktable.Level
	if err == nil {
		level, err = ranktable.ResolveLevel(owner, tmpl)
	}
	var pods corev1.PodList
	if err == nil {
		err = r.Pods.List(ctx, &pods, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{r.Kind.Grouping.OwnerLabel: owner.GetName()})
	}
	var expected map[ranktable.GroupKey]int
	if err == nil {
		expected, err = r.Kind.Expected(owner.GetName(), owner.Object, level, kube.Pointers(pods.Items))
	}
	if err != nil {
		generationErrors.Inc()
		r.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, string(ranktable.ReasonGenerationFailed), "LoadTemplate", "%v", err)
		logger.Error(err, "cannot plan the owner's ranktables", "action", "none", "reason", string(ranktable.ReasonGenerationFailed))
		return ctrl.Result{}, err
	}
	in := ranktable.Input{
		Owner:    ranktable.NewOwner(owner, r.Kind.GVK),
		Template: tmpl,
		Pods:     owners.SameRevision(r.Kind, kube.Pointers(pods.Items)),
		Expected: expected,
		Grouping: r.Kind.Grouping,
		Order:    r.Kind.Order,
		Now:      r.Now(),
		Timeout:  r.Timeout,
	}
	res, written, err := planAndApply(ctx, r.Client, r.APIReader, r.planner, owner.GetNamespace(), in)
	if err != nil {
		if !retriable(err) && !apierrors.IsNotFound(err) {
			generationErrors.Inc()
		}
		return ctrl.Result{}, err
	}
	recordPlan(r.Recorder, owner, pods.Items, written, res)
	logPlan(logger, res, written)
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// removeTables deletes the ranktable ConfigMaps owner controls (its annotation is
// gone) and forgets its plan.
func (r *OwnerReconciler) removeTables(ctx context.Context, owner client.Object) error {
	deleted, err := deleteTables(ctx, r.Client, owner)
	r.planner.Forget(owner.GetUID())
	if len(deleted) > 0 {
		r.Recorder.Eventf(owner, nil, corev1.EventTypeNormal, ReasonCleanedUp, "Cleanup", "deleted ranktable ConfigMaps %v", deleted)
	}
	return err
}
