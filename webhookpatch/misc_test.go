package webhookpatch

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pf "github.com/kplan-dev/kplan/internal/podfixture"
)

func TestSidecarModeFor(t *testing.T) {
	cases := []struct {
		version string
		want    SidecarMode
	}{
		{"v1.28.15", SidecarLaunchPriority}, // gate off by default in 1.28
		{"1.27", SidecarLaunchPriority},
		{"v1.29.0", SidecarNative},
		{"v1.30.2-eks-1a2b3c", SidecarNative},
		{"v1.33.0+k3s1", SidecarNative},
		{"2.0", SidecarNative},
	}
	for _, c := range cases {
		t.Run(c.version, func(t *testing.T) {
			got, err := SidecarModeFor(c.version)
			if err != nil || got != c.want {
				t.Fatalf("SidecarModeFor(%q) = %v, %v; want %v", c.version, got, err, c.want)
			}
		})
	}
	for _, bad := range []string{"", "v1", "one.two", "v1.x", "-1.30"} {
		if _, err := SidecarModeFor(bad); err == nil {
			t.Errorf("SidecarModeFor(%q): want an error", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	probe := &corev1.Probe{}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string // field paths with errors, in order
	}{
		{"a valid pod has no errors", pf.Pod("ns", "p", pf.InitContainers("i"), pf.Containers("a")), nil},
		{"container names are unique across init and app", pf.Pod("ns", "p", pf.InitContainers("a"), pf.Containers("a")),
			[]string{"spec.containers[0].name"}},
		{"container names are DNS labels", pf.Pod("ns", "p", pf.Containers("Engine")), []string{"spec.containers[0].name"}},
		{"volume names are unique", pf.Pod("ns", "p", pf.Volume(corev1.Volume{Name: "v"}), pf.Volume(corev1.Volume{Name: "v"})),
			[]string{"spec.volumes[1].name"}},
		{"mounts name existing volumes and unique paths", pf.Pod("ns", "p", pf.Volume(corev1.Volume{Name: "v"}),
			pf.Container(corev1.Container{Name: "a", VolumeMounts: []corev1.VolumeMount{
				{Name: "v", MountPath: "/x"}, {Name: "w", MountPath: "/y"}, {Name: "v", MountPath: "/x"}, {Name: "v"}}})),
			[]string{"spec.containers[0].volumeMounts[1].name", "spec.containers[0].volumeMounts[2].mountPath", "spec.containers[0].volumeMounts[3].mountPath"}},
		{"probes on plain init containers are forbidden", &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{
			{Name: "i", ReadinessProbe: probe}, {Name: "s", RestartPolicy: &always, ReadinessProbe: probe}}}},
			[]string{"spec.initContainers[0].readinessProbe"}},
		{"annotation keys are qualified names", pf.Pod("ns", "p", pf.Annotation("a/b/c", "")), []string{"metadata.annotations"}},
		{"annotations are at most 256 KiB", pf.Pod("ns", "p", pf.Annotation("big", strings.Repeat("x", 256*1024))),
			[]string{"metadata.annotations"}},
		{"label values are valid", pf.Pod("ns", "p", pf.Labels("app", "a b")), []string{"metadata.labels"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(c.pod) {
				got = append(got, e.Field)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("errors at %v, want %v: %v", got, c.want, Validate(c.pod))
			}
		})
	}
}

func TestMergeContainer(t *testing.T) {
	base := corev1.Container{
		Name: "kserve-container", Image: "runtime:1", Args: []string{"--port=8080"},
		Env: []corev1.EnvVar{
			{Name: "A", Value: "runtime"},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models"}},
	}
	override := corev1.Container{
		Image: "user:2", Args: []string{"--model=qwen"},
		Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "B", Value: "user"},
			{Name: "C", Value: "new"},
		},
	}
	baseCopy, overrideCopy := *base.DeepCopy(), *override.DeepCopy()
	got, err := MergeContainer(base, override, MergePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "kserve-container" || got.Image != "user:2" {
		t.Errorf("name %q image %q", got.Name, got.Image)
	}
	if strings.Join(got.Args, " ") != "--port=8080 --model=qwen" {
		t.Errorf("args %v: want runtime then user", got.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range got.Env {
		env[e.Name] = e
	}
	if a := env["A"]; a.Value != "" || a.ValueFrom == nil || a.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("A = %+v: the user's valueFrom must win whole", a)
	}
	if b := env["B"]; b.Value != "user" || b.ValueFrom != nil {
		t.Errorf("B = %+v: the user's value must clear valueFrom", b)
	}
	if env["C"].Value != "new" || len(got.VolumeMounts) != 1 {
		t.Errorf("C %+v mounts %+v", env["C"], got.VolumeMounts)
	}
	if !equalJSON(base, baseCopy) || !equalJSON(override, overrideCopy) {
		t.Error("MergeContainer changed its inputs")
	}

	replaced, _ := MergeContainer(base, override, MergePolicy{Args: ArgsReplace})
	if strings.Join(replaced.Args, " ") != "--model=qwen" {
		t.Errorf("ArgsReplace args %v", replaced.Args)
	}
	kept, _ := MergeContainer(base, corev1.Container{}, MergePolicy{Args: ArgsReplace})
	if strings.Join(kept.Args, " ") != "--port=8080" {
		t.Errorf("ArgsReplace with no user args: %v", kept.Args)
	}
	for _, policy := range []ArgsPolicy{"replace", "Prepend"} {
		if _, err := MergeContainer(base, override, MergePolicy{Args: policy}); err == nil || !strings.Contains(err.Error(), "is not an args policy") {
			t.Errorf("MergeContainer with policy %q: err = %v, want an unknown-policy error", policy, err)
		}
		if _, err := MergePodSpec(corev1.PodSpec{}, corev1.PodSpec{}, MergePolicy{Args: policy}); err == nil || !strings.Contains(err.Error(), "is not an args policy") {
			t.Errorf("MergePodSpec with policy %q: err = %v, want an unknown-policy error", policy, err)
		}
	}

	_, err = MergeContainer(base, corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "other", MountPath: "/mnt/models"}}}, MergePolicy{})
	if err == nil || !strings.Contains(err.Error(), `mountPath /mnt/models mounts volume "model" in the runtime and "other" in the override`) {
		t.Errorf("err = %v", err)
	}
}

