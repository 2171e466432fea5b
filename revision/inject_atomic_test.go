package revision

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// Inject is all or nothing: a problem found after the volumes, the sidecar or some
// mounts were injected leaves the pod exactly as it was.
func TestInjectIsAllOrNothing(t *testing.T) {
	twoContainers := func(s *ConfigMapSet) {
		s.Spec.Containers = append(s.Spec.Containers, ContainerInjectSpec{Name: "side", MountPath: "/data/side"})
	}
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	tests := []struct {
		name     string
		opts     []func(*ConfigMapSet)
		version  string
		pod      func() *corev1.Pod
		want     string // in the error
		conflict bool
	}{
		{"a mount the user wrote in the second container, after the volumes, the sidecar and the first mount",
			[]func(*ConfigMapSet){twoContainers}, "v1.30.0",
			func() *corev1.Pod {
				p := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main", "side"))
				p.Spec.Volumes = []corev1.Volume{scratch}
				p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/data/side"}}
				return p
			}, "spec.containers[1]", true},
		{"a static container the pod lacks, after the first container's mount",
			[]func(*ConfigMapSet){twoContainers}, "v1.30.0",
			func() *corev1.Pod {
				return podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"))
			}, `container "side": no such container`, false},
		{"a revision timestamp the user wrote, found last",
			nil, "v1.30.0",
			func() *corev1.Pod {
				return podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"),
					podfixture.Annotation(testKeys.UpdateRevisionTimestamp, "12"))
			}, testKeys.UpdateRevisionTimestamp, true},
		{"another launch priority, found after the sidecar was placed first",
			nil, "v1.28.5",
			func() *corev1.Pod {
				return podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"),
					podfixture.Annotation(webhookpatch.LaunchPriorityAnnotation, "Parallel"))
			}, webhookpatch.LaunchPriorityAnnotation, true},
		{"a pod the injection leaves invalid, found after every step",
			nil, "v1.30.0",
			func() *corev1.Pod {
				p := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main", "other"))
				p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "ghost", MountPath: "/ghost"}}
				return p
			}, "injected pod is invalid", false},
		{"annotations the injection record would take over the limit",
			nil, "v1.30.0",
			func() *corev1.Pod {
				return podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"),
					podfixture.Annotation("example.com/big", strings.Repeat("x", 256*1024-len("example.com/big")-200)))
			}, "metadata.annotations", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod()
			before := pod.DeepCopy()
			res, err := Inject(pod, injectInput(newSet(data("a"), tt.opts...), tt.version))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "pod ns/p") {
				t.Fatalf("err = %v, want one naming the pod and %q", err, tt.want)
			}
			if errors.Is(err, webhookpatch.ErrConflict) != tt.conflict {
				t.Errorf("a conflict: %v, want %v (%v)", !tt.conflict, tt.conflict, err)
			}
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Errorf("the pod changed on error (-before +after):\n%s", diff)
			}
			if res.Changed || res.Items != nil || res.Revision != "" || res.Pending != nil {
				t.Errorf("result on error %+v, want the zero InjectResult", res)
			}
		})
	}
}

