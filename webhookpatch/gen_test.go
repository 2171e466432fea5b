package webhookpatch

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"
)

// Generators for random but valid pods and for random primitive calls.

var (
	genName    = rapid.SampledFrom([]string{"a", "b", "engine", "side", "init-x", "c10", "c9"})
	genVolName = rapid.SampledFrom([]string{"data", "cfg", "ranktable", "v1", "v2"})
	genPath    = rapid.SampledFrom([]string{"/data", "/etc/cfg", "/etc/ascend/ranktable", "/a~b", "/x/y"})
	genEnvName = rapid.SampledFrom([]string{"A", "B", "RANKTABLEFILE", "PATH", "X_1"})
	genValue   = rapid.SampledFrom([]string{"", "1", "v", "with space", `quote"`, "/"})
	genMetaKey = rapid.SampledFrom([]string{"app", "example.com/role", "a.b/c", "kplan.dev/x", "x_y"})
	// genRawKey includes "~", invalid in Kubernetes keys but a JSON pointer escape case.
	genRawKey   = rapid.SampledFrom([]string{"app", "example.com/role", "a~b/c~1", "~0", "/"})
	genLabelVal = rapid.SampledFrom([]string{"", "v1", "a-b", "z.9"})
)

func genVolume(t *rapid.T, name string) corev1.Volume {
	v := corev1.Volume{Name: name}
	switch rapid.IntRange(0, 2).Draw(t, "source") {
	case 0:
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	case 1:
		v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{
			Name: rapid.SampledFrom([]string{"cm1", "cm2"}).Draw(t, "cm")}}
	default:
		q := resource.MustParse(rapid.SampledFrom([]string{"1Gi", "100Mi"}).Draw(t, "size"))
		v.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &q}
	}
	return v
}

func genContainer(t *rapid.T, name string) corev1.Container {
	c := corev1.Container{Name: name, Image: rapid.SampledFrom([]string{"img:1", "img:2"}).Draw(t, "image")}
	c.Args = rapid.SliceOfN(genValue, 0, 3).Draw(t, "args")
	if len(c.Args) == 0 {
		c.Args = nil
	}
	for _, n := range rapid.SliceOfNDistinct(genEnvName, 0, 3, rapid.ID).Draw(t, "env") {
		c.Env = append(c.Env, corev1.EnvVar{Name: n, Value: genValue.Draw(t, "envValue")})
	}
	if rapid.Bool().Draw(t, "resources") {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	}
	return c
}

