package ranktable

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

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

// Reason is the reason of an [Event], as the design names it.
type Reason string

// Event reasons.
const (
	// ReasonConfigMapCreated: a group's ranktable ConfigMap is created (Normal, on the
	// ConfigMap).
	ReasonConfigMapCreated Reason = "RanktableConfigMapCreated"
	// ReasonGenerated: a group's table is written (Normal, on the ConfigMap).
	ReasonGenerated Reason = "RanktableGenerated"
	// ReasonGenerationFailed: a group failed (Warning, on the owner).
	ReasonGenerationFailed Reason = "RanktableGenerationFailed"
	// ReasonAnnotationMissing: a pod of a group has no device annotation yet (Normal,
	// on the pod).
	ReasonAnnotationMissing Reason = "PodRanktableAnnotationMissing"
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
// [AnnotationLevel] annotation when it has one, else the template's level. A webhook
// that injects before the owner is planned uses it with [KeyOf] and [ConfigMapName] to
// name the pod's ConfigMap. An annotation that names no level is an error naming the
// owner and the annotation, as is a nil owner or template.
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
	// controller, no ownerReference) is left out and listed in Result.Unmatched.
	Pods []*corev1.Pod
	// ConfigMaps are the existing ranktable ConfigMaps (others are ignored).
	ConfigMaps []*corev1.ConfigMap
	// Expected is the number of pods each group must have. When nil, every group that
	// has pods expects exactly the pods it has. Groups listed with no pods yet are
	// planned too (their ConfigMaps are created empty). A group expecting 0 pods is
	// scaled to zero: with no pods it is Completed and its file is empty (it never
	// waits). Pods of groups not listed are left out and listed in Result.Unmatched.
	// A negative count, and a key with a role at group level (no pod could match
	// it), are input errors.
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

// Action says what a reconciler does with a desired ConfigMap.
type Action string

// Actions.
const (
	// ActionNone: the existing ConfigMap is up to date.
	ActionNone Action = "None"
	// ActionCreate: create the ConfigMap.
	ActionCreate Action = "Create"
	// ActionUpdate: update the existing ConfigMap (an optimistic-lock write).
	ActionUpdate Action = "Update"
)

// DesiredConfigMap is one ranktable ConfigMap with what to do about it. For updates
// ConfigMap is the existing object (deep-copied) with data, labels and annotations
// replaced, so its resourceVersion makes the update an optimistic-lock write. For
// ActionNone it is the existing object from Input.ConfigMaps itself (not a copy: do not
// modify it); for ActionCreate a new object.
type DesiredConfigMap struct {
	// Group is the group the ConfigMap holds the table of.
	Group GroupKey
	// Action is what to do: create, update, or nothing.
	Action Action
	// ConfigMap is the object to create or update (see above).
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

// GroupStatus reports one group.
type GroupStatus struct {
	// Group identifies the group.
	Group GroupKey
	// ConfigMapName is the group's ranktable ConfigMap.
	ConfigMapName string
	// Phase is Waiting, Completed or Failed.
	Phase Phase
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

// Event is an event a reconciler records about Object.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason says what happened.
	Reason Reason
	// Object is what the event is about: the owner, a ranktable ConfigMap or a pod,
	// with its kind, API version, namespace and name, and its UID when it has one (a
	// ConfigMap the plan creates has none yet). An event recorder takes a pointer to it
	// as the object.
	Object corev1.ObjectReference
	// Message is a human-readable description.
	Message string
}

// Result is Plan's result. Every slice is sorted by group key (natural order), events in
// group order then pod order.
type Result struct {
	// Level is the level planned at: the owner's annotation, else the template's.
	Level Level
	// ConfigMaps are the ranktable ConfigMaps to create or update, one per group.
	ConfigMaps []DesiredConfigMap
	// Groups report each group's phase.
	Groups []GroupStatus
	// Events are the events to record.
	Events []Event
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
	// Reason says why, e.g. "has no controller ownerReference".
	Reason string
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
func whyNotOwned(pod *corev1.Pod, o Owner, ownerLabel string) string {
	if pod.Namespace != o.Namespace {
		return fmt.Sprintf("is in namespace %q, the owner in %q", pod.Namespace, o.Namespace)
	}
	var why string
	if c := metav1.GetControllerOfNoCopy(pod); c != nil {
		why = fmt.Sprintf("is controlled by %s %s (uid %s), not by %s %s", c.Kind, c.Name, c.UID, o.GVK.Kind, o.Name)
	} else {
		why = "has no controller ownerReference"
	}
	if ownerLabel == "" {
		return why
	}
	if v, ok := pod.Labels[ownerLabel]; ok {
		return fmt.Sprintf("%s and its label %s is %q, not %q", why, ownerLabel, truncate(v, 80), o.Name)
	}
	return fmt.Sprintf("%s and no label %s", why, ownerLabel)
}
