package webhookpatch

import (
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Injector injects objects into pods on behalf of one component and records them in
// [RecordAnnotation] under its Name.
//
// Every Ensure method mutates the pod it is given (deep-copy first to keep the
// original for [Diff]), returns whether it changed anything, and is idempotent: a
// second call with the same input returns false and changes nothing. On a conflict it
// returns an error wrapping [ErrConflict] and leaves the pod unchanged. Each call is
// all or nothing on its own; [Injector.Apply] makes a sequence of calls all or
// nothing. An item the
// record says this injector owns is updated in place (its position is kept); an item
// the injector does not own is never overwritten. An item that already exists exactly
// as wanted but is not recorded is left alone and not recorded, so [Injector.Strip]
// never removes what the user wrote. An item the record holds with the content hash of
// what is wanted now is left as it is: the API server defaults fields of injected
// objects (a ConfigMap volume's defaultMode, a container's terminationMessagePath and
// imagePullPolicy), and a webhook re-invoked on the defaulted pod must not patch them
// away.
type Injector struct {
	// Name identifies the injecting component in the record, e.g. "ranktable". It must
	// be a DNS-1123 label.
	Name string
}

func (in Injector) check(pod *corev1.Pod) (record, error) {
	if pod == nil {
		return nil, fmt.Errorf("webhookpatch: nil pod")
	}
	if errs := validation.IsDNS1123Label(in.Name); len(errs) > 0 {
		return nil, fmt.Errorf("webhookpatch: injector name %q: %s", in.Name, errs[0])
	}
	return readRecord(pod)
}

func (in Injector) conflict(pod *corev1.Pod, field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w: %s (not injected by %q)", podRef(pod), field, ErrConflict,
		fmt.Sprintf(format, args...), in.Name)
}

// EnsureVolume makes the pod have volume v. A same-named volume with a different
// source that this injector did not inject is a conflict.
func (in Injector) EnsureVolume(pod *corev1.Pod, v corev1.Volume) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	if errs := validation.IsDNS1123Label(v.Name); len(errs) > 0 {
		return false, fmt.Errorf("%s: volume name %q: %s", podRef(pod), v.Name, errs[0])
	}
	item, hash := "volume/"+v.Name, contentHash(v)
	i := slices.IndexFunc(pod.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name })
	switch {
	case i < 0:
	case rec.injected(in.Name, item, hash):
		return false, nil // ours as injected; fields the API server defaulted stay
	case reflect.DeepEqual(pod.Spec.Volumes[i], v):
		if !rec.owns(in.Name, item) || rec.hash(in.Name, item) == hash {
			return false, nil
		}
	case rec.owns(in.Name, item):
	default:
		return false, in.conflict(pod, "spec.volumes["+v.Name+"]",
			"a volume named %q with a different source exists", v.Name)
	}
	rec.set(in.Name, item, hash)
	if err := checkAnnotationSize(pod, rec, "", ""); err != nil {
		return false, err
	}
	if i < 0 {
		pod.Spec.Volumes = append(pod.Spec.Volumes, *v.DeepCopy())
	} else {
		pod.Spec.Volumes[i] = *v.DeepCopy()
	}
	writeRecord(pod, rec)
	return true, nil
}

// EnsureInitContainer makes the pod have init container c, appended after the
// existing init containers. Container names are unique across init and app
// containers: a same-named container anywhere that differs and was not injected by
// this injector is a conflict. An env var name or envFrom prefix the API server
// rejects is an error (see [Injector.EnsureEnv] for the rule).
func (in Injector) EnsureInitContainer(pod *corev1.Pod, c corev1.Container) (bool, error) {
	return in.ensureContainer(pod, c, true, false)
}

// EnsureContainer makes the pod have app container c, appended after the existing app
// containers. Conflicts as for [Injector.EnsureInitContainer].
func (in Injector) EnsureContainer(pod *corev1.Pod, c corev1.Container) (bool, error) {
	return in.ensureContainer(pod, c, false, false)
}

