// The package's examples, kept together in this file: each is complete
// and uses only the exported API, so it can be copied as shown. The file is long
// because every entry point has one.

package webhookpatch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/webhookpatch"
)

// A mutating admission webhook end to end: it decodes the admission.k8s.io/v1
// AdmissionReview the API server sends, injects into a copy of the pod, and answers
// with the JSON patch from the pod to the copy. Invoked again on the patched pod
// (reinvocationPolicy IfNeeded), it answers with no patch.
func Example() {
	inject := func(pod *corev1.Pod) error {
		in := webhookpatch.Injector{Name: "ranktable"}
		vol := corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-0-ranktable"}}}}
		if _, err := in.EnsureVolume(pod, vol); err != nil {
			return err
		}
		mount := corev1.VolumeMount{Name: "ranktable", MountPath: "/etc/ascend/ranktable", ReadOnly: true}
		_, err := in.EnsureVolumeMount(pod, mount, webhookpatch.ContainerSelector{})
		return err
	}
	// handle is the body of the webhook's HTTP handler: AdmissionReview in, out.
	handle := func(body []byte) ([]byte, error) {
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			return nil, fmt.Errorf("not an AdmissionReview request: %v", err)
		}
		req := review.Request
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		var pod corev1.Pod
		if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
			return nil, err
		}
		if pod.Namespace == "" {
			pod.Namespace = req.Namespace // not set yet on CREATE
		}
		mutated := pod.DeepCopy()
		err := inject(mutated)
		if err == nil {
			if errs := webhookpatch.Validate(mutated); len(errs) > 0 {
				err = errs.ToAggregate()
			}
		}
		if err != nil {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: err.Error()}
		} else {
			ops, err := webhookpatch.Diff(&pod, mutated)
			if err != nil {
				return nil, err
			}
			if resp.Patch, resp.PatchType, err = webhookpatch.Patch(ops); err != nil {
				return nil, err
			}
		}
		return json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	}

	request := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
		"uid":"0df28fbd-5f5f-4b7e-8b2a-6f6a1e7b1c01","operation":"CREATE","namespace":"default",
		"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
		"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"qwen-0"},
			"spec":{"containers":[{"name":"engine","image":"mindie:1"}]}}}}`
	out, err := handle([]byte(request))
	if err != nil {
		fmt.Println(err)
		return
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &answer); err != nil {
		fmt.Println(err)
		return
	}
	resp := answer.Response
	fmt.Println(answer.Kind, resp.UID, resp.Allowed, *resp.PatchType)
	var ops []webhookpatch.Operation
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		fmt.Println(err)
		return
	}
	for _, op := range ops {
		fmt.Println(op.Op, op.Path)
	}

	// The API server applies the patch and, when another webhook changed the pod
	// afterwards, sends the patched pod again.
	var sent admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(request), &sent); err != nil {
		fmt.Println(err)
		return
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		fmt.Println(err)
		return
	}
	if sent.Request.Object.Raw, err = patch.Apply(sent.Request.Object.Raw); err != nil {
		fmt.Println(err)
		return
	}
	again, _ := json.Marshal(sent)
	if out, err = handle(again); err != nil {
		fmt.Println(err)
		return
	}
	answer = admissionv1.AdmissionReview{}
	if err := json.Unmarshal(out, &answer); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reinvoked:", answer.Response.Allowed, len(answer.Response.Patch), "patch bytes")
	// Output:
	// AdmissionReview 0df28fbd-5f5f-4b7e-8b2a-6f6a1e7b1c01 true JSONPatch
	// add /metadata/annotations
	// add /spec/volumes
	// add /spec/containers/0/volumeMounts
	// reinvoked: true 0 patch bytes
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

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
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

// Apply makes an injection all or nothing: here the mount conflicts with one the
// user wrote, after the volume and the init container were injected, and the pod
// is left exactly as it was. Once the user's mount is gone the same injection
// applies whole, and the Result lists what it injected.
func ExampleInjector_Apply() {
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

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "engine", Image: "mindie:1",
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/etc/ascend/ranktable"}}}},
		},
	}
	res, err := in.Apply(pod, inject)
	fmt.Println("conflict:", errors.Is(err, webhookpatch.ErrConflict), res.Changed)
	fmt.Println("volumes:", len(pod.Spec.Volumes), "init containers:", len(pod.Spec.InitContainers), "annotations:", len(pod.Annotations))

	pod.Spec.Containers[0].VolumeMounts = nil
	res, err = in.Apply(pod, inject)
	fmt.Println("applied:", err, res.Changed)
	for _, item := range res.Items {
		fmt.Println(" ", item)
	}
	// Output:
	// conflict: true false
	// volumes: 1 init containers: 0 annotations: 0
	// applied: <nil> true
	//   initContainer/wait-ranktable
	//   mount/engine//etc/ascend/ranktable
	//   volume/ranktable
}

// A same-named volume the user wrote is never overwritten.
func ExampleInjector_EnsureVolume_conflict() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
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
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
		}
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
	// v1.28.9 LaunchPriority: initContainers=[] containers=[reload engine] priority="Ordered"
	// v1.31.0 Native: initContainers=[reload] containers=[engine] priority=""
}

// Diff computes the patch from the typed pods; keys are escaped and a prepended
// container is a single add.
func ExampleDiff() {
	before := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
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
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
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

// Annotations and labels are recorded like everything else an injector sets: a
// re-invocation with a new value replaces its own value, but never a user's.
func ExampleInjector_EnsureAnnotation() {
	in := webhookpatch.Injector{Name: "ranktable"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
	changed, err := in.EnsureAnnotation(pod, "kthena.io/ranktable-level", "role")
	fmt.Println(changed, err, pod.Annotations["kthena.io/ranktable-level"])
	changed, err = in.EnsureAnnotation(pod, "kthena.io/ranktable-level", "group")
	fmt.Println(changed, err, pod.Annotations["kthena.io/ranktable-level"])
	pod.Annotations["example.com/owner"] = "team-a"
	_, err = in.EnsureAnnotation(pod, "example.com/owner", "team-b")
	fmt.Println(errors.Is(err, webhookpatch.ErrConflict))
	// Output:
	// true <nil> role
	// true <nil> group
	// true
}

func ExampleInjector_EnsureLabel() {
	in := webhookpatch.Injector{Name: "configmapset-demo"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
	changed, err := in.EnsureLabel(pod, "configmapset.kplan.dev/updateOrder", "1")
	fmt.Println(changed, err, pod.Labels)
	_, err = in.EnsureLabel(pod, "app", "not a valid value!")
	fmt.Println(err)
	// Output:
	// true <nil> map[configmapset.kplan.dev/updateOrder:1]
	// pod default/qwen-0: metadata.labels[app]: value "not a valid value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')
}

// EnsureEnv sets a variable in the selected containers; a user's own value for it is a
// conflict, and then no container is changed.
func ExampleInjector_EnsureEnv() {
	in := webhookpatch.Injector{Name: "ranktable"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "metrics", Image: "exporter:1"})
	env := corev1.EnvVar{Name: "RANKTABLEFILE", Value: "/etc/ascend/ranktable/ranktable.json"}
	changed, err := in.EnsureEnv(pod, env, webhookpatch.ContainerSelector{Exclude: []string{"metrics"}})
	fmt.Println(changed, err, len(pod.Spec.Containers[0].Env), len(pod.Spec.Containers[1].Env))
	// Output: true <nil> 1 0
}

// EnsureContainer appends an app container; with the same content again it changes
// nothing.
func ExampleInjector_EnsureContainer() {
	in := webhookpatch.Injector{Name: "metrics"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
	exporter := corev1.Container{Name: "npu-exporter", Image: "npu-exporter:v6"}
	first, _ := in.EnsureContainer(pod, exporter)
	again, _ := in.EnsureContainer(pod, exporter)
	fmt.Println(first, again, pod.Spec.Containers[1].Name)
	// Output: true false npu-exporter
}

// Strip removes exactly what one injector recorded, leaving the user's containers and
// other injectors' items; injecting again gives the same pod as the first time.
func ExampleInjector_Strip() {
	in := webhookpatch.Injector{Name: "ranktable"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "mindie:1"}}},
	}
	vol := corev1.Volume{Name: "ranktable", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	_, _ = in.EnsureVolume(pod, vol)
	_, _ = in.EnsureInitContainer(pod, corev1.Container{Name: "wait-ranktable", Image: "busybox"})
	injected := pod.DeepCopy()

	changed, err := in.Strip(pod)
	fmt.Println(changed, err, len(pod.Spec.Volumes), len(pod.Spec.InitContainers), pod.Annotations == nil)
	_, _ = in.EnsureVolume(pod, vol)
	_, _ = in.EnsureInitContainer(pod, corev1.Container{Name: "wait-ranktable", Image: "busybox"})
	ops, _ := webhookpatch.Diff(injected, pod)
	fmt.Println(len(ops))
	// Output:
	// true <nil> 0 0 true
	// 0
}

// A serving runtime's pod spec with a user's override, merged like KServe does.
func ExampleMergePodSpec() {
	runtime := corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "vllm-ascend:v0.9",
		Args: []string{"--port=8000"}, Env: []corev1.EnvVar{{Name: "ASCEND_VISIBLE_DEVICES", Value: "0-7"}}}}}
	user := corev1.PodSpec{Containers: []corev1.Container{{Name: "engine",
		Args: []string{"--max-model-len=8192"}, Env: []corev1.EnvVar{{Name: "VLLM_LOGGING_LEVEL", Value: "DEBUG"}}}}}
	merged, err := webhookpatch.MergePodSpec(runtime, user, webhookpatch.MergePolicy{})
	c := merged.Containers[0]
	fmt.Println(c.Image, c.Args, len(c.Env), err)
	// Output: vllm-ascend:v0.9 [--port=8000 --max-model-len=8192] 2 <nil>
}

// AddFinalizer and RemoveFinalizer change an object in memory and report whether they
// did; the *Patch forms return a merge patch instead.
func ExampleAddFinalizer() {
	obj := &metav1.ObjectMeta{Name: "qwen"}
	fmt.Println(webhookpatch.AddFinalizer(obj, "kplan.dev/cleanup"), webhookpatch.AddFinalizer(obj, "kplan.dev/cleanup"), obj.Finalizers)
	fmt.Println(webhookpatch.RemoveFinalizer(obj, "kplan.dev/cleanup"), obj.Finalizers == nil)
	// Output:
	// true false [kplan.dev/cleanup]
	// true true
}

func ExampleRemoveFinalizerPatch() {
	obj := &metav1.ObjectMeta{Name: "qwen", ResourceVersion: "8", Finalizers: []string{"kplan.dev/cleanup"}}
	patch, _ := webhookpatch.RemoveFinalizerPatch(obj, "kplan.dev/cleanup")
	fmt.Println(string(patch))
	// Output: {"metadata":{"finalizers":null,"resourceVersion":"8"}}
}

// Annotation keys hold "/", which a JSON pointer must escape.
