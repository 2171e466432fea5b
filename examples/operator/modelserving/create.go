package modelserving

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// Creating pods in the slots a plan names.

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
		log.FromContext(ctx).V(1).Info("create waits for the old pod to go", "pod", pod.Name, "revision", rev, "reason", reasonOf(ctx), "waiting", "PodTerminating")
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
	log.FromContext(ctx).Info("created pod", "action", actionCreate, "pod", pod.Name, "group", e.ms.GroupName(s.group),
		"revision", rev, "reason", reasonOf(ctx), "role", s.role, "member", s.member)
	e.acted = true
	e.r.expect.Created(e.ms.UID, pod.UID, e.now)
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
	log.FromContext(ctx).Info("pod name taken by another owner", "action", actionCreate, "pod", name, "owner", owner, "reason", reasonNameTaken)
	e.taken = append(e.taken, msg)
	return nil
}
