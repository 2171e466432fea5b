package revision

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
)

func injectInput(set *ConfigMapSet, version string) InjectInput {
	return InjectInput{Set: set, KubeVersion: version, Sidecar: SidecarOptions{Image: "reload:1"}, Now: now}
}

func TestInject(t *testing.T) {
	set := newSet(data("a"))
	set.Spec.Containers = append(set.Spec.Containers, ContainerInjectSpec{
		NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['cName']"}}, MountPath: "/data/c3"})
	set.Status.UpdateRevision = "upd"
	pod := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample", "cName", "side"), podfixture.Containers("main", "side"))

	t.Run("native mode adds an init sidecar, volumes, mounts and the revision", func(t *testing.T) {
		p := pod.DeepCopy()
		res, err := Inject(p, injectInput(set, "v1.30.0"))
		if err != nil || !res.Changed || res.Revision != "upd" {
			t.Fatalf("%+v %v", res, err)
		}
		if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != "cms-reload-cms1" {
			t.Errorf("init containers %+v", p.Spec.InitContainers)
		}
		for _, c := range p.Spec.Containers {
			if len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly {
				t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
			}
		}
		if p.Annotations[testKeys.UpdateRevision] != "upd" || p.Annotations[testKeys.UpdateRevisionTimestamp] != FormatTimestamp(now) {
			t.Errorf("annotations %v", p.Annotations)
		}
		t.Run("a second injection changes nothing", func(t *testing.T) {
			q := p.DeepCopy()
			res, err := Inject(q, injectInput(set, "v1.30.0"))
			ops, _ := webhookpatch.Diff(p, q)
			if err != nil || res.Changed || len(ops) != 0 {
				t.Errorf("%+v %v %v", res, err, ops)
			}
		})
	})
	t.Run("before 1.29 the sidecar runs first with launch priority", func(t *testing.T) {
		p := pod.DeepCopy()
		if _, err := Inject(p, injectInput(set, "v1.28.5")); err != nil {
			t.Fatal(err)
		}
		if p.Spec.Containers[0].Name != "cms-reload-cms1" || p.Annotations[webhookpatch.LaunchPriorityAnnotation] != "Ordered" {
			t.Errorf("containers %v", p.Spec.Containers)
		}
	})
	t.Run("a fieldRef container the pod lacks is pending", func(t *testing.T) {
		p := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"))
		res, err := Inject(p, injectInput(set, "v1.30.0"))
		if err != nil || len(res.Pending) != 1 {
			t.Errorf("%+v %v", res, err)
		}
	})
	t.Run("a missing static container is an error and the pod is unchanged", func(t *testing.T) {
		p := podfixture.Pod("ns", "p", podfixture.Containers("other"))
		before := p.DeepCopy()
		_, err := Inject(p, injectInput(set, "v1.30.0"))
		if err == nil || !strings.Contains(err.Error(), "pod ns/p") {
			t.Errorf("err %v", err)
		}
		if ops, _ := webhookpatch.Diff(before, p); len(ops) != 0 {
			t.Errorf("pod changed: %v", ops)
		}
	})
	t.Run("two sets on one container and path conflict", func(t *testing.T) {
		p := pod.DeepCopy()
		if _, err := Inject(p, injectInput(set, "v1.30.0")); err != nil {
			t.Fatal(err)
		}
		other := set.DeepCopy()
		other.Name = "cms2"
		_, err := Inject(p, injectInput(other, "v1.30.0"))
		if !errors.Is(err, webhookpatch.ErrConflict) {
			t.Errorf("err = %v, want a conflict", err)
		}
	})
	t.Run("pause injects nothing", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.InjectStrategy.Pause = true
		p := pod.DeepCopy()
		if res, err := Inject(p, injectInput(s, "v1.30.0")); err != nil || res.Changed {
			t.Errorf("%+v %v", res, err)
		}
	})
}

// TestInjectGivesTheSidecarItsWholeConfiguration: the reload sidecar's environment
// names the wanted revision, the hub file, the data directory, the set and, through
// the downward API, the pod, in both sidecar modes; nothing else is needed to run
// a node agent.
func TestInjectGivesTheSidecarItsWholeConfiguration(t *testing.T) {
	set := newSet(data("a"))
	keys, err := KeysFor(set.Name)
	if err != nil {
		t.Fatal(err)
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	want := []corev1.EnvVar{
		{Name: EnvRevision, ValueFrom: field("metadata.annotations['" + keys.UpdateRevision + "']")},
		{Name: EnvHubFile, Value: SidecarHubPath + "/" + HubDataKey},
		{Name: EnvDataDir, Value: SidecarDataPath},
		{Name: EnvSetName, Value: set.Name},
		{Name: EnvPodName, ValueFrom: field("metadata.name")},
		{Name: EnvPodNamespace, ValueFrom: field("metadata.namespace")},
	}
	for _, version := range []string{"v1.30.0", "v1.28.5"} {
		t.Run(version, func(t *testing.T) {
			p := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main", "side"))
			if _, err := Inject(p, injectInput(set, version)); err != nil {
				t.Fatal(err)
			}
			var got []corev1.EnvVar
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if c.Name == ReloadSidecarName(set.Name) {
					got = c.Env
				}
			}
			if diff := cmp.Diff(want, got, exact.Options); diff != "" {
				t.Errorf("sidecar env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInitialRevision(t *testing.T) {
	set := newSet(data("a"), partition(intstr.FromString("50%")))
	set.Status.UpdateRevision, set.Status.CurrentRevision = "upd", "cur"
	tests := []struct {
		name string
		pods []string // wanted revisions of the other pods
		want string
	}{
		// 3 pods with the new one: 50% -> 2 kept, 1 updated; none yet -> upd.
		{"the new pod updates while too few pods have the update", []string{"cur", "cur"}, "upd"},
		// 4 pods: 2 kept, 2 updated; 2 already -> cur.
		{"the new pod stays old once enough pods have the update", []string{"upd", "upd", "cur"}, "cur"},
		// 1 pod: 50% of 1 rounds up to 1 kept; with one pod no one-less rule.
		{"a lone pod is kept when the percent rounds up to it", nil, "cur"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for i, r := range tt.pods {
				pods = append(pods, revPod(string(rune('a'+i)), r, r, true))
			}
			if got := initialRevision(set, pods); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestInjectErrors(t *testing.T) {
	pod := podfixture.Pod("ns", "p", podfixture.Labels("app", "sample"), podfixture.Containers("main"))
	tests := []struct {
		name   string
		change func(*InjectInput)
		want   string
	}{
		{"an invalid set names the field", func(in *InjectInput) { in.Set.Spec.Containers = nil }, "pod ns/p: configmapset cms1: spec.containers"},
		{"a missing sidecar image is required", func(in *InjectInput) { in.Sidecar.Image = "" }, "sidecar image: required"},
		{"a bad kube version is an error", func(in *InjectInput) { in.KubeVersion = "one" }, "kube version"},
		{"a bad fieldRef key in the pod spec is reported by validation", func(in *InjectInput) {
			in.Set.Spec.Containers = append(in.Set.Spec.Containers, ContainerInjectSpec{
				NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['a b']"}}, MountPath: "/x"})
		}, "fieldPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := injectInput(newSet(data("a")), "v1.30.0")
			tt.change(&in)
			p := pod.DeepCopy()
			_, err := Inject(p, in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if ops, _ := webhookpatch.Diff(pod, p); len(ops) != 0 {
				t.Errorf("pod changed: %v", ops)
			}
		})
	}
}
