package webhookpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// ArgsPolicy says how [MergeContainer] combines the runtime's and the user's args.
// The empty policy is [ArgsAppend].
type ArgsPolicy string

const (
	// ArgsAppend runs the runtime's args, then the user's (KServe's behaviour).
	ArgsAppend ArgsPolicy = "Append"
	// ArgsReplace uses the user's args when the user gives any, else the runtime's.
	ArgsReplace ArgsPolicy = "Replace"
)

// MergePolicy configures [MergeContainer] and [MergePodSpec].
type MergePolicy struct {
	// Args says how the user's args combine with the runtime's (default ArgsAppend).
	Args ArgsPolicy
	// AllowNewContainers lets [MergePodSpec] add containers (and init containers)
	// that only the override names. By default such a container is an error
	// wrapping [ErrInvalidSpec], as KServe reports a predictor whose target
	// container the serving runtime lacks.
	AllowNewContainers bool
}

func (p MergePolicy) check() error {
	switch p.Args {
	case "", ArgsAppend, ArgsReplace:
		return nil
	}
	return fmt.Errorf("MergePolicy.Args: %q is not an args policy (want %s or %s)", string(p.Args), ArgsAppend, ArgsReplace)
}

// ErrInvalidSpec is wrapped by [MergePodSpec]'s error when the override names a
// container the runtime does not have (KServe's InvalidSpec / InvalidPredictorSpec).
var ErrInvalidSpec = errors.New("invalid spec")

// MergeContainer merges a user's override into a runtime's default container the way
// KServe merges serving runtimes and predictors, with Kubernetes' strategic merge
// patch:
//
//   - scalar fields set in override win; resources merge per resource name;
//   - env merges by name; a variable set in override keeps exactly override's
//     value or valueFrom (the merge would otherwise leave both, which the API server
//     rejects);
//   - volumeMounts merge by mountPath; a mountPath that mounts one volume in base and
//     another in override is an error;
//   - args follow policy.Args (an unknown policy is an error); the name is always
//     base's.
//
// Neither input is changed.
func MergeContainer(base, override corev1.Container, policy MergePolicy) (corev1.Container, error) {
	if err := policy.check(); err != nil {
		return corev1.Container{}, err
	}
	var merged corev1.Container
	if err := strategicMerge(&base, &override, &merged); err != nil {
		return corev1.Container{}, fmt.Errorf("merge container %q: %w", base.Name, err)
	}
	if err := fixContainer(&merged, &base, &override, policy); err != nil {
		return corev1.Container{}, fmt.Errorf("merge container %q: %w", base.Name, err)
	}
	return merged, nil
}

// MergePodSpec merges a user's pod spec into a runtime's default pod spec with
// strategic merge patch: containers and init containers merge by name (each pair as
// [MergeContainer] does), volumes by name. An override container the runtime lacks is
// an error wrapping [ErrInvalidSpec] unless policy.AllowNewContainers. A volume that
// ends up with two sources (a configMap in base, a secret in override) is an error, and
// so is an unknown policy.Args. Neither input is changed.
func MergePodSpec(base, override corev1.PodSpec, policy MergePolicy) (corev1.PodSpec, error) {
	if err := policy.check(); err != nil {
		return corev1.PodSpec{}, err
	}
	if !policy.AllowNewContainers {
		for _, l := range []struct {
			field          string
			base, override []corev1.Container
		}{{"initContainers", base.InitContainers, override.InitContainers}, {"containers", base.Containers, override.Containers}} {
			for _, o := range l.override {
				if findContainer(l.base, o.Name) == nil {
					return corev1.PodSpec{}, fmt.Errorf("merge pod spec: %s[%s]: %w: failed to find %s in the runtime's %s",
						l.field, o.Name, ErrInvalidSpec, o.Name, l.field)
				}
			}
		}
	}
	var merged corev1.PodSpec
	if override.Containers == nil {
		// containers has no omitempty: a nil list marshals as null, which the merge
		// reads as "delete the runtime's containers".
		override.Containers = []corev1.Container{}
	}
	if err := strategicMerge(&base, &override, &merged); err != nil {
		return corev1.PodSpec{}, fmt.Errorf("merge pod spec: %w", err)
	}
	for _, lists := range [][3][]corev1.Container{
		{merged.InitContainers, base.InitContainers, override.InitContainers},
		{merged.Containers, base.Containers, override.Containers},
	} {
		for i := range lists[0] {
			m := &lists[0][i]
			b := findContainer(lists[1], m.Name)
			o := findContainer(lists[2], m.Name)
			if b == nil || o == nil {
				continue
			}
			if err := fixContainer(m, b, o, policy); err != nil {
				return corev1.PodSpec{}, fmt.Errorf("merge pod spec: container %q: %w", m.Name, err)
			}
		}
	}
	for i, v := range merged.Volumes {
		if n := countSources(v.VolumeSource); n > 1 {
			return corev1.PodSpec{}, fmt.Errorf("merge pod spec: volumes[%d] %q: the runtime and the override give it different sources", i, v.Name)
		}
	}
	return merged, nil
}

func strategicMerge(base, override, out any) error {
	b, err := json.Marshal(base)
	if err != nil {
		return err
	}
	o, err := json.Marshal(override)
	if err != nil {
		return err
	}
	m, err := strategicpatch.StrategicMergePatch(b, o, out)
	if err != nil {
		return err
	}
	return json.Unmarshal(m, out)
}

func fixContainer(merged, base, override *corev1.Container, policy MergePolicy) error {
	merged.Name = base.Name
	switch {
	case policy.Args == ArgsReplace && len(override.Args) > 0:
		merged.Args = slices.Clone(override.Args)
	case policy.Args == ArgsReplace:
		merged.Args = slices.Clone(base.Args)
	default:
		merged.Args = append(slices.Clone(base.Args), override.Args...)
	}
	if len(merged.Args) == 0 {
		merged.Args = nil
	}
	for i := range merged.Env {
		e := &merged.Env[i]
		if o := findEnv(override.Env, e.Name); o != nil {
			e.Value = o.Value
			e.ValueFrom = o.ValueFrom.DeepCopy()
		}
	}
	for _, om := range override.VolumeMounts {
		for _, bm := range base.VolumeMounts {
			if om.MountPath == bm.MountPath && om.Name != bm.Name {
				return fmt.Errorf("volumeMounts: mountPath %s mounts volume %q in the runtime and %q in the override",
					om.MountPath, bm.Name, om.Name)
			}
		}
	}
	return nil
}

func findContainer(list []corev1.Container, name string) *corev1.Container {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func findEnv(list []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// countSources counts the non-nil source pointers of a volume.
func countSources(vs corev1.VolumeSource) int {
	v := reflect.ValueOf(vs)
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}
