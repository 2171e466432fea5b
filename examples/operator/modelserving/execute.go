package modelserving

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/history"
	"github.com/kplan-dev/kplan/examples/internal/inplace"
	"github.com/kplan-dev/kplan/rollout"
)

// Carrying out a plan: the writes of one reconcile.

// execResult is what carrying out a plan did and met.
type execResult struct {
	// acted: something was written.
	acted bool
	// exists: a create found its name taken by a pod of this ModelServing
	// (still terminating, or not in the cache yet).
	exists bool
	// taken describes each create that found its name taken by a pod this
	// ModelServing does not control.
	taken []string
	// resizeDeferred is how soon a resize the node defers reaches its limit
	// and the pod is recreated (0 when none is deferred).
	resizeDeferred time.Duration
}

// msExecutor carries out one plan for one ModelServing.
type msExecutor struct {
	r     *Reconciler
	ms    *servingv1.ModelServing
	h     *history.History
	byPod map[string]*corev1.Pod
	// deleted names the pods this step deleted: their names stay taken until
	// their nodes have stopped them.
	deleted map[string]bool
	// used holds every slot a pod occupies (terminating ones too) or this step
	// fills.
	used map[podSlot]bool
	now  time.Time
	// templates caches decoded revisions.
	templates map[string]map[string]corev1.PodTemplateSpec
	// data is the plan's data release (nil without one).
	data *dataRelease
	*execResult
}

// execute carries out every pool's step: deletes, updates (in place or by
// recreating), then creates, recording in res what it wrote and met. It
// stops at the first failed write.
func (r *Reconciler) execute(ctx context.Context, ms *servingv1.ModelServing, h *history.History, pods []*corev1.Pod, plan *msPlan, now time.Time, res *execResult) error {
	e := &msExecutor{r: r, ms: ms, h: h, byPod: map[string]*corev1.Pod{}, deleted: map[string]bool{}, used: map[podSlot]bool{}, now: now,
		templates: map[string]map[string]corev1.PodTemplateSpec{}, execResult: res, data: plan.data}
	for _, p := range pods {
		e.byPod[p.Name] = p
		// A terminating pod's slot is free: creating in it waits (the name is
		// taken) until the pod is gone, so a replacement keeps its group and member.
		if s, ok := slotOf(p); ok && p.DeletionTimestamp == nil {
			e.used[s] = true
		}
	}
	for _, pl := range plan.pools {
		var err error
		if plan.recovering {
			err = e.recover(ctx, plan.mode, pl)
		} else {
			err = e.pool(ctx, plan.mode, pl)
		}
		if err != nil {
			return err
		}
		if err := e.repair(ctx, pl); err != nil {
			return err
		}
	}
	return nil
}

// repair creates the missing members of the serving groups the step lists in
// Repair (Gang mode), at each group's revision, in the slots the step names (the
// group's index and each missing member's column): a group that lost a pod
// (deleted by hand, evicted, or recreated by a rollout while its old pod
// terminated) is made whole. It runs beside recovery too: rollout never lists a
// group that recovery is replacing.
func (e *msExecutor) repair(ctx context.Context, pl msPool) error {
	ctx = withReason(ctx, reasonRepair)
	for _, rp := range pl.step.Repair {
		log.FromContext(ctx).Info("repairing serving group", "group", rp.Replica, "revision", rp.Revision, "missing", rp.Missing, "reason", reasonRepair)
		if err := e.createMembers(ctx, rp.Index, rp.Missing, rp.Revision, ""); err != nil {
			return err
		}
	}
	return nil
}

// replicaPods returns the pods of a replica: the pod of that name, or a serving
// group's pods in Gang mode.
func (e *msExecutor) replicaPods(mode servingv1.RolloutMode, name string) []*corev1.Pod {
	if mode == servingv1.GangMode {
		return e.groupPods(name)
	}
	if p := e.byPod[name]; p != nil {
		return []*corev1.Pod{p}
	}
	return nil
}

