package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
)

// ModelServingReconciler creates and rolls out the pods of ModelServings
// (serving.examples.kplan.dev/v1alpha1). Each reconcile observes the owner's pods,
// builds package rollout's input for the strategy's mode, plans one step and
// carries it out: creates, deletes, and updates. A pod whose new revision
// differs from its current one only in container images is updated in place
// (same name and UID; it carries the readiness gate
// servingv1.PodConditionImagesReady, False until its containers run the new
// images and are ready); any other revision change deletes the pod and creates
// it again under the same name. Pods are named
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
type ModelServingReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock (default time.Now).
	Now func() time.Time

	expect *expectations
}

// SetupWithManager registers the reconciler for ModelServings and the pods and
// ControllerRevisions they own.
func (r *ModelServingReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.expect = newExpectations(time.Minute)
	return ctrl.NewControllerManagedBy(mgr).
		Named("modelserving").
		WithOptions(controller.Options{MaxConcurrentReconciles: reconcileWorkers}).
		For(&servingv1.ModelServing{}).
		Owns(&corev1.Pod{}).
		Owns(&appsv1.ControllerRevision{}).
		Complete(r)
}

// conflictRetry is how soon a reconcile that lost a write race runs again.
const conflictRetry = 200 * time.Millisecond

// Reconcile observes, plans one step, executes it and writes the status.
func (r *ModelServingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	if !r.expect.satisfied(ms.UID, pods, now) {
		// The pod events still on their way trigger the next reconcile.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	released, err := r.releaseGates(ctx, cmp.Or(ms.Spec.RolloutStrategy.Mode, servingv1.RollingMode), pods, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The plan and the status read pods as their readiness gates make them.
	view := servingv1.ReadyByGates(pods)
	h, err := syncRevisions(ctx, r.Client, ms, r.Client.Scheme())
	if err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	plan, planErr := planModelServing(ms, view, h.names(), h.update.Name, now)
	res := &execResult{acted: released}
	var execErr error
	if planErr == nil {
		execErr = r.execute(ctx, ms, h, pods, plan, now, res)
	}
	live := map[string]bool{}
	for _, p := range pods {
		live[p.Labels[servingv1.LabelRevision]] = true
	}
	limit := 10
	if ms.Spec.RevisionHistoryLimit != nil {
		limit = int(*ms.Spec.RevisionHistoryLimit)
	}
	if err := truncateHistory(ctx, r.Client, h, live, limit); err != nil {
		return ctrl.Result{}, err
	}
	status := r.status(ms, h, view, plan, planErr, res, now)
	if !equality.Semantic.DeepEqual(ms.Status, status) {
		old := ms.Status
		ms.Status = status
		if err := r.Client.Status().Update(ctx, ms); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
		r.recordTransitions(ms, old, status)
	}
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
	next := availableIn(view, ms.Spec.RolloutStrategy.MinReadySeconds, now)
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
func (r *ModelServingReconciler) ownedPods(ctx context.Context, ms *servingv1.ModelServing) ([]*corev1.Pod, error) {
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
		c := podCondition(p, corev1.PodReady)
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

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

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
}

// msExecutor carries out one plan for one ModelServing.
type msExecutor struct {
	r     *ModelServingReconciler
	ms    *servingv1.ModelServing
	h     *history
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
	*execResult
}

// execute carries out every pool's step: deletes, updates (in place or by
// recreating), then creates, recording in res what it wrote and met. It
// stops at the first failed write.
func (r *ModelServingReconciler) execute(ctx context.Context, ms *servingv1.ModelServing, h *history, pods []*corev1.Pod, plan *msPlan, now time.Time, res *execResult) error {
	e := &msExecutor{r: r, ms: ms, h: h, byPod: map[string]*corev1.Pod{}, deleted: map[string]bool{}, used: map[podSlot]bool{}, now: now,
		templates: map[string]map[string]corev1.PodTemplateSpec{}, execResult: res}
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
	for _, rp := range pl.step.Repair {
		log.FromContext(ctx).Info("repairing serving group", "group", rp.Replica, "revision", rp.Revision, "missing", rp.Missing)
		if err := e.createMembers(ctx, rp.Index, rp.Missing, rp.Revision, ""); err != nil {
			return err
		}
	}
	return nil
}

// slotIn is the slot of column (<role>-<member>) in serving group g.
func (e *msExecutor) slotIn(g int, column string) (podSlot, error) {
	for _, role := range e.ms.Spec.Roles {
		for m := range role.Members() {
			if servingv1.ColumnName(role.Name, m) == column {
				return podSlot{role: role.Name, group: g, member: m}, nil
			}
		}
	}
	return podSlot{}, fmt.Errorf("column %s: no such role member", column)
}

// createMembers creates the pods of serving group g in columns at rev,
// replacing replacementFor when that is set.
func (e *msExecutor) createMembers(ctx context.Context, g int, columns []string, rev, replacementFor string) error {
	for _, c := range columns {
		s, err := e.slotIn(g, c)
		if err != nil {
			return err
		}
		if err := e.createPod(ctx, s, rev, replacementFor); err != nil {
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
		for _, p := range e.replicaPods(mode, name) {
			if err := e.deletePod(ctx, p); err != nil {
				return err
			}
		}
	}
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
	e.acted = true
	return nil
}

// pool carries out a pool's rollout step on the pods and slots it names.
func (e *msExecutor) pool(ctx context.Context, mode servingv1.RolloutMode, pl msPool) error {
	for _, d := range pl.step.Delete {
		for _, name := range d.Pods {
			if p := e.byPod[name]; p != nil {
				if err := e.deletePod(ctx, p); err != nil {
					return err
				}
			}
		}
	}
	for _, u := range pl.step.Update {
		if err := e.update(ctx, u); err != nil {
			return err
		}
	}
	for _, c := range pl.step.Create {
		if err := e.createUnit(ctx, mode, pl.role, c.Index, c.Column, c.Members, c.Revision, ""); err != nil {
			return err
		}
	}
	return nil
}

// update moves the pods an update names to its revision: in place where only
// their images change, else deleted and created again in their slots (once
// their old pods are gone); it creates a serving group's missing members in
// their slots.
func (e *msExecutor) update(ctx context.Context, u rollout.Update) error {
	var inPlace []inPlaceUpdate
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
	if err := e.updateInPlace(ctx, inPlace, u.To); err != nil {
		return err
	}
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
	return e.createMembers(ctx, u.Index, u.Missing, u.To, "")
}

// createUnit creates one replica of the mode's unit on revision, in the slot
// rollout names: a whole serving group at index with a pod in each of columns
// (Gang), the pod of column at row index (Group), or a pod of role in its
// lowest free slot (Rolling, Lockstep: a role's pods are numbered by group and
// member, which rollout's one index per pool does not name).
func (e *msExecutor) createUnit(ctx context.Context, mode servingv1.RolloutMode, role string, index int, column string, columns []string, revision, replacementFor string) error {
	switch mode {
	case servingv1.GangMode:
		return e.createMembers(ctx, index, columns, revision, replacementFor)
	case servingv1.GroupMode:
		return e.createMembers(ctx, index, []string{column}, revision, replacementFor)
	default:
		return e.createInRole(ctx, role, revision, replacementFor)
	}
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

// createInRole creates a pod of role in its lowest free slot (groups in order,
// members within a group).
func (e *msExecutor) createInRole(ctx context.Context, role, rev, replacementFor string) error {
	for _, r := range e.ms.Spec.Roles {
		if r.Name != role {
			continue
		}
		members := r.Members()
		for i := 0; ; i++ {
			s := podSlot{role: role, group: i / members, member: i % members}
			if !e.used[s] {
				return e.createPod(ctx, s, rev, replacementFor)
			}
		}
	}
	return fmt.Errorf("role %s: not in spec.roles", role)
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
	log.FromContext(ctx).Info("deleted pod", "pod", p.Name, "revision", p.Labels[servingv1.LabelRevision])
	e.acted = true
	e.r.expect.deleted(e.ms.UID, uid, e.now)
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
		cr := e.h.byName(rev)
		if cr == nil {
			return corev1.PodTemplateSpec{}, fmt.Errorf("revision %s: no such ControllerRevision", rev)
		}
		var err error
		if t, err = decodeRevision(cr); err != nil {
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

// createPod creates the pod of slot s at revision rev, replacing replacementFor
// when that is set. A name already taken (by our pod still terminating, or one
// the cache does not show yet) is left for a later reconcile; one taken by
// another owner's pod is recorded for the status (nameTaken).
func (e *msExecutor) createPod(ctx context.Context, s podSlot, rev, replacementFor string) error {
	tmpl, err := e.template(rev, s.role)
	if err != nil {
		return err
	}
	pod := newPod(e.ms, tmpl, s, rev)
	if e.byPod[pod.Name] != nil || e.deleted[pod.Name] {
		// Our pod of that name still terminates (or was deleted this step):
		// creating now would only meet AlreadyExists. Its deletion event
		// triggers the reconcile that creates it.
		e.used[s] = true
		e.exists = true
		return nil
	}
	if replacementFor != "" {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[servingv1.AnnotationReplacementFor] = replacementFor
	}
	if err := controllerutil.SetControllerReference(e.ms, pod, e.r.Client.Scheme()); err != nil {
		return err
	}
	e.used[s] = true
	if err := e.r.Client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return e.nameTaken(ctx, pod.Name)
		}
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	log.FromContext(ctx).Info("created pod", "pod", pod.Name, "revision", rev, "group", s.group, "role", s.role, "member", s.member)
	e.acted = true
	e.r.expect.created(e.ms.UID, pod.UID, e.now)
	return nil
}

// nameTaken records a create that found its name taken: by a pod of ours (still
// terminating, or the cache lags), retried later, or by a pod another owner
// controls (or none), reported in the status.
func (e *msExecutor) nameTaken(ctx context.Context, name string) error {
	var other corev1.Pod
	err := e.r.Client.Get(ctx, client.ObjectKey{Namespace: e.ms.Namespace, Name: name}, &other)
	if apierrors.IsNotFound(err) || (err == nil && metav1.IsControlledBy(&other, e.ms)) {
		e.exists = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s, whose name is taken: %w", name, err)
	}
	owner := "no controller"
	if ref := metav1.GetControllerOf(&other); ref != nil {
		owner = ref.Kind + " " + ref.Name
	}
	msg := fmt.Sprintf("pod %s exists and is controlled by %s", name, owner)
	log.FromContext(ctx).Info("pod name taken by another owner", "pod", name, "owner", owner)
	e.taken = append(e.taken, msg)
	return nil
}

// newPod builds the pod of slot s from tmpl.
func newPod(ms *servingv1.ModelServing, tmpl corev1.PodTemplateSpec, s podSlot, rev string) *corev1.Pod {
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[servingv1.LabelName] = ms.Name
	labels[servingv1.LabelGroupName] = ms.GroupName(s.group)
	labels[servingv1.LabelRole] = s.role
	labels[servingv1.LabelRevision] = rev
	labels[servingv1.LabelGroupIndex] = strconv.Itoa(s.group)
	labels[servingv1.LabelMemberIndex] = strconv.Itoa(s.member)
	labels[servingv1.LabelColumn] = servingv1.ColumnName(s.role, s.member)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   ms.Namespace,
			Name:        msPodName(ms.Name, s.role, s.group, s.member),
			Labels:      labels,
			Annotations: maps.Clone(tmpl.Annotations),
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	addImagesGate(&pod.Spec)
	return pod
}

// status computes ms's status from its pods and this reconcile's plan.
func (r *ModelServingReconciler) status(ms *servingv1.ModelServing, h *history, pods []*corev1.Pod, plan *msPlan, planErr error, res *execResult, now time.Time) servingv1.ModelServingStatus {
	minReady := time.Duration(ms.Spec.RolloutStrategy.MinReadySeconds) * time.Second
	st := servingv1.ModelServingStatus{
		ObservedGeneration: ms.Generation,
		UpdateRevision:     h.update.Name,
		Conditions:         slices.Clone(ms.Status.Conditions),
	}
	if h.collisionCount != 0 {
		cc := h.collisionCount
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
		if rev == h.update.Name {
			rs.Updated++
			g.updated++
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			g.failed = true
			failed = append(failed, p.Name)
		}
		if c := podCondition(p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
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
	st.CurrentRevision = h.update.Name
	for i := len(h.revisions) - 1; i >= 0; i-- {
		if name := h.revisions[i].Name; name != h.update.Name && revCount[name] > 0 {
			st.CurrentRevision = name
			break
		}
	}
	if st.CurrentRevision == h.update.Name && ms.Status.CurrentRevision != "" && plan != nil && !plan.complete {
		if h.byName(ms.Status.CurrentRevision) != nil {
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
		if rev != h.update.Name {
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
func (r *ModelServingReconciler) recordTransitions(ms *servingv1.ModelServing, old, now servingv1.ModelServingStatus) {
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
