package webhookpatch

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"

	"github.com/kplan-dev/kplan/internal/exact"
)

var (
	rankTable = Injector{Name: "ranktable"}
	other     = Injector{Name: "configmapset-demo"}

	emptyDir  = corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	configMap = corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-ranktable"}}}}
	waitInit = corev1.Container{Name: "wait-ranktable", Image: "busybox", Command: []string{"sh", "-c", "wait"}}
)

func TestEnsurePrimitives(t *testing.T) {
	cases := []struct {
		name        string
		pod         *corev1.Pod
		call        func(*corev1.Pod) (bool, error)
		wantChanged bool
		wantErr     string // substring; conflicts also wrap ErrConflict
		conflict    bool
		check       func(t *testing.T, p *corev1.Pod)
	}{
		{
			name: "a missing volume is appended and recorded",
			pod:  pf.Pod("ns", "p", pf.Containers("engine")),
			call: func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Volumes) != 1 || !strings.Contains(p.Annotations[RecordAnnotation], `"volume/ranktable"`) {
					t.Errorf("volumes %v record %q", p.Spec.Volumes, p.Annotations[RecordAnnotation])
				}
			},
			wantChanged: true,
		},
		{
			name:     "a user's same-named volume with another source is a conflict",
			pod:      pf.Pod("ns", "p", pf.Volume(emptyDir)),
			call:     func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			wantErr:  `pod ns/p: spec.volumes[ranktable]: conflict: a volume named "ranktable" with a different source exists (not injected by "ranktable")`,
			conflict: true,
		},
		{
			name: "a user's identical volume is kept and not recorded",
			pod:  pf.Pod("ns", "p", pf.Volume(configMap)),
			call: func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			check: func(t *testing.T, p *corev1.Pod) {
				if _, ok := p.Annotations[RecordAnnotation]; ok {
					t.Error("the user's volume was recorded as ours")
				}
			},
		},
		{
			name: "our volume with another source is updated in place",
			pod:  injected(t, pf.Pod("ns", "p", pf.Volume(corev1.Volume{Name: "first"})), func(p *corev1.Pod) error { _, err := rankTable.EnsureVolume(p, emptyDir); return err }),
			call: func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[1].ConfigMap == nil {
					t.Errorf("volumes %+v", p.Spec.Volumes)
				}
			},
			wantChanged: true,
		},
		{
			name:     "another injector's volume is a conflict",
			pod:      injected(t, pf.Pod("ns", "p"), func(p *corev1.Pod) error { _, err := other.EnsureVolume(p, emptyDir); return err }),
			call:     func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			wantErr:  "conflict",
			conflict: true,
		},
		{
			name: "an init container is appended after the user's",
			pod:  pf.Pod("ns", "p", pf.InitContainers("setup"), pf.Containers("engine")),
			call: func(p *corev1.Pod) (bool, error) { return rankTable.EnsureInitContainer(p, waitInit) },
			check: func(t *testing.T, p *corev1.Pod) {
				if names(p.Spec.InitContainers) != "setup,wait-ranktable" {
					t.Errorf("init containers %s", names(p.Spec.InitContainers))
				}
			},
			wantChanged: true,
		},
		{
			name:     "a user's app container with the init container's name is a conflict",
			pod:      pf.Pod("ns", "p", pf.Containers("wait-ranktable")),
			call:     func(p *corev1.Pod) (bool, error) { return rankTable.EnsureInitContainer(p, waitInit) },
			wantErr:  "spec.initContainers[wait-ranktable]: conflict",
			conflict: true,
		},
		{
			name: "a native sidecar is an init container that always restarts",
			pod:  pf.Pod("ns", "p", pf.Containers("engine")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureSidecar(p, corev1.Container{Name: "reload", Image: "r"}, SidecarNative)
			},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.InitContainers[0]
				if c.Name != "reload" || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
					t.Errorf("sidecar %+v", c)
				}
			},
			wantChanged: true,
		},
		{
			name: "a launch-priority sidecar goes first with the kruise annotation",
			pod:  pf.Pod("ns", "p", pf.Containers("engine", "proxy")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureSidecar(p, corev1.Container{Name: "reload", Image: "r"}, SidecarLaunchPriority)
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if names(p.Spec.Containers) != "reload,engine,proxy" || p.Annotations[LaunchPriorityAnnotation] != "Ordered" {
					t.Errorf("containers %s annotations %v", names(p.Spec.Containers), p.Annotations)
				}
			},
			wantChanged: true,
		},
		{
			name: "a user's other launch priority is a conflict and nothing changes",
			pod:  pf.Pod("ns", "p", pf.Containers("engine"), pf.Annotation(LaunchPriorityAnnotation, "Unordered")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureSidecar(p, corev1.Container{Name: "reload", Image: "r"}, SidecarLaunchPriority)
			},
			wantErr:  "metadata.annotations[apps.kruise.io/container-launch-priority]: conflict",
			conflict: true,
		},
		{
			name: "a mount goes into every app container",
			pod:  pf.Pod("ns", "p", pf.InitContainers("setup"), pf.Containers("engine", "proxy"), pf.Volume(configMap)),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureVolumeMount(p, corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/rt", ReadOnly: true}, ContainerSelector{})
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.InitContainers[0].VolumeMounts) != 0 || len(p.Spec.Containers[0].VolumeMounts) != 1 || len(p.Spec.Containers[1].VolumeMounts) != 1 {
					t.Errorf("mounts in the wrong containers: %+v", p.Spec)
				}
			},
			wantChanged: true,
		},
		{
			name: "a mountPath used by another volume in that container is a conflict",
			pod: pf.Pod("ns", "p", pf.Volume(configMap), pf.Volume(corev1.Volume{Name: "user"}), pf.Container(corev1.Container{
				Name: "engine", VolumeMounts: []corev1.VolumeMount{{Name: "user", MountPath: "/etc/rt"}}})),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureVolumeMount(p, corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/rt"}, ContainerSelector{})
			},
			wantErr:  `spec.containers[engine]: conflict: mountPath /etc/rt is already used by volume "user"`,
			conflict: true,
		},
		{
			name: "a mount of a volume the pod lacks is an error",
			pod:  pf.Pod("ns", "p", pf.Containers("engine")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureVolumeMount(p, corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/rt"}, ContainerSelector{})
			},
			wantErr: `the pod has no volume "ranktable"`,
		},
		{
			name: "a selector naming a missing container is an error",
			pod:  pf.Pod("ns", "p", pf.Containers("engine")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "A", Value: "1"}, ContainerSelector{Names: []string{"ghost"}})
			},
			wantErr: `container "ghost": no such container`,
		},
		{
			name: "env goes into named and not excluded containers only",
			pod:  pf.Pod("ns", "p", pf.InitContainers("setup"), pf.Containers("engine", "proxy")),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/etc/rt/ranktable.json"},
					ContainerSelector{IncludeInit: true, Exclude: []string{"proxy"}})
			},
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.InitContainers[0].Env) != 1 || len(p.Spec.Containers[0].Env) != 1 || len(p.Spec.Containers[1].Env) != 0 {
					t.Errorf("env in the wrong containers: %+v", p.Spec)
				}
			},
			wantChanged: true,
		},
		{
			name: "a user's env var with another value is a conflict in no container",
			pod: pf.Pod("ns", "p", pf.Containers("a"), pf.Container(corev1.Container{Name: "b",
				Env: []corev1.EnvVar{{Name: "RANKTABLEFILE", Value: "/mine"}}})),
			call: func(p *corev1.Pod) (bool, error) {
				return rankTable.EnsureEnv(p, corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/etc/rt"}, ContainerSelector{})
			},
			wantErr:  "spec.containers[b]: conflict: env var RANKTABLEFILE is already set differently",
			conflict: true,
		},
		{
			name:    "an annotation key that is not a qualified name is an error",
			pod:     pf.Pod("ns", "p"),
			call:    func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, "a/b/c", "v") },
			wantErr: "metadata.annotations[a/b/c]: key is not a qualified name",
		},
		{
			name:    "the record annotation cannot be set directly",
			pod:     pf.Pod("ns", "p"),
			call:    func(p *corev1.Pod) (bool, error) { return rankTable.EnsureAnnotation(p, RecordAnnotation, "{}") },
			wantErr: "reserved",
		},
		{
			name:    "a label value that is not valid is an error",
			pod:     pf.Pod("ns", "p"),
			call:    func(p *corev1.Pod) (bool, error) { return rankTable.EnsureLabel(p, "app", "not valid!") },
			wantErr: `metadata.labels[app]: value "not valid!"`,
		},
		{
			name:     "a user's label with another value is a conflict",
			pod:      pf.Pod("ns", "p", pf.Labels("app", "mine")),
			call:     func(p *corev1.Pod) (bool, error) { return rankTable.EnsureLabel(p, "app", "qwen") },
			wantErr:  `metadata.labels[app]: conflict: the label is already set to "mine"`,
			conflict: true,
		},
		{
			name:    "an injector name that is not a DNS label is an error",
			pod:     pf.Pod("ns", "p"),
			call:    func(p *corev1.Pod) (bool, error) { return Injector{Name: "Rank_Table"}.EnsureVolume(p, configMap) },
			wantErr: `injector name "Rank_Table"`,
		},
		{
			name:    "a corrupt record is an error naming the annotation",
			pod:     pf.Pod("ns", "p", pf.Annotation(RecordAnnotation, "{not json")),
			call:    func(p *corev1.Pod) (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			wantErr: "pod ns/p: annotation kplan.dev/injected",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := c.pod.DeepCopy()
			changed, err := c.call(pod)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				if errors.Is(err, ErrConflict) != c.conflict {
					t.Errorf("errors.Is(err, ErrConflict) = %v, want %v", !c.conflict, c.conflict)
				}
				if diff := cmp.Diff(c.pod, pod, exact.Options); diff != "" {
					t.Errorf("a failed call changed the pod (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if changed != c.wantChanged {
				t.Errorf("changed = %v, want %v", changed, c.wantChanged)
			}
			if c.check != nil {
				c.check(t, pod)
			}
			if errs := Validate(pod); len(errs) > 0 {
				t.Errorf("result fails Validate: %v", errs)
			}
			again, err := c.call(pod)
			if again || err != nil {
				t.Errorf("second call: changed=%v err=%v", again, err)
			}
		})
	}
}