// EnsureSidecar makes the pod run c as a sidecar that starts before, and keeps running
// beside, the app containers. With [SidecarNative] c is appended to initContainers with
// restartPolicy Always. With [SidecarLaunchPriority] c is placed first in containers
// (moved there if this injector had put it elsewhere) and [LaunchPriorityAnnotation]
// is set to "Ordered"; a different value of that annotation that this injector did not
// set is a conflict. Use [SidecarModeFor] to pick the mode from the cluster version.
func (in Injector) EnsureSidecar(pod *corev1.Pod, c corev1.Container, mode SidecarMode) (bool, error) {
	c = *c.DeepCopy()
	switch mode {
	case SidecarNative:
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
		return in.ensureContainer(pod, c, true, false)
	case SidecarLaunchPriority:
		c.RestartPolicy = nil
		before := pod.DeepCopy()
		changed, err := in.ensureContainer(pod, c, false, true)
		if err != nil {
			return false, err
		}
		annChanged, err := in.EnsureAnnotation(pod, LaunchPriorityAnnotation, "Ordered")
		if err != nil {
			*pod = *before // leave the pod unchanged on conflict
			return false, err
		}
		return changed || annChanged, nil
	}
	return false, fmt.Errorf("%s: sidecar %q: unknown sidecar mode %q (want %s or %s)", podRef(pod), c.Name, string(mode), SidecarNative, SidecarLaunchPriority)
}

func (in Injector) ensureContainer(pod *corev1.Pod, c corev1.Container, init, first bool) (bool, error) {
	rec, err := in.check(pod)
	if err != nil {
		return false, err
	}
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return false, fmt.Errorf("%s: container name %q: %s", podRef(pod), c.Name, errs[0])
	}
	if err := checkContainerEnv(pod, &c); err != nil {
		return false, err
	}
	kind, field, list := "container/", "spec.containers", &pod.Spec.Containers
	otherKind, other := "initContainer/", &pod.Spec.InitContainers
	if init {
		kind, field, list = "initContainer/", "spec.initContainers", &pod.Spec.InitContainers
		otherKind, other = "container/", &pod.Spec.Containers
	}
	item, hash := kind+c.Name, contentHash(c)
	byName := func(x corev1.Container) bool { return x.Name == c.Name }

	i := slices.IndexFunc(*list, byName)
	j := slices.IndexFunc(*other, byName)
	if j >= 0 {
		if i >= 0 {
			return false, fmt.Errorf("%s: %s[%s]: the name is used by an init and an app container", podRef(pod), field, c.Name)
		}
		if !rec.owns(in.Name, otherKind+c.Name) {
			return false, in.conflict(pod, field+"["+c.Name+"]",
				"a container named %q already exists", c.Name)
		}
		rec.unset(in.Name, otherKind+c.Name) // ours, in the other list: it moves
	}
	switch {
	case i < 0:
	case rec.injected(in.Name, item, hash) && (!first || i == 0):
		return false, nil // ours as injected; fields the API server defaulted stay
	case reflect.DeepEqual((*list)[i], c) && (!first || i == 0):
		if !rec.owns(in.Name, item) || rec.hash(in.Name, item) == hash {
			return false, nil
		}
	case rec.owns(in.Name, item):
	default:
		return false, in.conflict(pod, field+"["+c.Name+"]",
			"a different container named %q already exists", c.Name)
	}
	rec.set(in.Name, item, hash)
	if err := checkAnnotationSize(pod, rec, "", ""); err != nil {
		return false, err
	}
	if j >= 0 {
		*other = slices.Delete(*other, j, j+1)
		if len(*other) == 0 {
			*other = nil
		}
	}
	switch {
	case i < 0 && first:
		*list = slices.Insert(*list, 0, *c.DeepCopy())
	case i < 0:
		*list = append(*list, *c.DeepCopy())
	case first && i != 0:
		*list = slices.Insert(slices.Delete(*list, i, i+1), 0, *c.DeepCopy())
	default:
		(*list)[i] = *c.DeepCopy()
	}
	writeRecord(pod, rec)
	return true, nil
}
