package ranktable

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/kplan-dev/kplan/webhookpatch"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Names of what Inject adds to a pod, and the wait container's default image.
const (
	// InjectorName is the injector name Inject records its objects under in
	// webhookpatch.RecordAnnotation (webhookpatch.Injector{Name: InjectorName}.Strip
	// removes them).
	InjectorName = "ranktable"
	// VolumeName is the ConfigMap volume that holds the table.
	VolumeName = "ranktable"
	// InitContainerName is the init container that waits for the table.
	InitContainerName = "wait-ranktable"
	// DefaultWaitImage is the wait container's image unless InjectOptions.Image is set.
	DefaultWaitImage = "busybox:1.36"
)

// Defaults of the wait container.
const (
	defaultPollInterval    = 2 * time.Second
	waitRunAsUser          = 65534
	defaultWaitCPU         = "10m"
	defaultWaitMemory      = "16Mi"
	defaultWaitMemoryLimit = "32Mi"
)

// annotationDefaultContainer is the pod annotation kubectl reads to pick a pod's
// default container.
const annotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// InjectOptions configure Inject. Only ConfigMapName and Template are required.
type InjectOptions struct {
	// ConfigMapName is the pod's ranktable ConfigMap (see PodConfigMapName).
	ConfigMapName string
	// Template gives the mount path, file name and engine.
	Template *Template
	// Image of the wait init container (default DefaultWaitImage).
	Image string
	// Resources of the wait init container (default 10m CPU, 16Mi memory request,
	// 32Mi memory limit).
	Resources *corev1.ResourceRequirements
	// PollInterval of the wait loop (default 2s, at least 1s).
	PollInterval time.Duration
	// WaitTimeout, when positive, makes the wait container fail (exit 1, saying
	// whether the file is missing or still empty or initializing) once it has waited
	// that long, rounded up to whole poll intervals; the kubelet then restarts it
	// with back-off and the pod's events show why. 0 waits for ever, as the design
	// does.
	WaitTimeout time.Duration
	// Containers selects the main containers that get the mount and env var. The
	// zero value selects the inference engine's containers (see EngineContainers),
	// so a metrics or proxy sidecar gets neither. Any other value is used as
	// webhookpatch.ContainerSelector documents it (empty Names with Exclude or
	// IncludeInit set: every app container).
	Containers webhookpatch.ContainerSelector
}

// Inject makes pod mount its ranktable: a ConfigMap volume, the wait-ranktable init
// container (waits until the file exists, is non-empty and is not an initializing
// table, then prints it; non-root, read-only root filesystem, no privileges), a
// read-only mount without subPath in the selected containers, and the engine's env
// var (RANKTABLEFILE for MindIE, DISAGGREGATED_PREFILL_RANK_TABLE_PATH for vLLM-Ascend)
// holding the file's path.
//
// It changes pod in place (deep-copy it first and use webhookpatch.Diff for a
// patch), is idempotent, and reports what it changed as webhookpatch.Result: whether
// the pod changed, and which of its recorded items (webhookpatch.RecordAnnotation)
// were added or changed. It applies everything or nothing: on any error (a user's
// volume, init container, mount or env var that conflicts, wrapping
// webhookpatch.ErrConflict; an unreadable record annotation; a nil pod; a missing
// or invalid option) pod is left exactly as it was.
func Inject(pod *corev1.Pod, opts InjectOptions) (webhookpatch.Result, error) {
	if pod == nil {
		return webhookpatch.Result{}, fmt.Errorf("inject: pod is nil")
	}
	if opts.Template == nil {
		return webhookpatch.Result{}, fmt.Errorf("inject: pod %s/%s: InjectOptions.Template is nil", pod.Namespace, pod.Name)
	}
	if !isDNSSubdomain(opts.ConfigMapName) {
		return webhookpatch.Result{}, fmt.Errorf("inject: pod %s/%s: InjectOptions.ConfigMapName %q is not a valid ConfigMap name",
			pod.Namespace, pod.Name, truncate(opts.ConfigMapName, 80))
	}
	t := opts.Template
	in := webhookpatch.Injector{Name: InjectorName}
	return in.Apply(pod, func(pod *corev1.Pod) error {
		vol := corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: opts.ConfigMapName},
		}}}
		if _, err := in.EnsureVolume(pod, vol); err != nil {
			return err
		}
		if _, err := in.EnsureInitContainer(pod, waitContainer(opts)); err != nil {
			return err
		}
		sel := opts.Containers
		if len(sel.Names) == 0 && len(sel.Exclude) == 0 && !sel.IncludeInit {
			names, err := EngineContainers(pod)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return nil // no container of the user's to mount the table in
			}
			sel = webhookpatch.ContainerSelector{Names: names}
		}
		mount := corev1.VolumeMount{Name: VolumeName, MountPath: t.MountPath, ReadOnly: true}
		if _, err := in.EnsureVolumeMount(pod, mount, sel); err != nil {
			return err
		}
		env := corev1.EnvVar{Name: t.Engine.EnvVar(), Value: path.Join(t.MountPath, t.Filename)}
		_, err := in.EnsureEnv(pod, env, sel)
		return err
	})
}

