package ranktable

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/kplan-dev/kplan"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotations and labels kplan writes on ranktable ConfigMaps.
const (
	// AnnotationContentHash is a hash of the table bytes ("" when empty).
	AnnotationContentHash = "kplan.dev/ranktable-content-hash"
	// AnnotationPodsHash is a hash of the sorted pod UIDs in the table.
	AnnotationPodsHash = "kplan.dev/ranktable-pods-hash"
	// LabelComponent marks ranktable ConfigMaps: app.kubernetes.io/component=ranktable.
	LabelComponent = "app.kubernetes.io/component"
	componentValue = "ranktable"
)

// defaultRequeueAfter is the default of Input.RequeueAfter.
const defaultRequeueAfter = 5 * time.Second

// Reasons of events, group statuses and unmatched pods. Each is valid as is as a
// metav1.Condition's Reason and as an event's reason; the human sentence is in the
// Message beside it.
const (
	// ReasonConfigMapCreated: a group's ranktable ConfigMap is created (Normal event,
	// on the ConfigMap).
	ReasonConfigMapCreated kplan.Reason = "RanktableConfigMapCreated"
	// ReasonConfigMapDeleted: a ranktable ConfigMap of the owner belongs to no group
	// the plan knows and is deleted (Normal event, on the ConfigMap).
	ReasonConfigMapDeleted kplan.Reason = "RanktableConfigMapDeleted"
	// ReasonGenerated: a group's table is written (Normal event, on the ConfigMap),
	// and the reason of a Completed group with pods.
	ReasonGenerated kplan.Reason = "RanktableGenerated"
	// ReasonGenerationFailed: a group failed (Warning event, on the owner); the
	// group's own Reason says why.
	ReasonGenerationFailed kplan.Reason = "RanktableGenerationFailed"
	// ReasonAnnotationMissing: a pod of a group has no device annotation yet (Normal
	// event, on the pod).
	ReasonAnnotationMissing kplan.Reason = "PodRanktableAnnotationMissing"

	// ReasonScaledToZero: a Completed group that expects no pods; its file is empty.
	ReasonScaledToZero kplan.Reason = "ScaledToZero"
	// ReasonWaitingForPods: a Waiting group has fewer pods than it expects.
	ReasonWaitingForPods kplan.Reason = "WaitingForPods"
	// ReasonWaitingForAnnotations: a Waiting group has all its pods, and some have no
	// device annotation yet.
	ReasonWaitingForAnnotations kplan.Reason = "WaitingForAnnotations"
	// ReasonWaitTimedOut: a Failed group waited for its pods or their annotations
	// longer than Input.Timeout; its Error wraps ErrTimeout.
	ReasonWaitTimedOut kplan.Reason = "WaitTimedOut"
	// ReasonInvalidAnnotation: a Failed group has a pod whose device annotation cannot
	// be parsed or is invalid.
	ReasonInvalidAnnotation kplan.Reason = "InvalidAnnotation"
	// ReasonTooManyPods: a Failed group has more pods than it expects.
	ReasonTooManyPods kplan.Reason = "TooManyPods"
	// ReasonBuildFailed: a Failed group's pods cannot be ranked together (a device
	// given twice on one server).
	ReasonBuildFailed kplan.Reason = "BuildFailed"
	// ReasonRenderFailed: a Failed group's table cannot be rendered: the template
	// fails, exceeds its budget or output limit, or prints something that is not
	// JSON.
	ReasonRenderFailed kplan.Reason = "RenderFailed"
	// ReasonConfigMapConflict: a Failed group's ConfigMap exists and is controlled by
	// another object; it is left alone.
	ReasonConfigMapConflict kplan.Reason = "ConfigMapConflict"
	// ReasonInvalidConfigMapName: a Failed group's ConfigMap name is not a valid
	// DNS-1123 subdomain (ConfigMapName never makes one; a safeguard).
	ReasonInvalidConfigMapName kplan.Reason = "InvalidConfigMapName"

	// ReasonPodInOtherNamespace: an unmatched pod is not in the owner's namespace.
	ReasonPodInOtherNamespace kplan.Reason = "PodInOtherNamespace"
	// ReasonPodNotOwned: an unmatched pod does not belong to the owner (no controller
	// ownerReference to it and, with Grouping.OwnerLabel, no owner label naming it).
	ReasonPodNotOwned kplan.Reason = "PodNotOwned"
	// ReasonGroupingLabelMissing: an unmatched pod lacks a label its group needs at
	// the level (see KeyOf).
	ReasonGroupingLabelMissing kplan.Reason = "GroupingLabelMissing"
	// ReasonGroupNotExpected: an unmatched pod's group is not in Input.Expected.
	ReasonGroupNotExpected kplan.Reason = "GroupNotExpected"
)

