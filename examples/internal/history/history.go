package history

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

// Decode reads a revision's pod templates by role name.
func Decode(cr *appsv1.ControllerRevision) (map[string]corev1.PodTemplateSpec, error) {
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

// History is a ModelServing's revisions as the controller found or made them.
type History struct {
	// Revisions are oldest first; Update is one of them.
	Revisions []*appsv1.ControllerRevision
	Update    *appsv1.ControllerRevision
	// CollisionCount is the count to store in the status.
	CollisionCount int32
}

// Names returns the revision names oldest first: rollout's Strategy.History.
func (h *History) Names() []string {
	out := make([]string, len(h.Revisions))
	for i, r := range h.Revisions {
		out[i] = r.Name
	}
	return out
}

// ByName finds a revision; nil when there is none of that name.
func (h *History) ByName(name string) *appsv1.ControllerRevision {
	for _, r := range h.Revisions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Sync finds or creates the update revision of ms among its
// ControllerRevisions, as StatefulSet does: an existing revision with the same
// data that is the newest is reused; an older one is renumbered newest (a
// rollback); otherwise a new one is created, a name taken by other data bumping
// the collision count.
func Sync(ctx context.Context, c client.Client, ms *servingv1.ModelServing, scheme *runtime.Scheme) (*History, error) {
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		return nil, err
	}
	h := &History{}
	if ms.Status.CollisionCount != nil {
		h.CollisionCount = *ms.Status.CollisionCount
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], ms) {
			h.Revisions = append(h.Revisions, &list.Items[i])
		}
	}
	sortRevisions(h.Revisions)
	data, err := newRevisionData(ms)
	if err != nil {
		return nil, err
	}
	next := int64(1)
	if n := len(h.Revisions); n > 0 {
		next = h.Revisions[n-1].Revision + 1
	}
	var equal *appsv1.ControllerRevision
	for _, r := range h.Revisions {
		if bytes.Equal(r.Data.Raw, data) {
			equal = r // the newest equal one
		}
	}
	switch {
	case equal != nil && equal == h.Revisions[len(h.Revisions)-1]:
		h.Update = equal
	case equal != nil:
		cp := equal.DeepCopy()
		cp.Revision = next
		if err := c.Update(ctx, cp); err != nil {
			return nil, fmt.Errorf("renumbering ControllerRevision %s: %w", equal.Name, err)
		}
		*equal = *cp
		sortRevisions(h.Revisions)
		h.Update = equal
	default:
		for {
			cc := h.CollisionCount
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
				h.Revisions = append(h.Revisions, cr)
				h.Update = cr
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
				h.Revisions = append(h.Revisions, &existing)
				sortRevisions(h.Revisions)
				h.Update = &existing
				break
			}
			h.CollisionCount++
		}
	}
	return h, nil
}

// Truncate deletes the oldest revisions no pod runs beyond limit, never the
// update revision; live holds the revisions pods run.
func Truncate(ctx context.Context, c client.Client, h *History, live map[string]bool, limit int) error {
	var old []*appsv1.ControllerRevision
	for _, r := range h.Revisions {
		if r != h.Update && !live[r.Name] {
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
		h.Revisions = slices.DeleteFunc(h.Revisions, func(x *appsv1.ControllerRevision) bool { return x == r })
	}
	return nil
}
