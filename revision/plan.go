package revision

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan"
)

// Input is what Plan reads for one reconcile. Plan never changes it.
type Input struct {
	// Set is the ConfigMapSet with its current status.
	Set *ConfigMapSet
	// Hub is the hub ConfigMap as read, or nil when it does not exist.
	Hub *corev1.ConfigMap
	// Pods are the pods the selector matches, in any order.
	Pods []*corev1.Pod
	// Now is the reconcile time, written into timestamps. Required: the zero time and
	// times outside 1970 to 9999 are errors.
	Now time.Time
}

// Result is what one reconcile should write, and where the rollout stands.
type Result struct {
	// Hub is the hub ConfigMap after the plan and what to do with it: create it,
	// update it (it carries the resourceVersion of Input.Hub), or nothing, when
	// Input.Hub already holds it (the ConfigMap is then a copy of Input.Hub).
	Hub DesiredConfigMap
	// Revisions are the hub's revision names after the plan, oldest first.
	Revisions []string
	// Pods are the pod patches, ordered by namespace and name. Only pods that change
	// are listed; each patch is an update of the pod's metadata.
	Pods []PodPatch
	// Status is the set's new status. Its conditions are Input.Set's, unchanged:
	// a reconciler sets its own from Complete and Waiting.
	Status ConfigMapSetStatus
	// Events describe what changed, in a fixed order. Each names the set as its
	// Object.
	Events []kplan.Event
	// Cold are the non-terminating pods Plan leaves alone, ordered by namespace and
	// name: pods without the set's reload sidecar ([ReasonNotInjected]) and pods
	// created before status.lastContainersTimestamp
	// ([ReasonCreatedBeforeContainersChange]). Plan never patches them;
	// re-creating them lets the webhook inject them. Nil when every pod is warm.
	Cold []PodReason
	// Waiting lists every non-terminating pod that is not current once the plan is
	// carried out, ordered by namespace and name, with why it waits. A pod is
	// current when it runs the update revision, confirmed and ready, and a raised
	// partition does not send it back. The reasons: [ReasonRevisionNotConfirmed],
	// [ReasonPodNotReady], [ReasonMaxUnavailableReached] (as many pods as the
	// partition still needs moved, first in update or rollback order),
	// [ReasonPartitioned], or a cold pod's reason when the rollout needs that pod.
	// Nil when every pod is current.
	Waiting []PodReason
	// Complete is true when the rollout has gone as far as the partition allows:
	// every pod that is not current waits with [ReasonPartitioned] only (with
	// partition 0, every pod runs the update revision, confirmed and ready). No pod
	// is asked for another revision until the spec or the pods change; the plan may
	// still write the hub (a trim), ask pods for the revision they already run
	// (nothing restarts: the partition or the data changed before they confirmed
	// the revision they wanted) and remove the update-order label from pods that
	// just confirmed their revision.
	Complete bool
}

// DesiredConfigMap is a ConfigMap a plan wants, with what to do with it.
type DesiredConfigMap struct {
	// Action is kplan.ActionCreate, kplan.ActionUpdate or kplan.ActionNone.
	Action kplan.Action
	// ConfigMap is the ConfigMap as it should be; never nil.
	ConfigMap *corev1.ConfigMap
}

// podInfo is Plan's view of one pod.
type podInfo struct {
	pod       *corev1.Pod
	state     revState
	ready     bool
	cold      coldKind // why Plan leaves the pod alone; coldNone when it does not
	injected  bool     // carries the set's reload sidecar
	target    string   // wanted revision after the plan
	refused   string   // the revision the maxUnavailable budget kept the pod from; "" when none
	changed   bool
	labelNow  bool
	labelWant bool
}

// revState is the part of PodState Plan uses (the timestamps are only checked).
type revState struct {
	UpdateRevision, CurrentRevision string
}