// For random sets and pods holding random obstacles (objects of the same names, mounts
// on the same paths, the set's annotations, another set's injection, annotations
// near the size limit, a pod made invalid), in both sidecar modes: on every error the
// pod is exactly the input; on success it is valid, Items names exactly the record
// items of the set's injector that changed, and injecting again changes nothing.
func TestInjectProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		set := drawInjectSet(t, "cms1")
		pod := drawInjectPod(t, set)
		version := rapid.SampledFrom([]string{"v1.28.5", "v1.30.0"}).Draw(t, "kubeVersion")
		in := InjectInput{Set: set, KubeVersion: version, Sidecar: SidecarOptions{Image: "reload:1"}, Now: now}
		if rapid.Bool().Draw(t, "otherSetFirst") {
			// Another set injected the pod first (its errors leave the pod as drawn).
			_, _ = Inject(pod, InjectInput{Set: drawInjectSet(t, "cms2"), KubeVersion: version, Sidecar: SidecarOptions{Image: "reload:2"}, Now: now})
		}

		before := pod.DeepCopy()
		res, err := Inject(pod, in)
		if err != nil {
			if diff := cmp.Diff(before, pod, exact.Options); diff != "" {
				t.Fatalf("Inject failed (%v) but changed the pod (-before +after):\n%s", err, diff)
			}
			if !strings.Contains(err.Error(), "pod ns/p") {
				t.Fatalf("the error does not name the pod: %v", err)
			}
			return
		}
		if errs := webhookpatch.Validate(pod); len(errs) > 0 {
			t.Fatalf("injected pod is invalid: %v", errs)
		}
		if res.Changed != !equality.Semantic.DeepEqual(before, pod) {
			t.Fatalf("Changed = %v for a pod that %s", res.Changed, map[bool]string{true: "did not change", false: "changed"}[res.Changed])
		}
		if want := recordChanges(t, before, pod, InjectorName(set.Name)); !slices.Equal(res.Items, want) {
			t.Fatalf("Items = %q, the record changed %q", res.Items, want)
		}
		if got := pod.Annotations[testKeys.UpdateRevision]; res.Revision != got || got == "" {
			t.Fatalf("Revision = %q, the pod wants %q", res.Revision, got)
		}
		checkSignalRestart(t, set, before, pod)
		once := pod.DeepCopy()
		again, err := Inject(pod, in)
		if err != nil || again.Changed || again.Items != nil {
			t.Fatalf("second injection: %+v, %v", again, err)
		}
		if diff := cmp.Diff(once, pod, exact.Options); diff != "" {
			t.Fatalf("second injection changed the pod (-once +twice):\n%s", diff)
		}
	})
}

// checkSignalRestart checks what Inject did for signal restarts: with
// restartInjectedContainers and restartMethod Signal (or empty) the pod shares one process namespace (or stays on the
// host's) and every container that mounts the set's volume, but its sidecar, carries EnvContainerName
// with its own name; without it, the process namespace and the marker variables are
// as they were.
func checkSignalRestart(t *rapid.T, set *ConfigMapSet, before, pod *corev1.Pod) {
	us := set.Spec.UpdateStrategy
	restart := us.RestartInjectedContainers && us.RestartMethod != RestartExternal
	share := pod.Spec.ShareProcessNamespace
	switch {
	case !restart || pod.Spec.HostPID:
		if !equality.Semantic.DeepEqual(before.Spec.ShareProcessNamespace, share) {
			t.Fatalf("shareProcessNamespace changed from %v to %v (restart %v, hostPID %v)", before.Spec.ShareProcessNamespace, share, restart, pod.Spec.HostPID)
		}
	case share == nil || !*share:
		t.Fatalf("shareProcessNamespace = %v with restartInjectedContainers", share)
	}
	was, now := markers(before), markers(pod)
	vol := VolumeName(set.Name)
	for _, c := range pod.Spec.Containers {
		mounts := c.Name != ReloadSidecarName(set.Name) && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol })
		switch {
		case restart && mounts && now[c.Name] != c.Name:
			t.Fatalf("container %s mounts the files but its marker is %q", c.Name, now[c.Name])
		case (!restart || !mounts) && now[c.Name] != was[c.Name] && was[c.Name] != "":
			t.Fatalf("container %s: marker %q became %q", c.Name, was[c.Name], now[c.Name])
		}
	}
}

