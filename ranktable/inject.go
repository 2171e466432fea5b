package ranktable

import (
	"cmp"
	"fmt"
	"path"
	"strconv"
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

// InjectOptions configure Inject. Only ConfigMapName and Template are required.
type InjectOptions struct {
	// ConfigMapName is the pod's ranktable ConfigMap (ConfigMapName of its group).
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
	// Containers selects the main containers that get the mount and env var (default:
	// every app container).
	Containers webhookpatch.ContainerSelector
}

// Inject makes pod mount its ranktable: a ConfigMap volume, the wait-ranktable init
// container (waits until the file exists, is non-empty and is not an initializing
// table, then prints it; non-root, read-only root filesystem, no privileges), a
// read-only mount without subPath in the selected containers, and the engine's env
// var (RANKTABLEFILE for MindIE, DISAGGREGATED_PREFILL_RANK_TABLE_PATH for vLLM-Ascend)
// holding the file's path. It mutates pod (deep-copy first and use webhookpatch.Diff
// for a patch), is idempotent, and reports whether anything changed. On error (a
// conflicting user object) the pod may be partly changed; discard it.
func Inject(pod *corev1.Pod, opts InjectOptions) (bool, error) {
	if opts.Template == nil || opts.ConfigMapName == "" {
		return false, fmt.Errorf("inject: ConfigMapName and Template are required")
	}
	t := opts.Template
	in := webhookpatch.Injector{Name: InjectorName}
	changed := false
	step := func(c bool, err error) error {
		changed = changed || c
		return err
	}
	vol := corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: opts.ConfigMapName},
	}}}
	if err := step(in.EnsureVolume(pod, vol)); err != nil {
		return changed, err
	}
	if err := step(in.EnsureInitContainer(pod, waitContainer(opts))); err != nil {
		return changed, err
	}
	mount := corev1.VolumeMount{Name: VolumeName, MountPath: t.MountPath, ReadOnly: true}
	sel := opts.Containers
	if err := step(in.EnsureVolumeMount(pod, mount, sel)); err != nil {
		return changed, err
	}
	env := corev1.EnvVar{Name: t.Engine.EnvVar(), Value: path.Join(t.MountPath, t.Filename)}
	if err := step(in.EnsureEnv(pod, env, sel)); err != nil {
		return changed, err
	}
	return changed, nil
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