// Owner is the object that owns the pods and the ranktable ConfigMaps: any kind. Plan
// reads its name, namespace, UID and annotations; [NewOwner] builds one from any
// object.
type Owner struct {
	metav1.ObjectMeta
	// GVK is the owner's kind, for the ConfigMaps' owner references.
	GVK schema.GroupVersionKind
}

// NewOwner returns the Owner for obj, of kind gvk: its name, namespace, UID and a copy
// of its annotations (all Plan reads). obj is not changed. Objects read through a typed
// client usually have no apiVersion and kind set, hence gvk.
func NewOwner(obj metav1.Object, gvk schema.GroupVersionKind) Owner {
	if isNilObject(obj) {
		return Owner{GVK: gvk}
	}
	return Owner{GVK: gvk, ObjectMeta: metav1.ObjectMeta{
		Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
		Annotations: maps.Clone(obj.GetAnnotations()),
	}}
}

// isNilObject reports whether obj is nil or a nil pointer in an interface; an
// object of a non-pointer type is never nil.
func isNilObject(obj metav1.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// ResolveLevel returns the level Plan groups owner's pods at: the owner's
// [AnnotationLevel] annotation when it has one, else the template's level
// ([PodConfigMapName] uses it to name a pod's ConfigMap). An annotation that names no
// level is an error naming the owner and the annotation, as is a nil owner or
// template.
func ResolveLevel(owner metav1.Object, t *Template) (Level, error) {
	if t == nil {
		return "", fmt.Errorf("template is nil")
	}
	if isNilObject(owner) {
		return "", fmt.Errorf("owner is nil")
	}
	v, ok := owner.GetAnnotations()[AnnotationLevel]
	if !ok {
		return t.Level, nil
	}
	l, err := ParseLevel(v)
	if err != nil {
		return "", fmt.Errorf("owner %s/%s: annotation %s: %v", owner.GetNamespace(), owner.GetName(), AnnotationLevel, err)
	}
	return l, nil
}

// Input is everything Plan looks at. Plan does not change it.
type Input struct {
	// Owner owns the pods and the ConfigMaps (NewOwner builds it from any object); its
	// annotations may override the level (see ResolveLevel).
	Owner Owner
	// Template is the loaded ranktable template and pod parser.
	Template *Template
	// Pods are the owner's pods. A pod belongs to the owner when its controller
	// ownerReference is the owner, or when Grouping.OwnerLabel is set and the pod's
	// label of that name is the owner's name. Pods being deleted and nil pods are
	// ignored; every other pod that does not belong (another namespace, another
	// controller, no ownerReference), or that lacks a label its group needs (see
	// KeyOf), is left out and listed in Result.Unmatched.
	Pods []*corev1.Pod
	// ConfigMaps are the existing ConfigMaps of the owner's namespace: its ranktable
	// ConfigMaps, and any others (a ConfigMap another object controls under a
	// group's name is reported rather than overwritten; the rest are ignored).
	ConfigMaps []*corev1.ConfigMap
	// Expected is the number of pods each group must have. When nil, every group that
	// has pods expects exactly the pods it has. Groups listed with no pods yet are
	// planned too (their ConfigMaps are created empty). A group expecting 0 pods is
	// scaled to zero: with no pods it is Completed and its file is empty (it never
	// waits). Pods of groups not listed are left out and listed in Result.Unmatched.
	// With Expected set the plan knows every group, so it deletes the owner's
	// ranktable ConfigMaps of groups not listed (see Result.ConfigMaps). A negative
	// count, and a key no pod could match (a role at group level, no role at role
	// level, no group unless Grouping.SingleGroup is set, a group when it is), are
	// input errors.
	Expected map[GroupKey]int
	// Grouping names the labels that place pods in groups (zero value: kthena's).
	Grouping Grouping
	// Order is how servers are ordered before ranks are assigned.
	Order Order
	// Now is the current time; Timeout (0: none) is how long a group may wait for its
	// pods' annotations, counted from the later of its ConfigMap's and its newest pod's
	// creation.
	Now time.Time
	// Timeout: see Now.
	Timeout time.Duration
	// Timestamp is handed to templates as .Timestamp (empty by default).
	Timestamp string
	// MaxOutputBytes caps each table (default DefaultMaxOutputBytes).
	MaxOutputBytes int
	// RequeueAfter is the poll interval while a group waits (default 5s).
	RequeueAfter time.Duration
}

// DesiredConfigMap is one ranktable ConfigMap with what to do about it. For updates
// ConfigMap is the existing object (deep-copied) with data, labels and annotations
// replaced, so its resourceVersion makes the update an optimistic-lock write. For
// kplan.ActionNone and kplan.ActionDelete it is the existing object from
// Input.ConfigMaps itself (not a copy: do not modify it); for kplan.ActionCreate a new
// object.
type DesiredConfigMap struct {
	// Group is the group the ConfigMap holds the table of; the zero key for
	// kplan.ActionDelete (the ConfigMap belongs to no planned group).
	Group GroupKey
	// Action is what to do: create, update, delete, or nothing (kplan.ActionNone).
	Action kplan.Action
	// ConfigMap is the object to create, update or delete, or the one that is up to
	// date (see above).
	ConfigMap *corev1.ConfigMap
}

// Phase is a group's state.
type Phase string

// Phases.
const (
	PhaseWaiting   Phase = "Waiting"
	PhaseCompleted Phase = "Completed"
	PhaseFailed    Phase = "Failed"
)

// GroupStatus reports one group. Reason and Message can be set as they are on a
// condition about the group.
type GroupStatus struct {
	// Group identifies the group.
	Group GroupKey
	// ConfigMapName is the group's ranktable ConfigMap.
	ConfigMapName string
	// Phase is Waiting, Completed or Failed.
	Phase Phase
	// Reason says why the group is in its phase: ReasonGenerated or
	// ReasonScaledToZero when Completed; ReasonWaitingForPods or
	// ReasonWaitingForAnnotations when Waiting; ReasonWaitTimedOut,
	// ReasonInvalidAnnotation, ReasonTooManyPods, ReasonBuildFailed,
	// ReasonRenderFailed, ReasonConfigMapConflict or ReasonInvalidConfigMapName when
	// Failed.
	Reason kplan.Reason
	// Message says the same for a human, naming the group, and while the group waits
	// or once it timed out the pods without the annotation and the absent members.
	Message string
	// Pods and Expected count the group's pods.
	Pods, Expected int
	// Missing lists pods (namespace/name) without the annotation.
	Missing []string
	// Absent names expected members that have no pod at all (at most 64 of them, in
	// order). At role level with kthena's labels, when
	// the group's pods are named as kthena names them ({group}-{role id}-{index}),
	// absent members are named the same way (namespace/name); otherwise, when every
	// pod of the group has a stable rank index, by the indexes no pod holds
	// ("hccl/rankIndex=N"). It is empty when neither is known: Expected-Pods still
	// counts them.
	Absent []string
	// Error says why the group failed; nil otherwise.
	Error error
}

// Result is Plan's result. Every slice is sorted by group key (natural order), events in
// group order then pod order; deletions and their events come last, by name.
type Result struct {
	// Level is the level planned at: the owner's annotation, else the template's.
	Level Level
	// ConfigMaps are the ranktable ConfigMaps to create, update or leave alone, one
	// per group, followed by those to delete (sorted by name): when Input.Expected is
	// set, every ConfigMap of Input.ConfigMaps in the owner's namespace that the owner
	// controls, that carries the ranktable label (LabelComponent) and that no
	// expected group has. Without Expected nothing is deleted: a group whose pods are
	// all gone may be about to get new ones.
	ConfigMaps []DesiredConfigMap
	// Groups report each group's phase.
	Groups []GroupStatus
	// Events are the events to record.
	Events []kplan.Event
	// RequeueAfter is when to look again (0: only on change): the poll interval while
	// any group waits, shortened to the earliest timeout.
	RequeueAfter time.Duration
	// Unmatched lists the pods of Input.Pods left out of every group, with why, in
	// pod order. A plan with no groups and unmatched pods usually means the pods do
	// not refer to the owner the way Input says (see Input.Pods).
	Unmatched []UnmatchedPod
}

// UnmatchedPod is a pod Plan left out of every group.
type UnmatchedPod struct {
	// Pod is the pod's namespace/name.
	Pod string
	// Reason says why: ReasonPodInOtherNamespace, ReasonPodNotOwned,
	// ReasonGroupingLabelMissing or ReasonGroupNotExpected.
	Reason kplan.Reason
	// Message says the same for a human, e.g. "pod default/p has no controller
	// ownerReference".
	Message string
}

// maxAbsentNamed is the most absent members GroupStatus.Absent names.
const maxAbsentNamed = 64

// ErrTimeout is wrapped by the error of a group that waited longer than the timeout.
var ErrTimeout = errors.New("timed out waiting for pod annotations")

// Plan computes the ranktable ConfigMaps of one owner: the reconcile decision. It is
// Planner.Plan on a fresh Planner: see there for the rules.
func Plan(in Input) (Result, error) {
	return NewPlanner().Plan(in)
}

func (in *Input) check() (Level, error) {
	if in.Template == nil {
		return "", fmt.Errorf("input: Template is nil")
	}
	if in.Owner.Name == "" || in.Owner.Namespace == "" || in.Owner.UID == "" {
		return "", fmt.Errorf("input: Owner needs name, namespace and uid")
	}
	if !isDNSLabel(in.Owner.Namespace) {
		return "", fmt.Errorf("input: Owner.Namespace %q: %s", truncate(in.Owner.Namespace, 80), validation.IsDNS1123Label(in.Owner.Namespace)[0])
	}
	if _, err := in.Order.normalize(); err != nil {
		return "", fmt.Errorf("input: Order: %v", err)
	}
	level, err := ResolveLevel(&in.Owner.ObjectMeta, in.Template)
	if err != nil {
		return "", err
	}
	// Report the first bad key in key order, whatever the map's order.
	var bad GroupKey
	var why string
	for k, n := range in.Expected {
		w := ""
		switch {
		case n < 0:
			w = fmt.Sprintf("is %d: a group expects 0 or more pods", n)
		case level == LevelGroup && k.Role != "":
			w = fmt.Sprintf("names role %q but the level is group: no pod can match it (use the key %q)", k.Role, k.Group)
		case level == LevelRole && k.Role == "":
			w = "names no role but the level is role: no pod can match it"
		case in.Grouping.SingleGroup && k.Group != "":
			w = fmt.Sprintf("names group %q but Grouping.SingleGroup is set: no pod can match it (use an empty Group)", k.Group)
		case !in.Grouping.SingleGroup && k.Group == "":
			w = "names no group: no pod can match it (a pod needs a serving-group label; set Grouping.SingleGroup when the pods carry none)"
		}
		if w != "" && (why == "" || keyBefore(k, bad)) {
			bad, why = k, w
		}
	}
	if why != "" {
		return "", fmt.Errorf("input: Expected[%s] %s", bad, why)
	}
	return level, nil
}

// reference returns an ObjectReference to the owner.
func (o Owner) reference() corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: o.GVK.GroupVersion().String(), Kind: o.GVK.Kind,
		Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}

