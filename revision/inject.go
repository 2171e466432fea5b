package revision

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/internal/canonhash"
	"github.com/kplan-dev/kplan/internal/names"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// Paths and variables of the reload sidecar.
const (
	// SidecarHubPath is where the reload sidecar sees the hub ConfigMap.
	SidecarHubPath = "/etc/configmapset/hub"
	// SidecarDataPath is where the reload sidecar writes the wanted revision's files.
	SidecarDataPath = "/etc/configmapset/data"
	// EnvRevision holds the wanted revision (read from the pod annotation when the
	// sidecar starts, which is why it restarts on a new revision).
	EnvRevision = "CONFIGMAPSET_REVISION"
	// EnvHubFile is the path of the hub's revisions file.
	EnvHubFile = "CONFIGMAPSET_HUB_FILE"
	// EnvDataDir is the directory to write files into.
	EnvDataDir = "CONFIGMAPSET_DATA_DIR"
	// EnvSetName holds the ConfigMapSet's name.
	EnvSetName = "CONFIGMAPSET_NAME"
	// EnvPodName holds the pod's name (downward API), so the sidecar can read its
	// pod and mark it current.
	EnvPodName = "POD_NAME"
	// EnvPodNamespace holds the pod's namespace (downward API).
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvContainerName marks the processes of a container the files are mounted in,
	// when the set restarts injected containers by signal (RestartSignal): Inject sets it in each such container
	// to the container's own name, so that a restarter sharing the pod's process
	// namespace (the reload sidecar) can find the container's main process by its
	// environment (/proc/<pid>/environ) and signal it.
	EnvContainerName = "CONFIGMAPSET_CONTAINER"
)

// labelSafe turns a set name (a DNS-1123 subdomain) into a DNS-1123 label part: dots
// become dashes, plus a hash of the name when that changed it, so "a.b" and "a-b" stay
// apart.
func labelSafe(setName string) []string {
	if !strings.Contains(setName, ".") {
		return []string{setName}
	}
	return []string{strings.ReplaceAll(setName, ".", "-"), canonhash.Short(setName)}
}

// ReloadSidecarName is the reload sidecar's container name for a set.
func ReloadSidecarName(setName string) string {
	return names.Label(append([]string{"cms-reload"}, labelSafe(setName)...)...)
}

// VolumeName is the name of the emptyDir holding a set's files.
func VolumeName(setName string) string {
	return names.Label(append([]string{"cms"}, labelSafe(setName)...)...)
}

// HubVolumeName is the name of the volume that mounts a set's hub into the sidecar.
func HubVolumeName(setName string) string {
	return names.Label(append([]string{"cms-hub"}, labelSafe(setName)...)...)
}

// InjectorName is the webhookpatch injector name, recorded on the pod, for a set.
func InjectorName(setName string) string {
	return names.Label(append([]string{"configmapset"}, labelSafe(setName)...)...)
}

// SidecarOptions configure the reload sidecar.
type SidecarOptions struct {
	// Image is the reload sidecar's image. Required.
	Image string
	// Resources are its resource requests and limits.
	Resources corev1.ResourceRequirements
}

// InjectInput is what Inject needs besides the pod.
type InjectInput struct {
	// Set is the ConfigMapSet whose selector matched the pod.
	Set *ConfigMapSet
	// Pods are the other pods the set matches, to pick the new pod's revision so the
	// partition holds. They are not changed.
	Pods []*corev1.Pod
	// KubeVersion is the cluster version ("v1.30.2"); it picks the sidecar mode.
	KubeVersion string
	// Sidecar configures the reload sidecar.
	Sidecar SidecarOptions
	// Now is written as the wanted revision's timestamp. Required: the zero time and
	// times outside 1970 to 9999 are errors.
	Now time.Time
}

// InjectResult says what Inject did.
type InjectResult struct {
	// Result says whether the pod changed and lists the items of the injection
	// record (webhookpatch.RecordAnnotation, under [InjectorName]) that Inject added,
	// changed or removed.
	webhookpatch.Result
	// Revision is the pod's wanted revision.
	Revision string
	// Pending lists containers selected by nameFrom that the pod does not have (yet):
	// a later webhook reinvocation, after their injector ran, mounts them.
	Pending []string
}

