package revision

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
)

// markers returns each container's EnvContainerName value ("-" when unset).
func markers(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			out[c.Name] = "-"
			for _, e := range c.Env {
				if e.Name == EnvContainerName {
					out[c.Name] = e.Value
				}
			}
		}
	}
	return out
}

// With restartInjectedContainers, Inject prepares the signal restart: one process
// namespace for the pod and a marker naming each injected container.
func TestInjectPreparesSignalRestarts(t *testing.T) {
	restarting := func(s *ConfigMapSet) {
		s.Spec.UpdateStrategy.RestartInjectedContainers = true
		s.Spec.Containers = append(s.Spec.Containers, ContainerInjectSpec{
			NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['cName']"}}, MountPath: "/data/c3"})
	}
	newPod := func() *corev1.Pod {
		return podfixture.Pod("ns", "p", podfixture.Labels("app", "sample", "cName", "side"), podfixture.Containers("main", "side", "other"))
	}
	sidecar := ReloadSidecarName("cms1")

	t.Run("the pod shares its process namespace and each injected container is marked with its name", func(t *testing.T) {
		p := newPod()
		res, err := Inject(p, injectInput(newSet(data("a"), restarting), "v1.30.0"))
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Spec.ShareProcessNamespace; s == nil || !*s {
			t.Errorf("shareProcessNamespace = %v, want true", s)
		}
		want := map[string]string{sidecar: "-", "main": "main", "side": "side", "other": "-"}
		if diff := cmp.Diff(want, markers(p)); diff != "" {
			t.Errorf("markers (-want +got):\n%s", diff)
		}
		for _, item := range []string{"env/main/" + EnvContainerName, "env/side/" + EnvContainerName} {
			if !slices.Contains(res.Items, item) {
				t.Errorf("Items %q lack %s", res.Items, item)
			}
		}
		t.Run("a second injection changes nothing", func(t *testing.T) {
			q := p.DeepCopy()
			res, err := Inject(q, injectInput(newSet(data("a"), restarting), "v1.30.0"))
			if err != nil || res.Changed || res.Items != nil {
				t.Fatalf("%+v %v", res, err)
			}
			if diff := cmp.Diff(p, q, exact.Options); diff != "" {
				t.Errorf("pod changed (-once +twice):\n%s", diff)
			}
		})
	})
	t.Run("without restartInjectedContainers the pod keeps its own process namespace and no marker is set", func(t *testing.T) {
		p := newPod()
		s := newSet(data("a"), restarting)
		s.Spec.UpdateStrategy.RestartInjectedContainers = false
		if _, err := Inject(p, injectInput(s, "v1.30.0")); err != nil {
			t.Fatal(err)
		}
		if p.Spec.ShareProcessNamespace != nil {
			t.Errorf("shareProcessNamespace = %v, want unset", *p.Spec.ShareProcessNamespace)
		}
		for c, m := range markers(p) {
			if m != "-" {
				t.Errorf("container %s is marked %q", c, m)
			}
		}
	})
	t.Run("restartMethod Signal is the default, External leaves the pod's process namespaces and markers alone", func(t *testing.T) {
		for _, m := range []RestartMethod{"", RestartSignal, RestartExternal} {
			p := newPod()
			s := newSet(data("a"), restarting)
			s.Spec.UpdateStrategy.RestartMethod = m
			if _, err := Inject(p, injectInput(s, "v1.30.0")); err != nil {
				t.Fatal(err)
			}
			signal := m != RestartExternal
			if shared := p.Spec.ShareProcessNamespace != nil && *p.Spec.ShareProcessNamespace; shared != signal {
				t.Errorf("restartMethod %q: shareProcessNamespace %v", m, shared)
			}
			if marked := markers(p)["main"] == "main"; marked != signal {
				t.Errorf("restartMethod %q: main marked %v", m, marked)
			}
		}
	})
	t.Run("a pod that shares the process namespace already keeps it", func(t *testing.T) {
		p := newPod()
		yes := true
		p.Spec.ShareProcessNamespace = &yes
		if _, err := Inject(p, injectInput(newSet(data("a"), restarting), "v1.30.0")); err != nil {
			t.Fatal(err)
		}
		if !*p.Spec.ShareProcessNamespace || markers(p)["main"] != "main" {
			t.Errorf("shareProcessNamespace %v, markers %v", *p.Spec.ShareProcessNamespace, markers(p))
		}
	})
	t.Run("a pod on the host's process namespace is marked and left on it", func(t *testing.T) {
		p := newPod()
		p.Spec.HostPID = true
		if _, err := Inject(p, injectInput(newSet(data("a"), restarting), "v1.30.0")); err != nil {
			t.Fatal(err)
		}
		if p.Spec.ShareProcessNamespace != nil || markers(p)["main"] != "main" {
			t.Errorf("shareProcessNamespace %v, markers %v", p.Spec.ShareProcessNamespace, markers(p))
		}
	})
	t.Run("a marker added by another set's injection of the same container is shared", func(t *testing.T) {
		p := newPod()
		if _, err := Inject(p, injectInput(newSet(data("a"), restarting), "v1.30.0")); err != nil {
			t.Fatal(err)
		}
		other := newSet(data("b"), func(s *ConfigMapSet) {
			s.Name = "cms2"
			s.Spec.UpdateStrategy.RestartInjectedContainers = true
			s.Spec.Containers = []ContainerInjectSpec{{Name: "main", MountPath: "/data/other"}}
		})
		if _, err := Inject(p, injectInput(other, "v1.30.0")); err != nil {
			t.Fatalf("a second set on the same container: %v", err)
		}
		if got := markers(p)["main"]; got != "main" {
			t.Errorf("marker %q", got)
		}
	})

	conflicts := []struct {
		name  string
		pod   func(*corev1.Pod)
		field string // in the error
	}{
		{"a pod that sets shareProcessNamespace false", func(p *corev1.Pod) {
			no := false
			p.Spec.ShareProcessNamespace = &no
		}, "spec.shareProcessNamespace is false"},
		{"a container whose own marker variable names something else", func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = []corev1.EnvVar{{Name: EnvContainerName, Value: "main"}}
		}, EnvContainerName},
	}
	for _, tt := range conflicts {
		t.Run(tt.name+" is a conflict and the pod is left as it was", func(t *testing.T) {
			p := newPod()
			tt.pod(p)
			before := p.DeepCopy()
			res, err := Inject(p, injectInput(newSet(data("a"), restarting), "v1.30.0"))
			if !errors.Is(err, webhookpatch.ErrConflict) || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), "pod ns/p") {
				t.Fatalf("err = %v, want a conflict naming the pod and %q", err, tt.field)
			}
			if diff := cmp.Diff(before, p, exact.Options); diff != "" {
				t.Errorf("the pod changed on error (-before +after):\n%s", diff)
			}
			if res.Changed || res.Items != nil {
				t.Errorf("result %+v", res)
			}
		})
	}
}