func ownerRef(o Owner) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: o.GVK.GroupVersion().String(), Kind: o.GVK.Kind, Name: o.Name, UID: o.UID,
		Controller: &t, BlockOwnerDeletion: &t,
	}
}

// keyBefore orders keys as results are ordered, ties (natural order treats "01" as
// "1") broken bytewise.
func keyBefore(a, b GroupKey) bool {
	if c := compareKeys(a, b); c != 0 {
		return c < 0
	}
	return a.Group < b.Group || a.Group == b.Group && a.Role < b.Role
}

// belongs reports whether pod (in the owner's namespace) belongs to o: its controller
// is o, or its ownerLabel label (when ownerLabel is set) is o's name.
func belongs(pod *corev1.Pod, o Owner, ownerLabel string) bool {
	if c := metav1.GetControllerOfNoCopy(pod); c != nil && c.UID == o.UID {
		return true
	}
	if ownerLabel == "" {
		return false
	}
	v, ok := pod.Labels[ownerLabel]
	return ok && v == o.Name
}

// whyNotOwned says why pod does not belong to o.
func whyNotOwned(pod *corev1.Pod, o Owner, ownerLabel string) (kplan.Reason, string) {
	ref := "pod " + pod.Namespace + "/" + pod.Name
	if pod.Namespace != o.Namespace {
		return ReasonPodInOtherNamespace, fmt.Sprintf("%s is in namespace %q, the owner in %q", ref, pod.Namespace, o.Namespace)
	}
	var why string
	if c := metav1.GetControllerOfNoCopy(pod); c != nil {
		why = fmt.Sprintf("%s is controlled by %s %s (uid %s), not by %s %s", ref, c.Kind, c.Name, c.UID, o.GVK.Kind, o.Name)
	} else {
		why = ref + " has no controller ownerReference"
	}
	if ownerLabel == "" {
		return ReasonPodNotOwned, why
	}
	if v, ok := pod.Labels[ownerLabel]; ok {
		return ReasonPodNotOwned, fmt.Sprintf("%s and its label %s is %q, not %q", why, ownerLabel, truncate(v, 80), o.Name)
	}
	return ReasonPodNotOwned, fmt.Sprintf("%s and no label %s", why, ownerLabel)
}