func TestMergePodSpec(t *testing.T) {
	base := corev1.PodSpec{
		Containers: []corev1.Container{{Name: "kserve-container", Image: "runtime", Args: []string{"-a"}}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}},
	}
	override := corev1.PodSpec{
		Containers:   []corev1.Container{{Name: "kserve-container", Args: []string{"-b"}}, {Name: "sidecar", Image: "s"}},
		NodeSelector: map[string]string{"gpu": "a100"},
	}
	got, err := MergePodSpec(base, override, MergePolicy{AllowNewContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 2 || strings.Join(got.Containers[0].Args, " ") != "-a -b" || got.NodeSelector["gpu"] != "a100" {
		t.Errorf("merged %+v", got)
	}
	override.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
	if _, err := MergePodSpec(base, override, MergePolicy{AllowNewContainers: true}); err == nil || !strings.Contains(err.Error(), `volumes[0] "cfg"`) {
		t.Errorf("a volume with two sources: err = %v", err)
	}
}

func TestFinalizers(t *testing.T) {
	const f = "serving.kserve.io/inferenceservice-finalizer"
	obj := &metav1.ObjectMeta{Finalizers: []string{"other"}, ResourceVersion: "42"}
	p, err := AddFinalizerPatch(obj, f)
	if err != nil || string(p) != `{"metadata":{"finalizers":["other","`+f+`"],"resourceVersion":"42"}}` {
		t.Fatalf("AddFinalizerPatch = %s, %v", p, err)
	}
	if len(obj.Finalizers) != 1 {
		t.Fatal("AddFinalizerPatch changed its input")
	}
	if !AddFinalizer(obj, f) || AddFinalizer(obj, f) {
		t.Fatal("AddFinalizer: first call must change, second must not")
	}
	if p, _ := AddFinalizerPatch(obj, f); p != nil {
		t.Fatalf("second add patch = %s, want none", p)
	}
	p, _ = RemoveFinalizerPatch(obj, "other")
	if string(p) != `{"metadata":{"finalizers":["`+f+`"],"resourceVersion":"42"}}` {
		t.Fatalf("RemoveFinalizerPatch = %s", p)
	}
	if !RemoveFinalizer(obj, "other") || RemoveFinalizer(obj, "other") {
		t.Fatal("RemoveFinalizer: first call must change, second must not")
	}
	p, _ = RemoveFinalizerPatch(&metav1.ObjectMeta{Finalizers: []string{f}}, f)
	if string(p) != `{"metadata":{"finalizers":null}}` {
		t.Fatalf("removing the last finalizer = %s, want null", p)
	}
	if RemoveFinalizer(obj, f); obj.Finalizers != nil {
		t.Fatalf("an emptied list must be nil, got %#v", obj.Finalizers)
	}
}

func TestEnsureSidecarRejectsAnUnknownMode(t *testing.T) {
	for _, mode := range []SidecarMode{"", "native", "Sidecar"} {
		pod := pf.Pod("default", "p", pf.Containers("engine"))
		before := pod.DeepCopy()
		_, err := Injector{Name: "reload"}.EnsureSidecar(pod, corev1.Container{Name: "reload", Image: "reload:v1"}, mode)
		if err == nil || !strings.Contains(err.Error(), "unknown sidecar mode") {
			t.Errorf("mode %q: err = %v, want an unknown-mode error", mode, err)
		}
		if !equalJSON(before, pod) {
			t.Errorf("mode %q: the pod changed", mode)
		}
	}
}