func TestStripRefusesToLeaveAMountDangling(t *testing.T) {
	pod := pf.Pod("ns", "p", pf.Containers("engine"))
	must(t, func() (bool, error) { return rankTable.EnsureVolume(pod, configMap) })
	must(t, func() (bool, error) {
		return other.EnsureVolumeMount(pod, corev1.VolumeMount{Name: "ranktable", MountPath: "/x"}, ContainerSelector{})
	})
	before := pod.DeepCopy()
	_, err := rankTable.Strip(pod)
	if err == nil || !strings.Contains(err.Error(), `container "engine" still mounts volume "ranktable" at /x`) {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
		t.Fatalf("a failed Strip changed the pod (-before +after):\n%s", diff)
	}
	must(t, func() (bool, error) { return other.Strip(pod) })
	must(t, func() (bool, error) { return rankTable.Strip(pod) })
	if len(pod.Spec.Volumes) != 0 || pod.Annotations != nil {
		t.Fatalf("not stripped: %+v %v", pod.Spec.Volumes, pod.Annotations)
	}
}

func TestOursMovesBetweenInitAndAppContainers(t *testing.T) {
	pod := pf.Pod("ns", "p", pf.Containers("engine"))
	side := corev1.Container{Name: "reload", Image: "r"}
	must(t, func() (bool, error) { return rankTable.EnsureSidecar(pod, side, SidecarLaunchPriority) })
	must(t, func() (bool, error) { return rankTable.EnsureSidecar(pod, side, SidecarNative) })
	if names(pod.Spec.Containers) != "engine" || names(pod.Spec.InitContainers) != "reload" {
		t.Fatalf("containers %s init %s", names(pod.Spec.Containers), names(pod.Spec.InitContainers))
	}
}