// genPod draws a valid pod: unique names, mounts of existing volumes.
func genPod(t *rapid.T) *corev1.Pod {
	names := rapid.SliceOfNDistinct(genName, 1, 5, rapid.ID).Draw(t, "containers")
	nInit := rapid.IntRange(0, len(names)-1).Draw(t, "initCount")
	vols := rapid.SliceOfNDistinct(genVolName, 0, 3, rapid.ID).Draw(t, "volumes")
	pod := podfixture.Pod("ns", "p")
	for _, v := range vols {
		pod.Spec.Volumes = append(pod.Spec.Volumes, genVolume(t, v))
	}
	for i, n := range names {
		c := genContainer(t, n)
		if len(vols) > 0 && rapid.Bool().Draw(t, "mount") {
			c.VolumeMounts = []corev1.VolumeMount{{Name: rapid.SampledFrom(vols).Draw(t, "mountVol"), MountPath: genPath.Draw(t, "mountPath")}}
		}
		if i < nInit {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	for _, k := range rapid.SliceOfNDistinct(genMetaKey, 0, 3, rapid.ID).Draw(t, "annotations") {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = genValue.Draw(t, "annotationValue")
	}
	for _, k := range rapid.SliceOfNDistinct(genMetaKey, 0, 2, rapid.ID).Draw(t, "labels") {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[k] = genLabelVal.Draw(t, "labelValue")
	}
	pod.Finalizers = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a.io/f", "b.io/g"}), 0, 2, rapid.ID).Draw(t, "finalizers")
	if len(pod.Finalizers) == 0 {
		pod.Finalizers = nil
	}
	return pod
}

// primitive is one Ensure call, drawn at random.
type primitive struct {
	desc  string
	apply func(*corev1.Pod) (bool, error)
}

func genPrimitive(t *rapid.T, label string) primitive {
	return genPrimitiveBy(t, label, "ranktable", "configmapset-x")
}

// genPrimitiveBy draws a primitive called by one of the named injectors.
func genPrimitiveBy(t *rapid.T, label string, injectors ...string) primitive {
	in := Injector{Name: rapid.SampledFrom(injectors).Draw(t, label+"Injector")}
	switch rapid.IntRange(0, 8).Draw(t, label+"Kind") {
	case 0:
		v := genVolume(t, genVolName.Draw(t, label+"Vol"))
		return primitive{"volume " + v.Name, func(p *corev1.Pod) (bool, error) { return in.EnsureVolume(p, v) }}
	case 1:
		c := genContainer(t, genName.Draw(t, label+"Init"))
		return primitive{"init " + c.Name, func(p *corev1.Pod) (bool, error) { return in.EnsureInitContainer(p, c) }}
	case 2:
		c := genContainer(t, genName.Draw(t, label+"App"))
		return primitive{"container " + c.Name, func(p *corev1.Pod) (bool, error) { return in.EnsureContainer(p, c) }}
	case 3:
		c := genContainer(t, genName.Draw(t, label+"Side"))
		mode := rapid.SampledFrom([]SidecarMode{SidecarNative, SidecarLaunchPriority}).Draw(t, label+"Mode")
		return primitive{"sidecar " + c.Name + " " + string(mode), func(p *corev1.Pod) (bool, error) { return in.EnsureSidecar(p, c, mode) }}
	case 4:
		m := corev1.VolumeMount{Name: genVolName.Draw(t, label+"MountVol"), MountPath: genPath.Draw(t, label+"MountPath"),
			ReadOnly: rapid.Bool().Draw(t, label+"ReadOnly")}
		sel := genSelector(t, label)
		return primitive{fmt.Sprintf("mount %s at %s in %+v", m.Name, m.MountPath, sel), func(p *corev1.Pod) (bool, error) { return in.EnsureVolumeMount(p, m, sel) }}
	case 5:
		e := corev1.EnvVar{Name: genEnvName.Draw(t, label+"Env"), Value: genValue.Draw(t, label+"EnvValue")}
		sel := genSelector(t, label)
		return primitive{fmt.Sprintf("env %s=%q in %+v", e.Name, e.Value, sel), func(p *corev1.Pod) (bool, error) { return in.EnsureEnv(p, e, sel) }}
	case 6:
		k, v := genMetaKey.Draw(t, label+"AnnKey"), genValue.Draw(t, label+"AnnValue")
		return primitive{"annotation " + k, func(p *corev1.Pod) (bool, error) { return in.EnsureAnnotation(p, k, v) }}
	case 7:
		k, v := genMetaKey.Draw(t, label+"LabelKey"), genLabelVal.Draw(t, label+"LabelValue")
		return primitive{"label " + k, func(p *corev1.Pod) (bool, error) { return in.EnsureLabel(p, k, v) }}
	default:
		return primitive{"strip " + in.Name, func(p *corev1.Pod) (bool, error) { return in.Strip(p) }}
	}
}

func genSelector(t *rapid.T, label string) ContainerSelector {
	var sel ContainerSelector
	if rapid.Bool().Draw(t, label+"ByName") {
		sel.Names = rapid.SliceOfNDistinct(genName, 1, 2, rapid.ID).Draw(t, label+"Names")
	}
	sel.IncludeInit = rapid.Bool().Draw(t, label+"IncludeInit")
	if rapid.Bool().Draw(t, label+"Exclude") {
		sel.Exclude = []string{genName.Draw(t, label+"Excluded")}
	}
	return sel
}

// failer is what applyDiff needs of *testing.T and *rapid.T.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// applyDiff applies Diff(before, after) to before's JSON the way the API server does
// and fails unless the result equals after's JSON.
func applyDiff(t failer, before, after *corev1.Pod) []Operation {
	t.Helper()
	ops, err := Diff(before, after)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	patch, _, err := Patch(ops)
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	got := bj
	if patch != nil {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("DecodePatch: %v\n%s", err, patch)
		}
		if got, err = p.Apply(bj); err != nil {
			t.Fatalf("Apply: %v\npatch: %s\nbefore: %s", err, patch, bj)
		}
	}
	if !jsonpatch.Equal(got, aj) {
		t.Fatalf("patched before differs from after\npatch:  %s\nbefore: %s\ngot:    %s\nafter:  %s", patch, bj, got, aj)
	}
	return ops
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return jsonpatch.Equal(ja, jb)
}