// Plan plans one reconcile of a ConfigMapSet, as the package doc describes. Terminating
// pods (with a deletion timestamp) are ignored; cold pods (created before
// status.lastContainersTimestamp) and pods without the set's reload sidecar are
// counted but never changed, and listed in [Result.Cold]. Bad input (an invalid spec, a
// corrupt hub, a hub ConfigMap of another name or namespace, an unparsable pod
// annotation, a pod listed twice, a zero Now) is an error naming the object and field;
// a hub or pod annotations that would exceed their size limits are errors.
func Plan(in Input) (Result, error) {
	set := in.Set
	if set == nil {
		return Result{}, fmt.Errorf("revision.Plan: input has no ConfigMapSet")
	}
	who := "configmapset " + set.Namespace + "/" + set.Name
	if err := checkNow(in.Now); err != nil {
		return Result{}, fmt.Errorf("revision.Plan: %s: %w", who, err)
	}
	if errs := Validate(set); len(errs) > 0 {
		return Result{}, fmt.Errorf("%s: %w", who, errs.ToAggregate())
	}
	keys, err := KeysFor(set.Name)
	if err != nil {
		return Result{}, err
	}
	if h := in.Hub; h != nil && (h.Namespace != set.Namespace || h.Name != HubName(set.Name)) {
		return Result{}, fmt.Errorf("%s: configmap %s/%s is not its hub (%s/%s)", who, h.Namespace, h.Name, set.Namespace, HubName(set.Name))
	}
	hub, err := DecodeHub(in.Hub)
	if err != nil {
		return Result{}, err
	}
	var cc int32
	if set.Status.CollisionCount != nil {
		cc = *set.Status.CollisionCount
	}
	add, err := hub.Add(set.Spec.Data, cc)
	if err != nil {
		return Result{}, fmt.Errorf("%s: spec.data: %w", who, err)
	}
	hub, update := add.Hub, add.Name
	var events []kplan.Event
	ref := setRef(set)
	event := func(typ string, reason kplan.Reason, msg string) {
		events = append(events, kplan.Event{Type: typ, Reason: reason, Object: ref, Message: msg})
	}
	if add.CollisionCount != cc {
		event(corev1.EventTypeWarning, ReasonHashCollision, fmt.Sprintf("revision hash collided; collision count is now %d", add.CollisionCount))
	}
	if add.Created {
		event(corev1.EventTypeNormal, ReasonRevisionCreated, "revision "+update+" created")
	} else if add.Moved {
		event(corev1.EventTypeNormal, ReasonRevisionRestored, "data equals old revision "+update+"; moved to newest")
	}

	status := ConfigMapSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    set.Status.CurrentRevision,
		UpdateRevision:     update,
		Conditions:         copyConditions(set.Status.Conditions),
	}
	if add.CollisionCount > 0 || set.Status.CollisionCount != nil {
		c := add.CollisionCount
		status.CollisionCount = &c
	}
	lastTS, containersHash, changed := coldStart(set, in.Now)
	status.LastContainersTimestamp, status.LastContainersHash = lastTS, containersHash
	if changed {
		event(corev1.EventTypeNormal, ReasonContainersChanged, "spec.containers changed; only pods created from now on get the new mounts")
	}

	sidecar := ReloadSidecarName(set.Name)
	pods, err := readPods(in.Pods, keys, sidecar, lastTS)
	if err != nil {
		return Result{}, err
	}
	hubIndex := make(map[string]int, len(hub.Revisions))
	for i, r := range hub.Revisions {
		hubIndex[r.Name] = i
	}
	sel, err := selectPods(set, pods, update, hubIndex)
	if err != nil {
		return Result{}, fmt.Errorf("%s: spec.updateStrategy.%w", who, err)
	}
	if sel.updated > 0 {
		event(corev1.EventTypeNormal, ReasonPodsUpdated, fmt.Sprintf("%d pods set to revision %s", sel.updated, update))
	}
	if sel.rolledBack > 0 {
		event(corev1.EventTypeNormal, ReasonPodsRolledBack, fmt.Sprintf("%d pods set back to revision %s", sel.rolledBack, status.CurrentRevision))
	}

	patches, err := buildPatches(pods, keys, set.Spec.InjectUpdateOrder, in.Now)
	if err != nil {
		return Result{}, err
	}

	// Trim the hub: live revisions are current, update and every pod's: the wanted
	// revision before and after this plan (the pod patch may land after the hub write,
	// or fail its precondition, so the pod can go on wanting its old revision) and the
	// current one.
	live := map[string]bool{update: true, status.CurrentRevision: true}
	for i := range pods {
		live[pods[i].target] = true
		live[pods[i].state.UpdateRevision] = true
		live[pods[i].state.CurrentRevision] = true
	}
	limit := int(DefaultRevisionHistoryLimit)
	if l := set.Spec.RevisionHistoryLimit; l != nil {
		limit = int(*l)
	}
	hub, dropped := hub.Trim(limit, func(n string) bool { return live[n] })
	if len(dropped) > 0 {
		event(corev1.EventTypeNormal, ReasonRevisionsTrimmed, fmt.Sprintf("%d old revisions removed from the hub", len(dropped)))
	}

	assigned := countStatus(&status, pods, update)
	if status.UpdatedReadyPods == status.MatchedPods && status.CurrentRevision != update {
		status.CurrentRevision = update
		event(corev1.EventTypeNormal, ReasonRolloutComplete, "every pod runs revision "+update)
	}

	out := Result{Revisions: hub.names(), Pods: patches, Status: status, Events: events, Cold: coldPods(pods, sidecar, lastTS)}
	out.Waiting, out.Complete = waiting(pods, update, sel, assigned, set, sidecar, lastTS)
	if out.Hub, err = desiredHub(hub, set, in.Hub); err != nil {
		return Result{}, err
	}
	return out, nil
}