// Inject changes pod so it serves the set's files: an emptyDir, the hub ConfigMap
// volume, the reload sidecar (native or with launch priority by Kubernetes version;
// its environment is the node agent's whole configuration: [EnvRevision],
// [EnvHubFile], [EnvDataDir], [EnvSetName], and the pod's own name and namespace
// through the downward API, [EnvPodName] and [EnvPodNamespace]), read-only mounts in the selected containers, and, if the pod has none, a wanted
// revision chosen so the partition holds (the update revision while fewer than
// pods+1-partition pods run it, else the current one) with its timestamp. Deep-copy
// pod first to diff the two with webhookpatch.Diff.
//
// With updateStrategy.restartInjectedContainers and restartMethod Signal (the
// default), the injected containers are restarted by a signal to their main
// process, so Inject also makes the pod share
// one process namespace (spec.shareProcessNamespace: true; left unset when the pod
// uses the host's, spec.hostPID, where the processes are visible already) and sets
// [EnvContainerName] to its own name in each container it mounts the files in. A
// pod that sets spec.shareProcessNamespace to false is a conflict: its containers
// could never be restarted. The pod-level field is not part of the injection record,
// so stripping the set's injection leaves it.
//
// It is all or nothing: on any error, including a conflict found after some objects
// were injected, pod is left exactly as it was. It is idempotent, records what it
// injected under [InjectorName], and returns an error wrapping
// webhookpatch.ErrConflict when the pod already holds a same-named volume,
// container, mount or annotation that differs and that Inject did not inject (such
// as another set's sidecar on the same mountPath). The injected pod must pass
// webhookpatch.Validate, or Inject fails. With injectStrategy.pause it does nothing.
func Inject(pod *corev1.Pod, in InjectInput) (InjectResult, error) {
	set := in.Set
	if pod == nil {
		return InjectResult{}, fmt.Errorf("revision.Inject: no pod")
	}
	if set == nil {
		return InjectResult{}, fmt.Errorf("revision.Inject: pod %s/%s: input has no ConfigMapSet", pod.Namespace, pod.Name)
	}
	if set.Spec.InjectStrategy.Pause {
		return InjectResult{}, nil
	}
	who := fmt.Sprintf("pod %s/%s: configmapset %s", pod.Namespace, pod.Name, set.Name)
	if err := checkNow(in.Now); err != nil {
		return InjectResult{}, fmt.Errorf("%s: %w", who, err)
	}
	if errs := Validate(set); len(errs) > 0 {
		return InjectResult{}, fmt.Errorf("%s: %w", who, errs.ToAggregate())
	}
	if in.Sidecar.Image == "" {
		return InjectResult{}, fmt.Errorf("%s: sidecar image: required", who)
	}
	mode, err := webhookpatch.SidecarModeFor(in.KubeVersion)
	if err != nil {
		return InjectResult{}, fmt.Errorf("%s: kube version: %w", who, err)
	}
	keys, err := KeysFor(set.Name)
	if err != nil {
		return InjectResult{}, err
	}
	inj := webhookpatch.Injector{Name: InjectorName(set.Name)}
	var res InjectResult
	applied, err := inj.Apply(pod, func(work *corev1.Pod) error {
		if res, err = inject(work, in, inj, keys, mode); err != nil {
			return err
		}
		if errs := webhookpatch.Validate(work); len(errs) > 0 {
			return fmt.Errorf("injected pod is invalid: %w", errs.ToAggregate())
		}
		return nil
	})
	if err != nil {
		return InjectResult{}, fmt.Errorf("%s: %w", who, err)
	}
	res.Result = applied
	return res, nil
}

