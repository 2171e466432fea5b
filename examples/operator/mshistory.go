package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// The small part of Kubernetes' controller history (pkg/controller/history) the
// ModelServing controller needs: a revision is a ControllerRevision holding the
// roles' pod templates, named <owner>-<hash> where the hash covers the data and
// the collision count; revisions are ordered by their Revision number, and rolling
// back to an old template renumbers its revision as the newest instead of
// creating a copy.

// revisionData is what a ModelServing revision stores: each role's pod template.
type revisionData struct {
	Roles []revisionRole `json:"roles"`
}

type revisionRole struct {
	Name     string                 `json:"name"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// newRevisionData returns the revision data of ms's current spec.
func newRevisionData(ms *servingv1.ModelServing) ([]byte, error) {
	d := revisionData{}
	for _, r := range ms.Spec.Roles {
		d.Roles = append(d.Roles, revisionRole{Name: r.Name, Template: r.Template})
	}
	return json.Marshal(d)
}

// hashRevision is history.HashControllerRevision: FNV-32 of the data and the
// collision count, encoded as a safe string.
func hashRevision(data []byte, collisionCount *int32) string {
	hf := fnv.New32()
	hf.Write(data)
	if collisionCount != nil {
		hf.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// revisionName is history.ControllerRevisionName.
func revisionName(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}

// sortRevisions orders revisions oldest first (by Revision, then name).
func sortRevisions(revs []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revs, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			if a.Revision < b.Revision {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}

// decodeRevision reads a revision's pod templates by role name.
func decodeRevision(cr *appsv1.ControllerRevision) (map[string]corev1.PodTemplateSpec, error) {
	var d revisionData
	if err := json.Unmarshal(cr.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("ControllerRevision %s: data: %w", cr.Name, err)
	}
	out := make(map[string]corev1.PodTemplateSpec, len(d.Roles))
	for _, r := range d.Roles {
		out[r.Name] = r.Template
	}
	return out, nil
}

// history is a ModelServing's revisions as the controller found or made them.
type history struct {
	// revisions are oldest first; update is one of them.
	revisions []*appsv1.ControllerRevision
	update    *appsv1.ControllerRevision
	// collisionCount is the count to store in the status.
	collisionCount int32
}

// names returns the revision names oldest first: rollout's Strategy.History.
func (h *history) names() []string {
	out := make([]string, len(h.revisions))
	for i, r := range h.revisions {
		out[i] = r.Name
	}
	return out
}

// byName finds a revision.
func (h *history) byName(name string) *appsv1.ControllerRevision {
	for _, r := range h.revisions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// syncRevisions finds or creates the update revision of ms among its
// ControllerRevisions, as StatefulSet does: an existing revision with the same
// data that is the newest is reused; an older one is renumbered newest (a
// rollback); otherwise a new one is created, a name taken by other data bumping
// the collision count.
func syncRevisions(ctx context.Context, c client.Client, ms *servingv1.ModelServing, scheme *runtime.Scheme) (*history, error) {
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		return nil, err
	}
	h := &history{}
	if ms.Status.CollisionCount != nil {
		h.collisionCount = *ms.Status.CollisionCount
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], ms) {
			h.revisions = append(h.revisions, &list.Items[i])
		}
	}
	sortRevisions(h.revisions)
	data, err := newRevisionData(ms)
	if err != nil {
		return nil, err
	}
	next := int64(1)
	if n := len(h.revisions); n > 0 {
		next = h.revisions[n-1].Revision + 1
	}
	var equal *appsv1.ControllerRevision
	for _, r := range h.revisions {
		if bytes.Equal(r.Data.Raw, data) {
			equal = r // the newest equal one
		}
	}
	switch {
	case equal != nil && equal == h.revisions[len(h.revisions)-1]:
		h.update = equal
	case equal != nil:
		cp := equal.DeepCopy()
		cp.Revision = next
		if err := c.Update(ctx, cp); err != nil {
			return nil, fmt.Errorf("renumbering ControllerRevision %s: %w", equal.Name, err)
		}
		*equal = *cp
		sortRevisions(h.revisions)
		h.update = equal
	default:
		for {
			cc := h.collisionCount
			cr := &appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ms.Namespace,
					Name:      revisionName(ms.Name, hashRevision(data, &cc)),
					Labels:    map[string]string{servingv1.LabelName: ms.Name},
				},
				Data:     runtime.RawExtension{Raw: data},
				Revision: next,
			}
			if err := controllerutil.SetControllerReference(ms, cr, scheme); err != nil {
				return nil, err
			}
			err := c.Create(ctx, cr)
			if err == nil {
				h.revisions = append(h.revisions, cr)
				h.update = cr
				break
			}
			if !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating ControllerRevision %s: %w", cr.Name, err)
			}
			var existing appsv1.ControllerRevision
			if err := c.Get(ctx, client.ObjectKeyFromObject(cr), &existing); err != nil {
				return nil, err
			}
			if metav1.IsControlledBy(&existing, ms) && bytes.Equal(existing.Data.Raw, data) {
				// Made by an earlier reconcile the cache has not shown yet.
				h.revisions = append(h.revisions, &existing)
				sortRevisions(h.revisions)
				h.update = &existing
				break
			}
			h.collisionCount++
		}
	}
	return h, nil
}

// truncateHistory deletes the oldest revisions no pod runs beyond limit, never the
// update revision.
func truncateHistory(ctx context.Context, c client.Client, h *history, live map[string]bool, limit int) error {
	var old []*appsv1.ControllerRevision
	for _, r := range h.revisions {
		if r != h.update && !live[r.Name] {
			old = append(old, r)
		}
	}
	if len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		if err := c.Delete(ctx, r, client.Preconditions{UID: &r.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s: %w", r.Name, err)
		}
		h.revisions = slices.DeleteFunc(h.revisions, func(x *appsv1.ControllerRevision) bool { return x == r })
	}
	return nil
}