// desiredHub returns the hub's ConfigMap and what to do with it, given the one read
// (nil when there is none).
func desiredHub(hub Hub, set *ConfigMapSet, read *corev1.ConfigMap) (DesiredConfigMap, error) {
	enc, err := hub.Encode()
	if err != nil {
		return DesiredConfigMap{}, err
	}
	if read != nil && read.Data[HubDataKey] == enc && len(read.Data) == 1 && len(read.BinaryData) == 0 {
		return DesiredConfigMap{Action: kplan.ActionNone, ConfigMap: read.DeepCopy()}, nil
	}
	cm, err := hub.HubConfigMap(set.Namespace, set.Name, read)
	if err != nil {
		return DesiredConfigMap{}, err
	}
	if read == nil {
		return DesiredConfigMap{Action: kplan.ActionCreate, ConfigMap: cm}, nil
	}
	return DesiredConfigMap{Action: kplan.ActionUpdate, ConfigMap: cm}, nil
}

// setRef is the reference events name the set by: its kind and API version as its
// TypeMeta gives them (kind ConfigMapSet when empty).
func setRef(set *ConfigMapSet) corev1.ObjectReference {
	kind := set.Kind
	if kind == "" {
		kind = "ConfigMapSet"
	}
	return corev1.ObjectReference{Kind: kind, APIVersion: set.APIVersion, Namespace: set.Namespace, Name: set.Name, UID: set.UID}
}

// copyConditions returns a deep copy of conds (nil for none).
func copyConditions(conds []metav1.Condition) []metav1.Condition {
	if conds == nil {
		return nil
	}
	out := make([]metav1.Condition, len(conds))
	for i := range conds {
		conds[i].DeepCopyInto(&out[i])
	}
	return out
}