// recover carries out a pool's recovery step: replacements are created beside
// the failed replicas (annotated with the replica they replace), a swap marks
// the failed one out of service and the replacement ordinary, releases and
// cancels delete.
func (e *msExecutor) recover(ctx context.Context, mode servingv1.RolloutMode, pl msPool) error {
	rs := pl.recover
	for _, name := range append(slices.Clone(rs.Release), rs.Cancel...) {
		rctx := withReason(ctx, reasonReleased)
		if slices.Contains(rs.Cancel, name) {
			rctx = withReason(ctx, reasonCancelled)
		}
		for _, p := range e.replicaPods(mode, name) {
			if err := e.deletePod(rctx, p); err != nil {
				return err
			}
		}
	}
	ctx = withReason(ctx, reasonSwapped)
	for _, sw := range rs.Swap {
		at := e.now.UTC().Format(time.RFC3339)
		for _, p := range e.replicaPods(mode, sw.Old) {
			if err := e.annotate(ctx, p, servingv1.AnnotationSwappedAt, &at); err != nil {
				return err
			}
		}
		for _, p := range e.replicaPods(mode, sw.New) {
			if err := e.annotate(ctx, p, servingv1.AnnotationReplacementFor, nil); err != nil {
				return err
			}
		}
	}
	ctx = withReason(ctx, reasonReplacement)
	for _, rep := range rs.Replace {
		if err := e.createUnit(ctx, mode, pl.role, rep.Index, rep.Column, rep.Members, rep.Revision, rep.For); err != nil {
			return err
		}
	}
	return nil
}

// annotate sets (value non-nil) or removes an annotation of a pod with a merge
// patch.
func (e *msExecutor) annotate(ctx context.Context, p *corev1.Pod, key string, value *string) error {
	if cur, ok := p.Annotations[key]; (value == nil && !ok) || (value != nil && ok && cur == *value) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         p.UID,
		"annotations": map[string]*string{key: value},
	}})
	if err != nil {
		return err
	}
	if err := e.r.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("annotating pod %s: %w", p.Name, err)
	}
	log.FromContext(ctx).Info("annotated pod", "action", actionAnnotate, "pod", p.Name, "group", p.Labels[servingv1.LabelGroupName],
		"annotation", key, "removed", value == nil, "reason", reasonOf(ctx))
	e.acted = true
	return nil
}

// pool carries out a pool's rollout step on the pods and slots it names.
func (e *msExecutor) pool(ctx context.Context, mode servingv1.RolloutMode, pl msPool) error {
	for _, d := range pl.step.Delete {
		for _, name := range d.Pods {
			if p := e.byPod[name]; p != nil {
				dctx := withReason(ctx, deleteReason(p.Labels[servingv1.LabelRevision], pl.strategy.TargetRevision))
				if err := e.deletePod(dctx, p); err != nil {
					return err
				}
			}
		}
	}
	for _, u := range pl.step.Update {
		if err := e.update(ctx, u); err != nil {
			return err
		}
		if err := e.moveData(ctx, u); err != nil {
			return err
		}
	}
	live := liveReplicas(pl.replicas)
	for _, c := range pl.step.Create {
		cctx := withReason(ctx, createReason(live[c.Column], pl.strategy.Replicas))
		live[c.Column]++
		if err := e.createUnit(cctx, mode, pl.role, c.Index, c.Column, c.Members, c.Revision, ""); err != nil {
			return err
		}
	}
	return nil
}