func injected(t *testing.T, pod *corev1.Pod, f func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	if err := f(pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func must(t *testing.T, f func() (bool, error)) {
	t.Helper()
	if changed, err := f(); err != nil || !changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
}

func names(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

// TestReinjectionLeavesServerDefaultsAlone re-runs the injection on a pod as the API
// server returns it: the objects we injected now carry defaulted fields. A webhook
// re-invoked on that pod must change nothing and return an empty patch; a changed
// wanted object must still replace ours.
func TestReinjectionLeavesServerDefaultsAlone(t *testing.T) {
	mount := corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/ascend/ranktable", ReadOnly: true}
	sidecar := corev1.Container{Name: "reload", Image: "reloader:v1"}
	inject := func(p *corev1.Pod, wait corev1.Container) (bool, error) {
		changed := false
		for _, step := range []func() (bool, error){
			func() (bool, error) { return rankTable.EnsureVolume(p, configMap) },
			func() (bool, error) { return rankTable.EnsureInitContainer(p, wait) },
			func() (bool, error) { return rankTable.EnsureSidecar(p, sidecar, SidecarNative) },
			func() (bool, error) {
				return rankTable.EnsureVolumeMount(p, mount, ContainerSelector{Exclude: []string{"reload"}})
			},
		} {
			c, err := step()
			if err != nil {
				return false, err
			}
			changed = changed || c
		}
		return changed, nil
	}
	applyServerDefaults := func(p *corev1.Pod) {
		mode := int32(0o644)
		p.Spec.Volumes[0].ConfigMap.DefaultMode = &mode
		for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				list[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
				list[i].TerminationMessagePolicy = corev1.TerminationMessageReadFile
				list[i].ImagePullPolicy = corev1.PullIfNotPresent
			}
		}
	}

	pod := pf.Pod("ns", "p", pf.Containers("engine"))
	if changed, err := inject(pod, waitInit); err != nil || !changed {
		t.Fatalf("first injection: changed=%v err=%v", changed, err)
	}
	applyServerDefaults(pod)
	stored := pod.DeepCopy()

	again := stored.DeepCopy()
	changed, err := inject(again, waitInit)
	if err != nil || changed {
		t.Fatalf("re-injection on the defaulted pod: changed=%v err=%v", changed, err)
	}
	ops, err := Diff(stored, again)
	if err != nil || len(ops) != 0 {
		t.Fatalf("re-injection patch = %v, %v; want no operations", ops, err)
	}

	newWait := *waitInit.DeepCopy()
	newWait.Image = "busybox:1.37"
	changed, err = inject(again, newWait)
	if err != nil || !changed {
		t.Fatalf("injection of a changed init container: changed=%v err=%v", changed, err)
	}
	if got := again.Spec.InitContainers[0]; got.Image != "busybox:1.37" || got.TerminationMessagePath != "" {
		t.Errorf("the changed init container replaced ours as wanted: got image %q, terminationMessagePath %q",
			got.Image, got.TerminationMessagePath)
	}
}