// readPods reads every non-terminating pod's state, ordered by namespace and name.
// The pointers are sorted before the states are read: swapping pointers is cheaper
// than swapping podInfo values.
func readPods(in []*corev1.Pod, keys Keys, sidecar string, lastTS *metav1.Time) ([]podInfo, error) {
	sorted := make([]*corev1.Pod, 0, len(in))
	for _, p := range in {
		if p != nil && p.DeletionTimestamp == nil {
			sorted = append(sorted, p)
		}
	}
	slices.SortFunc(sorted, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	pods := make([]podInfo, len(sorted))
	for i, p := range sorted {
		if i > 0 && p.Name == sorted[i-1].Name && p.Namespace == sorted[i-1].Namespace {
			return nil, fmt.Errorf("pod %s/%s: listed twice", p.Namespace, p.Name)
		}
		st, err := keys.Read(p)
		if err != nil {
			return nil, err
		}
		_, label := p.Labels[keys.UpdateOrder]
		cold := coldOf(p, sidecar, lastTS)
		pods[i] = podInfo{
			pod:      p,
			state:    revState{UpdateRevision: st.UpdateRevision, CurrentRevision: st.CurrentRevision},
			ready:    podReady(p),
			cold:     cold,
			injected: cold != coldNotInjected,
			target:   st.UpdateRevision,
			labelNow: label,
		}
	}
	return pods, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// buildPatches returns the patches for pods whose target or update-order label changed.
func buildPatches(pods []podInfo, keys Keys, injectOrder bool, now time.Time) ([]PodPatch, error) {
	n := 0
	for i := range pods {
		p := &pods[i]
		if p.cold != coldNone {
			continue
		}
		p.labelWant = injectOrder && p.target != "" && p.target != p.state.CurrentRevision
		if p.changed || p.labelWant != p.labelNow {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]PodPatch, 0, n)
	ts := FormatTimestamp(now)
	for i := range pods {
		p := &pods[i]
		if p.cold != coldNone || (!p.changed && p.labelWant == p.labelNow) {
			continue
		}
		pp := PodPatch{Namespace: p.pod.Namespace, Name: p.pod.Name, UID: p.pod.UID}
		if p.changed {
			target, stamp := p.target, ts
			pp.Annotations = map[string]*string{keys.UpdateRevision: &target, keys.UpdateRevisionTimestamp: &stamp}
			if err := checkAnnotationSize(p.pod, [2]string{keys.UpdateRevision, keys.UpdateRevisionTimestamp}, [2]string{p.target, ts}); err != nil {
				return nil, err
			}
		}
		if p.labelWant != p.labelNow {
			var v *string
			if p.labelWant {
				one := UpdateOrderValue
				v = &one
			}
			pp.Labels = map[string]*string{keys.UpdateOrder: v}
		}
		out = append(out, pp)
	}
	return out, nil
}

// checkAnnotationSize fails when setting the two annotations keys to vals would take
// the pod's annotations over the API server's limit. A change that does not grow them
// cannot take a pod the API server accepted over it, so only growing changes sum the
// pod's annotations.
func checkAnnotationSize(pod *corev1.Pod, keys, vals [2]string) error {
	growth := 0
	for i, k := range keys {
		old, had := pod.Annotations[k]
		growth += len(vals[i]) - len(old)
		if !had {
			growth += len(k)
		}
	}
	if growth <= 0 {
		return nil
	}
	size := 0
	for k, v := range pod.Annotations {
		size += len(k) + len(v)
	}
	if size += growth; size > apivalidation.TotalAnnotationSizeLimitB {
		return fmt.Errorf("pod %s/%s: metadata.annotations: would hold %d bytes, more than the limit of %d", pod.Namespace, pod.Name, size, apivalidation.TotalAnnotationSizeLimitB)
	}
	return nil
}

// countStatus fills the pod counts from the pods' states after the plan, and returns
// how many pods the plan asks for the update revision.
func countStatus(st *ConfigMapSetStatus, pods []podInfo, update string) (assigned int) {
	for i := range pods {
		p := &pods[i]
		st.MatchedPods++
		if p.target == update {
			assigned++
		}
		updated := p.target == update && p.state.CurrentRevision == update
		if updated {
			st.UpdatedPods++
		}
		if p.ready {
			st.ReadyPods++
			if updated {
				st.UpdatedReadyPods++
			}
		}
	}
	return assigned
}
