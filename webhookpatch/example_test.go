package webhookpatch_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/webhookpatch"
)

func newPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
}

// A ranktable webhook injects a ConfigMap volume, a wait init container and a
// read-only mount, then returns the patch. A second invocation finds nothing to do.
func ExampleInjector() {
	in := webhookpatch.Injector{Name: "ranktable"}
	inject := func(pod *corev1.Pod) error {
		vol := corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-prefill-ranktable"}}}}
		if _, err := in.EnsureVolume(pod, vol); err != nil {
			return err
		}
		wait := corev1.Container{Name: "wait-ranktable", Image: "busybox"}
		if _, err := in.EnsureInitContainer(pod, wait); err != nil {
			return err
		}
		mount := corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/ascend/ranktable", ReadOnly: true}
		_, err := in.EnsureVolumeMount(pod, mount, webhookpatch.ContainerSelector{})
		return err
	}

	pod := newPod()
	first := pod.DeepCopy()
	if err := inject(first); err != nil {
		panic(err)
	}
	ops, _ := webhookpatch.Diff(pod, first)
	for _, op := range ops {
		fmt.Println(op.Op, op.Path)
	}

	second := first.DeepCopy()
	if err := inject(second); err != nil {
		panic(err)
	}
	ops, _ = webhookpatch.Diff(first, second)
	fmt.Println("second invocation:", len(ops), "operations")
	// Output:
	// add /metadata/annotations
	// add /spec/volumes
	// add /spec/initContainers
	// add /spec/containers/0/volumeMounts
	// second invocation: 0 operations
}

// A same-named volume the user wrote is never overwritten.
func ExampleInjector_EnsureVolume_conflict() {
	pod := newPod()
	pod.Spec.Volumes = []corev1.Volume{{Name: "ranktable", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	_, err := webhookpatch.Injector{Name: "ranktable"}.EnsureVolume(pod, corev1.Volume{Name: "ranktable",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
	fmt.Println(errors.Is(err, webhookpatch.ErrConflict))
	fmt.Println(err)
	// Output:
	// true
	// pod default/qwen-0: spec.volumes[ranktable]: conflict: a volume named "ranktable" with a different source exists (not injected by "ranktable")
}

// The sidecar mode follows the cluster version.
func ExampleInjector_EnsureSidecar() {
	for _, version := range []string{"v1.28.9", "v1.31.0"} {
		mode, _ := webhookpatch.SidecarModeFor(version)
		pod := newPod()
		_, _ = webhookpatch.Injector{Name: "configmapset-model"}.EnsureSidecar(pod,
			corev1.Container{Name: "reload", Image: "reloader:1"}, mode)
		var init, app []string
		for _, c := range pod.Spec.InitContainers {
			init = append(init, c.Name)
		}
		for _, c := range pod.Spec.Containers {
			app = append(app, c.Name)
		}
		fmt.Printf("%s %s: initContainers=%v containers=%v priority=%q\n", version, mode, init, app,
			pod.Annotations[webhookpatch.LaunchPriorityAnnotation])
	}
	// Output:
	// v1.28.9 launch-priority: initContainers=[] containers=[reload engine] priority="Ordered"
	// v1.31.0 native: initContainers=[reload] containers=[engine] priority=""
}

// Diff computes the patch from the typed pods; keys are escaped and a prepended
// container is a single add.
func ExampleDiff() {
	before := newPod()
	after := before.DeepCopy()
	after.Annotations = map[string]string{"example.com/role": "prefill"}
	after.Spec.Containers = append([]corev1.Container{{Name: "proxy", Image: "envoy"}}, after.Spec.Containers...)

	ops, _ := webhookpatch.Diff(before, after)
	patch, patchType, _ := webhookpatch.Patch(ops)
	fmt.Println(*patchType)
	fmt.Println(string(patch))
	// Output:
	// JSONPatch
	// [{"op":"add","path":"/metadata/annotations","value":{"example.com/role":"prefill"}},{"op":"add","path":"/spec/containers/0","value":{"name":"proxy","image":"envoy","resources":{}}}]
}

// MergeContainer merges runtime defaults with the user's override: args run runtime
// first, the user's env value replaces the runtime's valueFrom whole.
func ExampleMergeContainer() {
	runtime := corev1.Container{Name: "kserve-container", Image: "vllm:0.9", Args: []string{"--port=8080"},
		Env: []corev1.EnvVar{{Name: "MODEL", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['model']"}}}}}
	user := corev1.Container{Args: []string{"--max-model-len=8192"}, Env: []corev1.EnvVar{{Name: "MODEL", Value: "qwen"}}}

	merged, err := webhookpatch.MergeContainer(runtime, user, webhookpatch.MergePolicy{Args: webhookpatch.ArgsAppend})
	if err != nil {
		panic(err)
	}
	fmt.Println(merged.Name, merged.Image, merged.Args)
	fmt.Printf("MODEL=%q valueFrom=%v\n", merged.Env[0].Value, merged.Env[0].ValueFrom)
	// Output:
	// kserve-container vllm:0.9 [--port=8080 --max-model-len=8192]
	// MODEL="qwen" valueFrom=nil
}

// Validate reports what a mutation broke, with field paths.
func ExampleValidate() {
	pod := newPod()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
	for _, err := range webhookpatch.Validate(pod) {
		fmt.Println(err)
	}
	// Output:
	// spec.containers[0].volumeMounts[0].name: Not found: "missing"
}

// Finalizers as a merge patch carrying the resourceVersion for optimistic locking.
func ExampleAddFinalizerPatch() {
	obj := &metav1.ObjectMeta{Name: "qwen", ResourceVersion: "7"}
	patch, _ := webhookpatch.AddFinalizerPatch(obj, "kplan.dev/cleanup")
	fmt.Println(string(patch))
	obj.Finalizers = []string{"kplan.dev/cleanup"}
	patch, _ = webhookpatch.AddFinalizerPatch(obj, "kplan.dev/cleanup")
	fmt.Println(patch == nil)
	// Output:
	// {"metadata":{"finalizers":["kplan.dev/cleanup"],"resourceVersion":"7"}}
	// true
}
