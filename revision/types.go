package revision

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultRevisionHistoryLimit is the number of non-live revisions the hub keeps when
// spec.revisionHistoryLimit is not set (the Kubernetes workload default).
const DefaultRevisionHistoryLimit int32 = 10

// defaultMaxUnavailable is the maxUnavailable used when updateStrategy.maxUnavailable
// is not set.
var defaultMaxUnavailable = intstr.FromInt32(1)

// ConfigMapSet manages versioned configuration files beside a workload. Operators may
// use it as their CRD type or embed ConfigMapSetSpec and ConfigMapSetStatus in their
// own.
type ConfigMapSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: the data, the pods and containers it serves, and how
	// new revisions roll out.
	Spec ConfigMapSetSpec `json:"spec,omitempty"`
	// Status is the observed state, as Plan computes it.
	Status ConfigMapSetStatus `json:"status,omitempty"`
}

// ConfigMapSetList is a list of ConfigMapSets.
type ConfigMapSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ConfigMapSets.
	Items []ConfigMapSet `json:"items"`
}

// ConfigMapSetSpec is the desired state of a ConfigMapSet.
type ConfigMapSetSpec struct {
	// Selector picks the pods whose configuration the set manages. Required.
	Selector *metav1.LabelSelector `json:"selector"`
	// Data holds the files: file name to content. Every distinct Data is a revision.
	Data map[string]string `json:"data,omitempty"`
	// Containers says which containers get the files and where.
	Containers []ContainerInjectSpec `json:"containers"`
	// RevisionHistoryLimit is how many revisions that no pod uses the hub keeps
	// (DefaultRevisionHistoryLimit when nil). Live revisions are never trimmed.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// InjectUpdateOrder labels pods picked for update with the update-order label
	// until their injected containers restarted.
	InjectUpdateOrder bool `json:"injectUpdateOrder,omitempty"`
	// UpdateStrategy says how revisions roll out.
	UpdateStrategy ConfigMapSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// InjectStrategy says how the webhook injects new pods.
	InjectStrategy ConfigMapSetInjectStrategy `json:"injectStrategy,omitempty"`
}

// ContainerInjectSpec selects one container, by Name or by NameFrom, and the path its
// files are mounted at. Exactly one of Name and NameFrom is set.
type ContainerInjectSpec struct {
	// Name is a container name.
	Name string `json:"name,omitempty"`
	// NameFrom reads the container name from the pod, for containers injected by
	// others (e.g. a SidecarSet).
	NameFrom *ValueFromSource `json:"nameFrom,omitempty"`
	// MountPath is the absolute path the files appear at (read-only).
	MountPath string `json:"mountPath"`
}

// ValueFromSource reads a value from the pod.
type ValueFromSource struct {
	// FieldRef supports metadata.labels['<key>'] and metadata.annotations['<key>'].
	FieldRef corev1.ObjectFieldSelector `json:"fieldRef"`
}

// ConfigMapSetUpdateStrategy says how a new revision rolls out.
type ConfigMapSetUpdateStrategy struct {
	// Type says who picks the pods that move to a new revision: RollingUpdate
	// (the default, when empty) or External.
	Type UpdateStrategyType `json:"type,omitempty"`
	// Partition is the number or percent of pods KEPT on old revisions (default 0).
	// Raising it rolls pods back to status.currentRevision.
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// RestartInjectedContainers restarts the containers that mount the files after
	// the reload sidecar, so they read the new files.
	RestartInjectedContainers bool `json:"restartInjectedContainers,omitempty"`
	// RestartMethod says who restarts the injected containers when
	// RestartInjectedContainers is set: RestartSignal (the default, when empty) or
	// RestartExternal. Without RestartInjectedContainers it has no effect.
	RestartMethod RestartMethod `json:"restartMethod,omitempty"`
	// MaxUnavailable bounds not-ready and restarting pods when
	// RestartInjectedContainers is set (default 1; a percent rounds down but never
	// to 0).
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// UpdateStrategyType says who picks the pods that move to a new revision.
type UpdateStrategyType string

const (
	// RollingUpdate: [Plan] picks the pods, under the partition and, with
	// restartInjectedContainers, maxUnavailable. The default.
	RollingUpdate UpdateStrategyType = "RollingUpdate"
	// ExternalUpdate: the pods' owner (a workload controller that releases the
	// data together with its own changes, under its own budget) picks them, by
	// writing each pod's wanted revision ([Keys].UpdateRevision with its
	// timestamp). [Plan] still writes the hub and the status and lists the
	// waiting pods, but never changes a pod's wanted revision; partition and
	// maxUnavailable must be unset. New pods still start on the update revision
	// ([Inject]).
	ExternalUpdate UpdateStrategyType = "External"
)

// RestartMethod says who restarts a pod's injected containers.
type RestartMethod string

const (
	// RestartSignal: the reload sidecar sends each injected container's main process
	// SIGTERM and the kubelet restarts the container (restartPolicy Always). Inject
	// makes the pod share one process namespace and marks each injected container
	// with [EnvContainerName] so the sidecar can find its processes. The default.
	RestartSignal RestartMethod = "Signal"
	// RestartExternal: something outside the pod restarts the injected containers
	// (such as OpenKruise's ContainerRecreateRequest, or a node daemon calling the
	// container runtime); the pod keeps its own process namespaces and the reload
	// sidecar only waits for the restarts.
	RestartExternal RestartMethod = "External"
)

// ConfigMapSetInjectStrategy says how the webhook injects new pods.
type ConfigMapSetInjectStrategy struct {
	// Pause stops injection into new pods; existing pods are still planned.
	Pause bool `json:"pause,omitempty"`
}

// ConfigMapSetStatus is the observed state of a ConfigMapSet.
type ConfigMapSetStatus struct {
	// ObservedGeneration is the generation Plan last planned.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CurrentRevision is the revision every pod ran when a rollout last completed.
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the revision of spec.data.
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CollisionCount is bumped when a hash collides with different data in the hub.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// MatchedPods is the number of pods the selector matched.
	MatchedPods int32 `json:"matchedPods"`
	// UpdatedPods is the number of pods whose current revision is the update revision.
	UpdatedPods int32 `json:"updatedPods"`
	// ReadyPods is the number of ready pods.
	ReadyPods int32 `json:"readyPods"`
	// UpdatedReadyPods is the number of updated pods that are ready.
	UpdatedReadyPods int32 `json:"updatedReadyPods"`
	// LastContainersTimestamp is when spec.containers last changed; pods created before
	// it keep their revision (cold start).
	LastContainersTimestamp *metav1.Time `json:"lastContainersTimestamp,omitempty"`
	// LastContainersHash is the hash of spec.containers at LastContainersTimestamp.
	LastContainersHash string `json:"lastContainersHash,omitempty"`
	// Conditions are the reconciler's: Plan copies them from the set it is given and
	// never sets one. A reconciler derives them from [Result].Complete and
	// [Result].Waiting, whose reasons are valid condition reasons.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
