package modelserving

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/rollout"
)

// Data releases: a ModelServing that names a ConfigMapSet (spec.configMapSet)
// releases the set's data with its pod templates, under one budget. The set must
// have spec.updateStrategy.type External, so that its own controller writes the
// hub and its status but leaves the pods to this one.
//
//   - The target is the set's status.updateRevision (rollout's
//     Strategy.TargetDataRevision).
//   - The revision a pod serves is the set's currentRevision annotation on it
//     (revision.Keys.CurrentRevision, written by the reload sidecar once it serves
//     the files), read into rollout.Replica.DataRevision.
//   - A pod whose wanted revision (revision.Keys.UpdateRevision) differs from it
//     is moving and counts as not ready until the sidecar confirms; a confirmed
//     pod is ready at the earliest when it was confirmed (for minReadySeconds).
//   - An update that moves data (rollout.Update with DataFrom != DataTo) writes
//     the wanted revision and its timestamp on the update's pods that stay; pods
//     recreated by the update get the update revision from the set's webhook.

// dataRevisionLabel carries, on the in-memory copies of the pods the plan reads
// (never written to the API server), the data revision a pod serves, for
// rollout.FromPods (PodLabels.DataRevision).
const dataRevisionLabel = "modelserving.internal/data-revision"

// dataRelease is the ConfigMapSet data a ModelServing's rollout releases.
type dataRelease struct {
	set    *revision.ConfigMapSet
	keys   revision.Keys
	target string
}

// dataRelease reads the ConfigMapSet ms names; nil when it names none. A set that
// is missing, not in External mode or not reconciled yet is bad input (bad, naming
// the field: the reconcile reports it and waits for the set to change); err is a
// failed read.
func (r *Reconciler) dataRelease(ctx context.Context, ms *servingv1.ModelServing) (d *dataRelease, bad, err error) {
	name := ms.Spec.ConfigMapSet
	if name == "" {
		return nil, nil, nil
	}
	set := &revision.ConfigMapSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ms.Namespace, Name: name}, set); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("spec.configMapSet: ConfigMapSet %s/%s not found", ms.Namespace, name), nil
		}
		return nil, nil, err
	}
	if t := set.Spec.UpdateStrategy.Type; t != revision.ExternalUpdate {
		return nil, fmt.Errorf("spec.configMapSet: ConfigMapSet %s/%s has spec.updateStrategy.type %q; it must be %q so that only this ModelServing moves its pods' data",
			ms.Namespace, name, t, revision.ExternalUpdate), nil
	}
	if set.Status.UpdateRevision == "" || set.Status.ObservedGeneration != set.Generation {
		return nil, fmt.Errorf("spec.configMapSet: ConfigMapSet %s/%s: status.updateRevision is not reconciled for generation %d yet", ms.Namespace, name, set.Generation), nil
	}
	keys, kerr := revision.KeysFor(name)
	if kerr != nil {
		return nil, fmt.Errorf("spec.configMapSet: %w", kerr), nil
	}
	log.FromContext(ctx).V(1).Info("releasing data with the pods", "configMapSet", name, "targetData", set.Status.UpdateRevision)
	return &dataRelease{set: set, keys: keys, target: set.Status.UpdateRevision}, nil, nil
}

// dataView returns pods as the plan reads them with data: copies labelled with
// the data revision each serves, not ready while its data moves, and ready at the
// earliest since its data was confirmed. d nil returns pods as given.
func dataView(pods []*corev1.Pod, d *dataRelease) []*corev1.Pod {
	if d == nil {
		return pods
	}
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		st, err := d.keys.Read(p)
		if err != nil {
			st = revision.PodState{UpdateRevision: p.Annotations[d.keys.UpdateRevision], CurrentRevision: p.Annotations[d.keys.CurrentRevision]}
		}
		cp := *p
		cp.Labels = maps.Clone(p.Labels)
		if cp.Labels == nil {
			cp.Labels = map[string]string{}
		}
		cp.Labels[dataRevisionLabel] = st.CurrentRevision
		if j := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady }); j >= 0 {
			c := p.Status.Conditions[j]
			switch {
			case c.Status != corev1.ConditionTrue:
			case st.UpdateRevision != "" && st.UpdateRevision != st.CurrentRevision:
				c.Status = corev1.ConditionFalse
				if st.UpdateTimestamp.After(c.LastTransitionTime.Time) {
					c.LastTransitionTime = metav1.NewTime(st.UpdateTimestamp)
				}
			case st.CurrentTimestamp.After(c.LastTransitionTime.Time):
				c.LastTransitionTime = metav1.NewTime(st.CurrentTimestamp)
			}
			cp.Status.Conditions = slices.Clone(p.Status.Conditions)
			cp.Status.Conditions[j] = c
		}
		out[i] = &cp
	}
	return out
}

// moveData writes the wanted data revision of an update that moves data on the
// update's pods that are still there (not deleted by it), and records each write
// so a lagging cache does not hide it.
func (e *msExecutor) moveData(ctx context.Context, u rollout.Update) error {
	d := e.data
	if d == nil || u.DataTo == "" || u.DataTo == u.DataFrom {
		return nil
	}
	stamp := revision.FormatTimestamp(e.now)
	for _, name := range u.Pods {
		p := e.byPod[name]
		if p == nil || p.DeletionTimestamp != nil || p.Annotations[d.keys.UpdateRevision] == u.DataTo {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         p.UID,
			"annotations": map[string]string{d.keys.UpdateRevision: u.DataTo, d.keys.UpdateRevisionTimestamp: stamp},
		}})
		if err != nil {
			return err
		}
		if err := e.r.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("moving the data of pod %s: %w", p.Name, err)
		}
		log.FromContext(ctx).Info("moved pod data", "pod", p.Name, "configMapSet", d.set.Name, "from", u.DataFrom, "to", u.DataTo, "revision", p.Labels[servingv1.LabelRevision])
		e.acted = true
		e.r.expect.Annotated(e.ms.UID, p.UID, d.keys.UpdateRevision, u.DataTo, e.now)
	}
	return nil
}

// modelServingsOfSet maps a ConfigMapSet to the ModelServings of its namespace
// that name it.
func (r *Reconciler) modelServingsOfSet(ctx context.Context, o client.Object) []reconcile.Request {
	var list servingv1.ModelServingList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing ModelServings for a ConfigMapSet", "configMapSet", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.ConfigMapSet == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
