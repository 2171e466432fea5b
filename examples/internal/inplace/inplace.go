package inplace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
)

// inPlaceUpdateRecord is the value of servingv1.AnnotationInPlaceUpdate.
type inPlaceUpdateRecord struct {
	Revision string            `json:"revision"`
	ImageIDs map[string]string `json:"imageIDs"`
	// Resized names the containers whose resources the update changed.
	Resized []string `json:"resized,omitempty"`
}

// HasGate reports whether pod lists the readiness gate
// servingv1.PodConditionImagesReady (pods created before the gate existed cannot get
// it: readiness gates are immutable).
func HasGate(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool {
		return g.ConditionType == servingv1.PodConditionImagesReady
	})
}

// AddGate adds the readiness gate servingv1.PodConditionImagesReady to a pod spec.
func AddGate(spec *corev1.PodSpec) {
	for _, g := range spec.ReadinessGates {
		if g.ConditionType == servingv1.PodConditionImagesReady {
			return
		}
	}
	spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: servingv1.PodConditionImagesReady})
}

// inPlaceRecord reads a pod's in-place update record; nil without a valid one.
func inPlaceRecord(p *corev1.Pod) *inPlaceUpdateRecord {
	v, ok := p.Annotations[servingv1.AnnotationInPlaceUpdate]
	if !ok {
		return nil
	}
	var rec inPlaceUpdateRecord
	if json.Unmarshal([]byte(v), &rec) != nil {
		return nil
	}
	return &rec
}

// imagesUpdated reports whether every container of an in-place update runs the
// new image and is ready.
func imagesUpdated(p *corev1.Pod, rec *inPlaceUpdateRecord) bool {
	for _, c := range p.Spec.Containers {
		before, changed := rec.ImageIDs[c.Name]
		if !changed {
			continue
		}
		i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name })
		if i < 0 {
			return false
		}
		s := p.Status.ContainerStatuses[i]
		if !s.Ready || (s.Image != c.Image && (s.ImageID == "" || s.ImageID == before)) {
			return false
		}
	}
	return true
}

// ReleaseGates sets the readiness gate True on every pod that waits for nothing:
// a new pod (no condition yet), or one whose in-place update is done (or never
// happened: the images write failed after the gate was set False). In Gang mode
// a serving group's gates open together, and only once every member that is not
// terminating runs one revision and has finished its in-place update: a gang
// never serves while its members run different images, whatever write the
// previous process died after (gates set False, some members patched, the
// rest not). It returns whether it wrote anything.
func ReleaseGates(ctx context.Context, c client.Client, mode servingv1.RolloutMode, pods []*corev1.Pod, now time.Time) (bool, error) {
	var held map[string]bool // Gang mode: serving groups whose gates stay as they are
	if mode == servingv1.GangMode {
		held = heldGroups(pods)
	}
	wrote := false
	for _, p := range pods {
		if !Eligible(p) {
			continue
		}
		if g := kube.PodCondition(p, servingv1.PodConditionImagesReady); g != nil && g.Status == corev1.ConditionTrue {
			continue
		}
		if updating(p) || held[p.Labels[servingv1.LabelGroupName]] {
			continue
		}
		if err := setGate(ctx, c, p, corev1.ConditionTrue, "ImagesReady", "", now); err != nil {
			return wrote, err
		}
		log.FromContext(ctx).Info("opened readiness gate", "pod", p.Name, "revision", p.Labels[servingv1.LabelRevision])
		wrote = true
	}
	return wrote, nil
}

// updating reports whether a pod's in-place update to its current revision is
// still under way (its changed containers do not run the new images yet, or
// the node has not applied its resize).
func updating(p *corev1.Pod) bool {
	rec := inPlaceRecord(p)
	return rec != nil && rec.Revision == p.Labels[servingv1.LabelRevision] && !(imagesUpdated(p, rec) && resized(p, rec))
}

// heldGroups returns the serving groups whose gates must not open: some members
// (not terminating) run different revisions, or one is still being updated in
// place.
func heldGroups(pods []*corev1.Pod) map[string]bool {
	rev := map[string]string{}
	held := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		g := p.Labels[servingv1.LabelGroupName]
		r := p.Labels[servingv1.LabelRevision]
		if prev, ok := rev[g]; ok && prev != r {
			held[g] = true
		}
		rev[g] = r
		if updating(p) {
			held[g] = true
		}
	}
	return held
}

