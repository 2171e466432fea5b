package revision

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/webhookpatch"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func toYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenPlan renders what one reconcile writes: the hub ConfigMap (three
// revisions, the first re-applied and so moved to newest) and the pods' merge patches
// (partition 1 of 3, update-order labels on).
func TestGoldenPlan(t *testing.T) {
	hub, revs := hubOf(t, data("a"), data("b"), data("c"))
	hub.ResourceVersion = "41"
	set := newSet(data("a"), partition(intstr.FromInt32(1)), func(s *ConfigMapSet) { s.Spec.InjectUpdateOrder = true })
	set.Status.CurrentRevision, set.Status.UpdateRevision = revs[2], revs[2]
	pods := []*corev1.Pod{revPod("p-0", revs[2], revs[2], true), revPod("p-1", revs[1], revs[1], true), revPod("p-2", revs[2], revs[2], true)}
	res := mustPlan(t, Input{Set: set, Hub: hub, Pods: pods, Now: now})
	if res.Hub.Action != kplan.ActionUpdate {
		t.Errorf("hub action %s, want %s", res.Hub.Action, kplan.ActionUpdate)
	}
	golden(t, "plan-hub.golden.yaml", toYAML(t, res.Hub.ConfigMap))
	var out bytes.Buffer
	for _, pp := range res.Pods {
		b, err := pp.MergePatch()
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(pp.Namespace + "/" + pp.Name + " " + string(b) + "\n")
	}
	for _, e := range res.Events {
		out.WriteString("event " + e.Type + " " + string(e.Reason) + ": " + e.Message + "\n")
	}
	out.Write(toYAML(t, res.Status))
	golden(t, "plan-patches.golden.txt", out.Bytes())
}

// TestGoldenInject renders an injected pod and the admission patch, in both sidecar
// modes, with one static and one fieldRef-selected container.
func TestGoldenInject(t *testing.T) {
	set := newSet(data("a"))
	set.Spec.Containers = append(set.Spec.Containers, ContainerInjectSpec{
		NameFrom: &ValueFromSource{FieldRef: corev1.ObjectFieldSelector{FieldPath: "metadata.labels['cName']"}}, MountPath: "/etc/side"})
	set.Status.UpdateRevision = RevisionHash(data("a"), 0)
	opts := SidecarOptions{Image: "registry.example.com/cms-reload:v1", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
	}}
	for _, c := range []struct{ file, version string }{{"inject-native", "v1.30.2"}, {"inject-launch-priority", "v1.28.9"}} {
		t.Run(c.file, func(t *testing.T) {
			before := podfixture.Pod("ns", "web-0", podfixture.Labels("app", "sample", "cName", "agent"), podfixture.Containers("main", "agent"))
			pod := before.DeepCopy()
			if _, err := Inject(pod, InjectInput{Set: set, KubeVersion: c.version, Sidecar: opts, Now: now}); err != nil {
				t.Fatal(err)
			}
			ops, err := webhookpatch.Diff(before, pod)
			if err != nil {
				t.Fatal(err)
			}
			patch, _, err := webhookpatch.Patch(ops)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.file+".golden.yaml", append(toYAML(t, pod), []byte("# admission patch:\n# "+string(patch)+"\n")...))
		})
	}
}