// inject injects into pod (the copy Inject's Apply works on); on error the caller
// drops the copy.
func inject(pod *corev1.Pod, in InjectInput, inj webhookpatch.Injector, keys Keys, mode webhookpatch.SidecarMode) (InjectResult, error) {
	set := in.Set
	var res InjectResult
	vol, hubVol := VolumeName(set.Name), HubVolumeName(set.Name)
	optional := true
	if _, err := inj.EnsureVolume(pod, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}); err != nil {
		return res, err
	}
	if _, err := inj.EnsureVolume(pod, corev1.Volume{Name: hubVol, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: HubName(set.Name)}, Optional: &optional,
	}}}); err != nil {
		return res, err
	}
	sidecar := corev1.Container{
		Name:      ReloadSidecarName(set.Name),
		Image:     in.Sidecar.Image,
		Resources: *in.Sidecar.Resources.DeepCopy(),
		Env: []corev1.EnvVar{
			{Name: EnvRevision, ValueFrom: fieldRef("metadata.annotations['" + keys.UpdateRevision + "']")},
			{Name: EnvHubFile, Value: SidecarHubPath + "/" + HubDataKey},
			{Name: EnvDataDir, Value: SidecarDataPath},
			{Name: EnvSetName, Value: set.Name},
			{Name: EnvPodName, ValueFrom: fieldRef("metadata.name")},
			{Name: EnvPodNamespace, ValueFrom: fieldRef("metadata.namespace")},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: hubVol, MountPath: SidecarHubPath, ReadOnly: true},
			{Name: vol, MountPath: SidecarDataPath},
		},
	}
	if _, err := inj.EnsureSidecar(pod, sidecar, mode); err != nil {
		return res, err
	}
	for i, c := range set.Spec.Containers {
		name, ok, err := resolveContainerName(pod, c)
		if err != nil {
			return res, fmt.Errorf("spec.containers[%d]: %w", i, err)
		}
		if !ok || (c.NameFrom != nil && !hasContainer(pod, name)) {
			res.Pending = append(res.Pending, fmt.Sprintf("spec.containers[%d] (%s)", i, c.NameFrom.FieldRef.FieldPath))
			continue
		}
		m := corev1.VolumeMount{Name: vol, MountPath: c.MountPath, ReadOnly: true}
		sel := webhookpatch.ContainerSelector{Names: []string{name}}
		if _, err := inj.EnsureVolumeMount(pod, m, sel); err != nil {
			return res, fmt.Errorf("spec.containers[%d]: %w", i, err)
		}
		if signalRestarts(set) {
			if _, err := inj.EnsureEnv(pod, corev1.EnvVar{Name: EnvContainerName, Value: name}, sel); err != nil {
				return res, fmt.Errorf("spec.containers[%d]: %w", i, err)
			}
		}
	}
	if signalRestarts(set) {
		if err := shareProcesses(pod); err != nil {
			return res, err
		}
	}
	if rev := pod.Annotations[keys.UpdateRevision]; rev != "" {
		res.Revision = rev
		return res, nil
	}
	res.Revision = initialRevision(set, in.Pods)
	if _, err := inj.EnsureAnnotation(pod, keys.UpdateRevision, res.Revision); err != nil {
		return res, err
	}
	if _, err := inj.EnsureAnnotation(pod, keys.UpdateRevisionTimestamp, FormatTimestamp(in.Now)); err != nil {
		return res, err
	}
	return res, nil
}

// fieldRef is a downward API reference to a field of the pod.
func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

// signalRestarts reports whether the set's injected containers are restarted by a
// signal from the reload sidecar.
func signalRestarts(set *ConfigMapSet) bool {
	us := set.Spec.UpdateStrategy
	return us.RestartInjectedContainers && us.RestartMethod != RestartExternal
}

// shareProcesses makes the pod's containers see each other's processes, so the
// reload sidecar can signal the injected containers: spec.shareProcessNamespace
// becomes true, unless the pod uses the host's process namespace (spec.hostPID, which
// the API server does not allow together with it). An explicit false is a conflict.
func shareProcesses(pod *corev1.Pod) error {
	if pod.Spec.HostPID {
		return nil
	}
	if s := pod.Spec.ShareProcessNamespace; s != nil && !*s {
		return fmt.Errorf("spec.shareProcessNamespace is false, but updateStrategy.restartInjectedContainers restarts the injected containers by a signal from the reload sidecar, which needs the pod's containers to share one process namespace: %w", webhookpatch.ErrConflict)
	}
	yes := true
	pod.Spec.ShareProcessNamespace = &yes
	return nil
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// initialRevision returns the revision a new pod should start with so the partition
// holds once it joins pods (the set's other matched pods): status.updateRevision (or
// the hash of spec.data before the first reconcile) while fewer than
// pods+1-partition pods have it, else status.currentRevision. Terminating pods do not
// count. An invalid partition counts as 0; a nil set has no revision ("").
func initialRevision(set *ConfigMapSet, pods []*corev1.Pod) string {
	if set == nil {
		return ""
	}
	update := set.Status.UpdateRevision
	if update == "" {
		var cc int32
		if set.Status.CollisionCount != nil {
			cc = *set.Status.CollisionCount
		}
		update = RevisionHash(set.Spec.Data, cc)
	}
	current := set.Status.CurrentRevision
	if current == "" || current == update {
		return update
	}
	keys, err := KeysFor(set.Name)
	if err != nil {
		return update
	}
	total, assigned := 1, 0
	for _, p := range pods {
		if p == nil || p.DeletionTimestamp != nil {
			continue
		}
		total++
		if p.Annotations[keys.UpdateRevision] == update {
			assigned++
		}
	}
	kept, err := ResolvePartition(set.Spec.UpdateStrategy.Partition, total)
	if err != nil || assigned < total-kept {
		return update
	}
	return current
}
