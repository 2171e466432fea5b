// The ModelServing API's types, kept in one file as the CRD reads them: most of
// its length is the fields' documentation and validation markers.

package v1alpha1

import (
	"github.com/kplan-dev/kplan/ranktable"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod labels the operator sets on every pod it creates. The first four are
// kthena's ModelServing labels, so tools that read kthena's pods (the ranktable
// planner, rollout.KthenaLabels for the role-wide view) read these pods too.
const (
	// LabelName holds the ModelServing's name.
	LabelName = "modelserving.volcano.sh/name"
	// LabelGroupName holds the serving group's name, <modelserving>-<group index>.
	LabelGroupName = "modelserving.volcano.sh/group-name"
	// LabelRole holds the role's name.
	LabelRole = "modelserving.volcano.sh/role"
	// LabelRevision holds the name of the ControllerRevision the pod was created
	// from.
	LabelRevision = "modelserving.volcano.sh/revision"
	// LabelGroupIndex holds the serving group's index, in decimal.
	LabelGroupIndex = "serving.examples.kplan.dev/group-index"
	// LabelMemberIndex holds the pod's index among its role's members in the group,
	// in decimal.
	LabelMemberIndex = "serving.examples.kplan.dev/member-index"
	// LabelColumn holds <role>-<member index>: the pod's column in Group mode.
	LabelColumn = "serving.examples.kplan.dev/column"
)

// Pod annotations of recovery: a replacement names the pod (or, in Gang mode,
// the serving group) it replaces until it takes over, and a replaced pod carries
// the time it was taken out of service until it is deleted.
const (
	// AnnotationReplacementFor holds the name of the failed pod or serving group
	// this pod replaces.
	AnnotationReplacementFor = "serving.examples.kplan.dev/replacement-for"
	// AnnotationSwappedAt holds when the pod was taken out of service in favour
	// of its replacement (RFC 3339).
	AnnotationSwappedAt = "serving.examples.kplan.dev/swapped-at"
)

// In-place updates. When a pod's new revision differs from its current one
// only in container images and in containers' cpu and memory requests and
// limits (as far as the pod's resize subresource can change them), the operator
// changes the pod in place instead of recreating it. Every pod it creates lists
// PodConditionImagesReady among its readiness gates, and the kubelet reports a
// pod ready only when every gate's condition is True: the operator sets the
// condition False before it changes the pod, and True once every changed
// container reports the new image and the node reports the new resources
// applied, and the containers are ready, so a pod whose containers restart or
// resize never counts as available.
const (
	// PodConditionImagesReady is the pod condition (and readiness gate) the
	// operator owns: False while the pod's images or resources are being
	// changed in place.
	PodConditionImagesReady corev1.PodConditionType = "serving.examples.kplan.dev/images-ready"
	// AnnotationInPlaceUpdate records the pod's last in-place update: a JSON
	// object with the revision it moved to, the image IDs the containers with
	// a new image ran before, and the containers whose resources were resized
	// ({"revision": "...", "imageIDs": {"engine": "..."}, "resized":
	// ["engine"]}). A container that reports the new image, or another image
	// ID than that, has been restarted on the new image; a resized container
	// is done when its status reports its spec's resources and the pod has no
	// PodResizePending or PodResizeInProgress condition.
	AnnotationInPlaceUpdate = "serving.examples.kplan.dev/in-place-update"
)

// AnnotationRanktableTemplate on a ModelServing names the ConfigMap of the
// ranktable template its pods' rank tables are rendered with (kthena's
// annotation, on the ModelServing as kthena puts it, not on the pod templates).
// The operator then keeps one ranktable ConfigMap per role of each serving group
// (or per serving group, at group level), mounts it into the pods it creates and
// reports on the RanktableReady condition.
const AnnotationRanktableTemplate = ranktable.AnnotationTemplate

// AnnotationRanktableLevel on a ModelServing overrides the template's level:
// "role" (a table per role of each serving group) or "group" (a table per
// serving group, all its roles together). kthena's annotation.
const AnnotationRanktableLevel = ranktable.AnnotationLevel

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas
// +kubebuilder:resource:shortName=ms
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.rolloutStrategy.mode`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: the pods' revision label is the name, a dash and a 10-character hash (63 at most)"

// ModelServing is an inference service of spec.replicas serving groups. Each
// group runs every role (for example prefill and decode) with the role's number
// of member pods; the operator creates the pods itself and rolls out template
// changes with the strategy's mode.
type ModelServing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelServingSpec   `json:"spec,omitempty"`
	Status ModelServingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ModelServingList is a list of ModelServings.
type ModelServingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelServing `json:"items"`
}

// ModelServingSpec is the desired state of a ModelServing.
type ModelServingSpec struct {
	// Replicas is the number of serving groups.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Roles are the roles every serving group runs. Their names and member counts
	// cannot change once created (a group's shape is fixed); their pod templates
	// can, which starts a rollout.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="size(self) == size(oldSelf) && oldSelf.all(o, self.exists(r, r.name == o.name && r.replicas == o.replicas))",message="role names and replicas are immutable"
	Roles []Role `json:"roles"`

	// RolloutStrategy says how a change of the roles' templates is rolled out.
	// +optional
	RolloutStrategy RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// RecoveryPolicy says how failed pods are replaced; without one, failed pods
	// are only reported (the Failed condition) and replaced when a rollout
	// reaches them.
	// +optional
	RecoveryPolicy *RecoveryPolicy `json:"recoveryPolicy,omitempty"`

	// ConfigMapSet names a ConfigMapSet (apps.kplan.dev/v1alpha1) in the
	// ModelServing's namespace that selects its pods and whose
	// spec.updateStrategy.type is External. Its data then rolls out with the pod
	// templates under one budget (rolloutStrategy.maxUnavailable): the target is
	// the set's status.updateRevision, the revision a pod serves is the set's
	// currentRevision annotation on the pod (which the reload sidecar writes),
	// and a pod whose data is moving (the set's updateRevision annotation, which
	// this controller writes, differs from it) counts as unavailable until its
	// reload sidecar confirms the new revision. Unset, data is left to the set.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ConfigMapSet string `json:"configMapSet,omitempty"`

	// RevisionHistoryLimit is how many old ControllerRevisions no pod runs are kept
	// for rolling back.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// Role is one kind of pod in a serving group.
type Role struct {
	// Name names the role; it is part of the pods' names.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Replicas is the number of the role's pods in each serving group.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Template is the role's pod template.
	Template corev1.PodTemplateSpec `json:"template"`
}

// RolloutMode is how a ModelServing's pods move to a new revision.
// +kubebuilder:validation:Enum=Rolling;Gang;Group;Lockstep
type RolloutMode string

const (
	// RollingMode rolls each role's pods one by one, in batches bounded by the
	// role's budget.
	RollingMode RolloutMode = "Rolling"
	// GangMode replaces whole serving groups: every pod of a group moves together,
	// and the budget counts groups.
	GangMode RolloutMode = "Gang"
	// GroupMode keeps rows aligned: each column (a role's member position) rolls
	// within its budget and the new revision's share advances one step at a time
	// across all columns.
	GroupMode RolloutMode = "Group"
	// LockstepMode rolls each role's pods within its budget, all roles advancing by
	// the same fraction per step.
	LockstepMode RolloutMode = "Lockstep"
)

// RolloutStrategy is how far and how fast a rollout goes.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnavailable) && has(self.maxSurge) && (self.maxUnavailable == 0 || self.maxUnavailable == '0%') && (self.maxSurge == 0 || self.maxSurge == '0%'))",message="maxUnavailable and maxSurge cannot both be 0"
type RolloutStrategy struct {
	// Mode is the rollout mode.
	// +kubebuilder:default=Rolling
	// +optional
	Mode RolloutMode `json:"mode,omitempty"`

	// MaxUnavailable is how many pods of a role (Rolling, Lockstep), serving groups
	// (Gang) or pods of a column (Group) may be unavailable because of the rollout:
	// an integer or a percent. Default 25%.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many of the same units may exist above the desired count
	// during the rollout: an integer or a percent. Default 25%, except for a
	// ModelServing with a rank-table template outside Gang mode, where it is 0
	// and admission refuses more: a surge pod would land in a serving group
	// beyond spec.replicas that no other member joins, so its rank table would
	// never complete. Use Gang mode to surge whole serving groups.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Partition is how many serving groups (an integer) or what share (a percent)
	// stay on the previous revision. Setting it to spec.replicas (or 100%) pauses
	// a rollout; lowering it resumes; raising it rolls pods back.
	// +kubebuilder:validation:XIntOrString
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MinReadySeconds is how long a pod must be ready to count as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
}

// RecoveryStrategy is how a failed pod or serving group is replaced.
// +kubebuilder:validation:Enum=CreateThenDelete;DeleteThenCreate;None
type RecoveryStrategy string

const (
	// CreateThenDelete starts a replacement and deletes the failed one once the
	// replacement is ready.
	CreateThenDelete RecoveryStrategy = "CreateThenDelete"
	// DeleteThenCreate deletes the failed one and starts its replacement.
	DeleteThenCreate RecoveryStrategy = "DeleteThenCreate"
	// NoRecovery only reports failed pods.
	NoRecovery RecoveryStrategy = "None"
)

// RecoveryPolicy says when a pod or serving group counts as failed and how it is
// replaced.
type RecoveryPolicy struct {
	// Strategy is how failed pods are replaced.
	// +kubebuilder:default=CreateThenDelete
	// +optional
	Strategy RecoveryStrategy `json:"strategy,omitempty"`

	// StartTimeoutSeconds marks a pod failed when it has not been ready for this
	// long; 0 never does.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StartTimeoutSeconds int32 `json:"startTimeoutSeconds,omitempty"`

	// MaxParallel caps replacements in flight; 0 means no cap.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxParallel int32 `json:"maxParallel,omitempty"`

	// ReleaseDelaySeconds is how long a replaced pod is kept after its
	// replacement took over.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReleaseDelaySeconds int32 `json:"releaseDelaySeconds,omitempty"`
}

// ModelServingStatus is the observed state of a ModelServing.
type ModelServingStatus struct {
	// ObservedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of serving groups that have at least one pod.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of serving groups whose pods are all ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas is the number of serving groups whose pods are all
	// available (ready for minReadySeconds) on one revision.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UpdatedReplicas is the number of serving groups whose pods all run
	// UpdateRevision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// CurrentRevision is the revision the rollout moves away from: the newest
	// revision other than UpdateRevision that pods run, or UpdateRevision when every
	// pod runs it.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the ControllerRevision of the current roles' templates.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount counts hash collisions of revision names; it is part of the
	// next revision's hash.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Roles counts each role's pods.
	// +listType=map
	// +listMapKey=name
	// +optional
	Roles []RoleStatus `json:"roles,omitempty"`

	// Groups is each serving group's phase, by index.
	// +listType=map
	// +listMapKey=index
	// +optional
	Groups []GroupStatus `json:"groups,omitempty"`

	// Conditions are Available, Progressing, RollingUpdate and Failed, and
	// RanktableReady when the ModelServing names a ranktable template.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RoleStatus counts one role's pods.
type RoleStatus struct {
	// Name is the role's name.
	Name string `json:"name"`
	// Replicas is the number of the role's pods.
	Replicas int32 `json:"replicas"`
	// Ready is the number of its pods that are ready.
	Ready int32 `json:"ready"`
	// Available is the number of its pods ready for minReadySeconds.
	Available int32 `json:"available"`
	// Updated is the number of its pods running UpdateRevision.
	Updated int32 `json:"updated"`
}

// GroupPhase is a serving group's phase.
type GroupPhase string

const (
	// GroupCreating: some pods of the group are missing or not ready yet, all on
	// one revision.
	GroupCreating GroupPhase = "Creating"
	// GroupRunning: every pod of the group is available, on one revision.
	GroupRunning GroupPhase = "Running"
	// GroupUpdating: the group's pods run different revisions.
	GroupUpdating GroupPhase = "Updating"
	// GroupFailed: a pod of the group failed.
	GroupFailed GroupPhase = "Failed"
)

// GroupStatus is one serving group's phase.
type GroupStatus struct {
	// Index is the group's index.
	Index int32 `json:"index"`
	// Phase is the group's phase.
	Phase GroupPhase `json:"phase"`
	// Revision is the revision most of its pods run.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// Condition types of a ModelServing.
const (
	// ConditionAvailable is True when at least spec.replicas minus maxUnavailable
	// serving groups are available.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is moving pods toward the
	// spec, False when it is done or stuck (the reason says which).
	ConditionProgressing = "Progressing"
	// ConditionRollingUpdate is True while pods run an older revision than
	// UpdateRevision that the partition does not keep; its reason and message
	// say what the rollout waits for.
	ConditionRollingUpdate = "RollingUpdate"
	// ConditionFailed is True when pods failed or the rollout cannot be planned.
	ConditionFailed = "Failed"
	// ConditionRanktableReady is True when every rank table of a ModelServing that
	// names a ranktable template is complete, False (with the groups that wait or
	// failed) otherwise.
	ConditionRanktableReady = "RanktableReady"
)

// Condition reasons. While the operator writes nothing and the rollout is not
// complete, Progressing and RollingUpdate carry the reason and message of
// package rollout's plan as they are (rollout.ReasonBudget
// "MaxUnavailableReached", rollout.ReasonWindow "GroupWindow",
// rollout.ReasonNotAvailable "WaitingForAvailable", and the others of
// rollout.Step.Reason and rollout.LockstepStep.Reason); the message names
// the waiting pods, per role in Rolling mode.
const (
	// ReasonRolloutComplete: every pod runs the revision it should and is
	// available.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonUpdating: the operator created, updated or deleted pods this reconcile.
	ReasonUpdating = "Updating"
	// ReasonPartitioned: the partition keeps the remaining pods on the previous
	// revision.
	ReasonPartitioned = "Partitioned"
	// ReasonPodFailed: some pods failed.
	ReasonPodFailed = "PodFailed"
	// ReasonPlanFailed: the rollout could not be planned (the message says why).
	ReasonPlanFailed = "PlanFailed"
	// ReasonPodNameTaken: a pod the operator has to create has the name of a pod
	// it does not control (another ModelServing's: <name>-<role>-<group>-<member>
	// is ambiguous when names contain dashes, or one created by hand); the
	// message names the pod and its controller. Rename the role or the
	// ModelServing, or delete the other pod.
	ReasonPodNameTaken = "PodNameTaken"
	// ReasonAllPodsUpdated: the RollingUpdate condition's reason once no pod runs
	// an older revision, while the new pods are not all available yet.
	ReasonAllPodsUpdated = "AllPodsUpdated"
	// ReasonMinimumReplicasAvailable and ReasonMinimumReplicasUnavailable are the
	// Available condition's reasons.
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonNoFailures is the Failed condition's reason when nothing failed.
	ReasonNoFailures = "NoFailures"
)