// setGate sets a pod's readiness gate condition with a strategic merge patch of
// the status (conditions merge by type, so the kubelet's are kept).
func setGate(ctx context.Context, c client.Client, p *corev1.Pod, status corev1.ConditionStatus, reason, msg string, now time.Time) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status": map[string]any{"conditions": []map[string]any{{
			"type": servingv1.PodConditionImagesReady, "status": status, "reason": reason, "message": msg,
			"lastTransitionTime": now.UTC().Format(time.RFC3339),
		}}},
	})
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting pod %s condition %s: %w", p.Name, servingv1.PodConditionImagesReady, err)
	}
	return nil
}

// Update is one pod to move to another revision in place.
type Update struct {
	Pod *corev1.Pod
	// Images are the new images by container name.
	Images map[string]string
	// Resources are the new resources by container name, written through the
	// pod's resize subresource.
	Resources map[string]corev1.ResourceRequirements
}

// For returns the in-place update that moves p from its revision's template from to
// the template to, or false when p must be recreated: it lacks the gate, failed, or
// the templates differ in more than images and the cpu and memory requests and
// limits the resize subresource can change (see resize.go).
func For(p *corev1.Pod, from, to corev1.PodTemplateSpec) (Update, bool) {
	if !Eligible(p) {
		return Update{}, false
	}
	ch, ok := inPlaceChanges(from, to)
	if !ok {
		return Update{}, false
	}
	for _, name := range slices.Concat(slices.Collect(maps.Keys(ch.images)), slices.Collect(maps.Keys(ch.resources))) {
		if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
			return Update{}, false
		}
	}
	return Update{Pod: p, Images: ch.images, Resources: ch.resources}, true
}

// Eligible reports whether p may be updated in place at all: it has the gate, is not
// terminating and has not failed or succeeded.
func Eligible(p *corev1.Pod) bool {
	return HasGate(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded
}

// Apply moves pods to revision rev in place: first every pod's gate is set False
// (a gang's members all stop serving before any runs the new revision), then each
// pod is resized (when its resources change) and its images, revision label and
// record are patched, and updated is called with each pod patched. It returns
// the pods whose resize the API server refused, untouched but for their gates
// (they must be recreated), and whether it wrote anything, also when it fails.
func Apply(ctx context.Context, c client.Client, ups []Update, rev string, now time.Time, updated func(*corev1.Pod)) (refused []*corev1.Pod, acted bool, err error) {
	for _, u := range ups {
		if g := kube.PodCondition(u.Pod, servingv1.PodConditionImagesReady); len(u.Images) == 0 && len(u.Resources) == 0 || g != nil && g.Status == corev1.ConditionFalse {
			continue // nothing restarts or resizes, or the gate is False already
		}
		if err := setGate(ctx, c, u.Pod, corev1.ConditionFalse, "UpdatingInPlace", "moving to revision "+rev, now); err != nil {
			return nil, acted, err
		}
		acted = true
	}
	for _, u := range ups {
		p := u.Pod
		if len(u.Resources) > 0 {
			// The resize goes first: a process that dies before the patch below
			// leaves the pod on its old revision, resized or not, and the next
			// one moves it again; a revision label naming resources the pod
			// was never resized to would open the gate on them.
			wrote, ok, err := resize(ctx, c, p, u.Resources)
			acted = acted || wrote
			if err != nil {
				return nil, acted, err
			}
			if !ok {
				refused = append(refused, p)
				continue
			}
		}
		rec := inPlaceUpdateRecord{Revision: rev, ImageIDs: map[string]string{}, Resized: slices.Sorted(maps.Keys(u.Resources))}
		var containers []map[string]string
		for _, name := range slices.Sorted(maps.Keys(u.Images)) {
			containers = append(containers, map[string]string{"name": name, "image": u.Images[name]})
			rec.ImageIDs[name] = ""
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == name {
					rec.ImageIDs[name] = s.ImageID
				}
			}
		}
		raw, err := json.Marshal(rec)
		if err != nil {
			return nil, acted, err
		}
		body := map[string]any{"metadata": map[string]any{
			"uid":         p.UID,
			"labels":      map[string]string{servingv1.LabelRevision: rev},
			"annotations": map[string]string{servingv1.AnnotationInPlaceUpdate: string(raw)},
		}}
		if len(containers) > 0 {
			body["spec"] = map[string]any{"containers": containers}
		}
		patch, err := json.Marshal(body)
		if err != nil {
			return nil, acted, err
		}
		if err := c.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, acted, fmt.Errorf("updating pod %s in place: %w", p.Name, err)
		}
		log.FromContext(ctx).Info("updated pod in place", "pod", p.Name, "from", p.Labels[servingv1.LabelRevision], "to", rev, "images", u.Images, "resized", rec.Resized)
		acted = true
		updated(p)
	}
	return refused, acted, nil
}