// update moves the pods an update names to its revision: in place where only
// their images and resizable resources change, else (or when the API server
// refuses the resize) deleted and created again in their slots (once their old
// pods are gone); it creates a serving group's missing members in their slots.
func (e *msExecutor) update(ctx context.Context, u rollout.Update) error {
	var inPlace []inplace.Update
	var recreate []*corev1.Pod
	for _, name := range u.Pods {
		p := e.byPod[name]
		if p == nil || p.DeletionTimestamp != nil || p.Labels[servingv1.LabelRevision] == u.To {
			continue
		}
		if up, ok := e.inPlace(p, u.To); ok {
			inPlace = append(inPlace, up)
		} else {
			recreate = append(recreate, p)
		}
	}
	ctx = withReason(ctx, reasonRecreate)
	refused, acted, err := inplace.Apply(ctx, e.r.Client, inPlace, u.To, e.now, func(p *corev1.Pod) {
		e.r.expect.Updated(e.ms.UID, p.UID, u.To, e.now)
	})
	e.acted = e.acted || acted
	if err != nil {
		return err
	}
	recreate = append(recreate, refused...)
	for _, p := range recreate {
		if _, ok := slotOf(p); !ok {
			return fmt.Errorf("pod %s: labels %s and %s: not a slot", p.Name, servingv1.LabelGroupIndex, servingv1.LabelMemberIndex)
		}
		if err := e.deletePod(ctx, p); err != nil {
			return err
		}
	}
	for _, p := range recreate {
		s, _ := slotOf(p)
		if err := e.createPod(ctx, s, u.To, p.Annotations[servingv1.AnnotationReplacementFor]); err != nil {
			return err
		}
	}
	return e.createMembers(withReason(ctx, reasonRepair), u.Index, u.Missing, u.To, "")
}

// inPlace returns the in-place update that moves p to revision rev, or false when
// p must be recreated: it lacks the gate, failed, or its revision's template
// differs from rev's in more than images and resizable resources (inplace.For).
func (e *msExecutor) inPlace(p *corev1.Pod, rev string) (inplace.Update, bool) {
	if !inplace.Eligible(p) {
		return inplace.Update{}, false
	}
	role := p.Labels[servingv1.LabelRole]
	from, err := e.template(p.Labels[servingv1.LabelRevision], role)
	if err != nil {
		return inplace.Update{}, false
	}
	to, err := e.template(rev, role)
	if err != nil {
		return inplace.Update{}, false
	}
	return inplace.For(p, from, to)
}

// liveReplicas counts a pool's replicas that are not terminating, by column
// ("" outside Group mode).
func liveReplicas(reps []rollout.Replica) map[string]int {
	live := map[string]int{}
	for _, r := range reps {
		if !r.State.Terminating {
			live[r.Column]++
		}
	}
	return live
}

// groupPods returns the pods of the serving group named name.
func (e *msExecutor) groupPods(name string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range e.byPod {
		if p.Labels[servingv1.LabelGroupName] == name {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (e *msExecutor) deletePod(ctx context.Context, p *corev1.Pod) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	uid := p.UID
	err := e.r.Client.Delete(ctx, p, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting pod %s: %w", p.Name, err)
	}
	log.FromContext(ctx).Info("deleted pod", "action", actionDelete, "pod", p.Name, "group", p.Labels[servingv1.LabelGroupName],
		"revision", p.Labels[servingv1.LabelRevision], "reason", reasonOf(ctx))
	e.acted = true
	e.r.expect.Deleted(e.ms.UID, uid, e.now)
	delete(e.byPod, p.Name)
	// The pod terminates for a while on its node: its name stays taken.
	e.deleted[p.Name] = true
	if s, ok := slotOf(p); ok {
		delete(e.used, s)
	}
	return nil
}

// template returns role's pod template at revision rev.
func (e *msExecutor) template(rev, role string) (corev1.PodTemplateSpec, error) {
	t, ok := e.templates[rev]
	if !ok {
		cr := e.h.ByName(rev)
		if cr == nil {
			return corev1.PodTemplateSpec{}, fmt.Errorf("revision %s: no such ControllerRevision", rev)
		}
		var err error
		if t, err = history.Decode(cr); err != nil {
			return corev1.PodTemplateSpec{}, err
		}
		e.templates[rev] = t
	}
	tmpl, ok := t[role]
	if !ok {
		return corev1.PodTemplateSpec{}, fmt.Errorf("revision %s: no template for role %s", rev, role)
	}
	return tmpl, nil
}