// EngineContainers returns the names of pod's app containers that run the inference
// engine, in pod order: the containers Inject mounts the table in by default.
//
//   - Every app container that requests or limits an Ascend NPU (see
//     IsNPUResource): the engine is what uses the NPUs, a sidecar is not.
//   - When none does (NPUs allocated another way, or not yet): the container the
//     pod's kubectl.kubernetes.io/default-container annotation names (the one
//     kubectl picks), if it is an app container.
//   - Else the first app container.
//
// Containers another injector added (those webhookpatch.RecordAnnotation lists under
// another injector's name, such as a sidecar another webhook put first) are never
// chosen; with no other app container the result is empty. An unreadable record
// annotation is an error naming the pod.
func EngineContainers(pod *corev1.Pod) ([]string, error) {
	if pod == nil {
		return nil, fmt.Errorf("pod is nil")
	}
	others, err := addedByOthers(pod)
	if err != nil {
		return nil, err
	}
	var candidates []*corev1.Container
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; !others[c.Name] {
			candidates = append(candidates, c)
		}
	}
	var names []string
	for _, c := range candidates {
		if requestsNPU(c) {
			names = append(names, c.Name)
		}
	}
	if len(names) > 0 {
		return names, nil
	}
	if want, ok := pod.Annotations[annotationDefaultContainer]; ok {
		for _, c := range candidates {
			if c.Name == want {
				return []string{c.Name}, nil
			}
		}
	}
	if len(candidates) > 0 {
		return []string{candidates[0].Name}, nil
	}
	return nil, nil
}

// IsNPUResource reports whether name is an Ascend NPU resource: a resource of
// domain huawei.com whose name starts with "ascend" in any case (Huawei's device
// plugin: huawei.com/Ascend910, huawei.com/Ascend310P, virtual NPUs such as
// huawei.com/Ascend910-4c; HAMi's huawei.com/Ascend910B; Huawei Cloud CCE's
// huawei.com/ascend-1980), or any resource of domain ascend.com (the design's
// ascend.com/npu).
func IsNPUResource(name corev1.ResourceName) bool {
	domain, res, ok := strings.Cut(string(name), "/")
	if !ok {
		return false
	}
	return domain == "ascend.com" && res != "" ||
		domain == "huawei.com" && len(res) >= len("ascend") && strings.EqualFold(res[:len("ascend")], "ascend")
}

// requestsNPU reports whether c requests or limits a positive amount of an NPU
// resource.
func requestsNPU(c *corev1.Container) bool {
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name, q := range list {
			if IsNPUResource(name) && q.Sign() > 0 {
				return true
			}
		}
	}
	return false
}

// addedByOthers returns the app containers that an injector other than Inject's
// recorded in webhookpatch.RecordAnnotation.
func addedByOthers(pod *corev1.Pod) (map[string]bool, error) {
	raw := pod.Annotations[webhookpatch.RecordAnnotation]
	if raw == "" {
		return nil, nil
	}
	var rec map[string]map[string]string
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, fmt.Errorf("pod %s/%s: annotation %s: %w", pod.Namespace, pod.Name, webhookpatch.RecordAnnotation, err)
	}
	out := map[string]bool{}
	for injector, items := range rec {
		if injector == InjectorName {
			continue
		}
		for item := range items {
			if name, ok := strings.CutPrefix(item, "container/"); ok {
				out[name] = true
			}
		}
	}
	return out, nil
}

// waitContainer returns the wait-ranktable init container Inject adds.
func waitContainer(opts InjectOptions) corev1.Container {
	t := opts.Template
	poll := max(opts.PollInterval, time.Second)
	if opts.PollInterval == 0 {
		poll = defaultPollInterval
	}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(defaultWaitCPU),
			corev1.ResourceMemory: resource.MustParse(defaultWaitMemory),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(defaultWaitMemoryLimit)},
	}
	if opts.Resources != nil {
		res = *opts.Resources.DeepCopy()
	}
	file := path.Join(t.MountPath, t.Filename)
	sleep := strconv.Itoa(int(poll / time.Second))
	script := `f=` + strconv.Quote(file) + `
echo "Waiting for ranktable $f ..."
until [ -s "$f" ] && ! grep -q '"initializing"' "$f"; do
  sleep ` + sleep + `
done
echo "Ranktable is ready:"
cat "$f"
`
	if opts.WaitTimeout > 0 {
		limit := strconv.Itoa(int((opts.WaitTimeout + time.Second - 1) / time.Second))
		script = `f=` + strconv.Quote(file) + `
echo "Waiting for ranktable $f ..."
waited=0
until [ -s "$f" ] && ! grep -q '"initializing"' "$f"; do
  if [ "$waited" -ge ` + limit + ` ]; then
    if [ -e "$f" ]; then
      echo "ranktable $f is still empty or initializing after ${waited}s" >&2
    else
      echo "ranktable $f does not exist after ${waited}s" >&2
    fi
    exit 1
  fi
  sleep ` + sleep + `
  waited=$((waited + ` + sleep + `))
done
echo "Ranktable is ready:"
cat "$f"
`
	}
	yes, no := true, false
	uid := int64(waitRunAsUser)
	return corev1.Container{
		Name:      InitContainerName,
		Image:     cmp.Or(opts.Image, DefaultWaitImage),
		Command:   []string{"sh", "-c", script},
		Resources: res,
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeName, MountPath: t.MountPath, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, ReadOnlyRootFilesystem: &yes,
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}