// drawInjectSet draws a valid set named name with one to three containers, some by
// nameFrom, and a partition.
func drawInjectSet(t *rapid.T, name string) *ConfigMapSet {
	specs := []ContainerInjectSpec{
		{Name: "main", MountPath: "/data/conf"},
		{Name: "side", MountPath: "/data/side"},
		{NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['cName']"}}, MountPath: "/data/c3"},
	}
	chosen := rapid.SliceOfNDistinct(rapid.IntRange(0, len(specs)-1), 1, len(specs), rapid.ID).Draw(t, name+"Containers")
	set := newSet(data(rapid.SampledFrom([]string{"a", "b"}).Draw(t, name+"Data")))
	set.Name = name
	set.Spec.Containers = nil
	for _, i := range chosen {
		set.Spec.Containers = append(set.Spec.Containers, *specs[i].DeepCopy())
	}
	set.Spec.UpdateStrategy.RestartInjectedContainers = rapid.Bool().Draw(t, name+"Restart")
	set.Spec.UpdateStrategy.RestartMethod = rapid.SampledFrom([]RestartMethod{"", RestartSignal, RestartExternal}).Draw(t, name+"RestartMethod")
	if rapid.Bool().Draw(t, name+"Partition") {
		p := intstr.FromString("50%")
		set.Spec.UpdateStrategy.Partition = &p
		set.Status.UpdateRevision, set.Status.CurrentRevision = "upd", "cur"
	}
	return set
}

// drawInjectPod draws a pod the set selects, with obstacles at every step of Inject.
func drawInjectPod(t *rapid.T, set *ConfigMapSet) *corev1.Pod {
	containers := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"main", "side", "other"}), 1, 3, rapid.ID).Draw(t, "podContainers")
	pod := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers(containers...))
	if c := rapid.SampledFrom([]string{"", "side", "other", "missing"}).Draw(t, "cName"); c != "" {
		pod.Labels["cName"] = c
	}
	keys := mustKeys(set.Name)
	annotate := func(k, v string) {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	scratch := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	for _, o := range rapid.SliceOfDistinct(rapid.IntRange(0, 12), rapid.ID).Draw(t, "obstacles") {
		switch o {
		case 0: // the files' volume, as Inject would make it or with another source
			v := corev1.Volume{Name: VolumeName(set.Name), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			if rapid.Bool().Draw(t, "volumeDiffers") {
				v.EmptyDir.Medium = corev1.StorageMediumMemory
			}
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		case 1: // the hub's volume naming another ConfigMap
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: HubVolumeName(set.Name), VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}})
		case 2: // a container of the sidecar's name
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: ReloadSidecarName(set.Name), Image: "user:1"})
		case 3: // the user's mount on a path the set mounts at, in one of the containers
			if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "scratch" }) {
				pod.Spec.Volumes = append(pod.Spec.Volumes, scratch)
			}
			c := &pod.Spec.Containers[rapid.IntRange(0, len(pod.Spec.Containers)-1).Draw(t, "mountIn")]
			path := rapid.SampledFrom([]string{"/data/conf", "/data/side", "/data/c3"}).Draw(t, "mountPath")
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: path})
		case 4: // a wanted revision already set (Inject keeps it)
			annotate(keys.UpdateRevision, rapid.SampledFrom([]string{"upd", "cur", "zzz"}).Draw(t, "wanted"))
		case 5: // a revision timestamp alone, found last
			annotate(keys.UpdateRevisionTimestamp, rapid.SampledFrom([]string{"12", FormatTimestamp(now)}).Draw(t, "timestamp"))
		case 6: // another launch priority (a conflict before Kubernetes 1.29)
			annotate(webhookpatch.LaunchPriorityAnnotation, rapid.SampledFrom([]string{"Ordered", "Parallel"}).Draw(t, "priority"))
		case 7: // annotations so close to the limit that some step of the record tips them over
			annotate("example.com/big", strings.Repeat("x", 256*1024-len("example.com/big")-rapid.IntRange(50, 1200).Draw(t, "room")))
		case 8: // a mount of a volume the pod lacks: only Validate, after every step, sees it
			c := &pod.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ghost", MountPath: "/ghost"})
		case 9: // an unreadable injection record
			annotate(webhookpatch.RecordAnnotation, "{")
		case 10: // the pod's own choice of process namespace (false is a conflict with restarts)
			v := rapid.Bool().Draw(t, "shareProcessNamespace")
			pod.Spec.ShareProcessNamespace = &v
		case 11: // the host's process namespace
			pod.Spec.HostPID = true
		case 12: // the marker variable, set by the user in one container, right or wrong
			c := &pod.Spec.Containers[rapid.IntRange(0, len(pod.Spec.Containers)-1).Draw(t, "markerIn")]
			v := rapid.SampledFrom([]string{c.Name, "main", "x"}).Draw(t, "markerValue")
			c.Env = append(c.Env, corev1.EnvVar{Name: EnvContainerName, Value: v})
		}
	}
	return pod
}

// recordChanges lists the record items of injector that differ between a and b.
func recordChanges(t *rapid.T, a, b *corev1.Pod, injector string) []string {
	items, err := podfixture.RecordChanges(a, b, webhookpatch.RecordAnnotation, injector)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return items
}
