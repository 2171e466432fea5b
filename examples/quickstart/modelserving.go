package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// This file holds the operator section: a ModelServing rollout of the example
// operator as `kplan rollout` sees it. The ModelServing and its pods are printed
// as `kubectl get -o yaml` prints them, read back from that YAML, and planned with
// servingv1.RolloutPools, the mapping the CLI uses, then rollout.FromPods and
// rollout.Plan.

const (
	msOld = "qwen-6d5b7f9c4" // the ControllerRevision the pods ran
	msNew = "qwen-85f4c6d7b" // the new one: only the engine image changed
)

// msObjects builds the ModelServing qwen (Gang mode: three serving groups of a
// prefill and a decode pod) and its pods part-way through an image-only rollout:
// group 0 was updated in place and serves again, group 1 is being updated in
// place (the operator set its readiness gate False; the kubelet still reports
// the pods Ready), group 2 runs the old image.
func msObjects() (*servingv1.ModelServing, *corev1.List, error) {
	groups := int32(3)
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	created := metav1.NewTime(now.Add(-time.Hour))
	role := func(name string) servingv1.Role {
		return servingv1.Role{Name: name, Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "engine", Image: "vllm/vllm-openai:v0.9.1"}}}}}
	}
	ms := &servingv1.ModelServing{
		TypeMeta:   metav1.TypeMeta{APIVersion: servingv1.GroupVersion.String(), Kind: "ModelServing"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "qwen", UID: "8a1c6a52-0000-4000-8000-00000000a001", Generation: 2, CreationTimestamp: created},
		Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: []servingv1.Role{role("prefill"), role("decode")},
			RolloutStrategy: servingv1.RolloutStrategy{Mode: servingv1.GangMode, MaxUnavailable: &one, MaxSurge: &zero}},
		Status: servingv1.ModelServingStatus{ObservedGeneration: 2, CurrentRevision: msOld, UpdateRevision: msNew},
	}
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for g := range 3 {
		for _, r := range []string{"prefill", "decode"} {
			const v0, v1 = "vllm/vllm-openai:v0.9.0", "vllm/vllm-openai:v0.9.1"
			// running is the image the kubelet reports; ann the operator's
			// record of the in-place update.
			rev, image, running, gate, ann := msOld, v0, v0, corev1.ConditionTrue, map[string]string(nil)
			readySince := created
			switch g {
			case 0:
				rev, image, running = msNew, v1, v1
				readySince = metav1.NewTime(now.Add(-30 * time.Second))
			case 1:
				rev, image, gate = msNew, v1, corev1.ConditionFalse
			}
			if rev == msNew {
				ann = map[string]string{servingv1.AnnotationInPlaceUpdate: `{"revision":"` + msNew + `","imageIDs":{"engine":"` + imageID(v0) + `"}}`}
			}
			name := fmt.Sprintf("qwen-%s-%d-0", r, g)
			pod := &corev1.Pod{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: created, Annotations: ann,
					UID: types.UID(fmt.Sprintf("5f0e2b1c-0000-4000-8000-%012d", 10*g+len(r))),
					Labels: map[string]string{
						servingv1.LabelName: "qwen", servingv1.LabelGroupName: fmt.Sprintf("qwen-%d", g), servingv1.LabelRole: r,
						servingv1.LabelRevision: rev, servingv1.LabelGroupIndex: fmt.Sprint(g), servingv1.LabelMemberIndex: "0",
						servingv1.LabelColumn: r + "-0",
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: ms.APIVersion, Kind: "ModelServing", Name: "qwen", UID: ms.UID,
						Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}},
				},
				Spec: corev1.PodSpec{
					Containers:     []corev1.Container{{Name: "engine", Image: image}},
					ReadinessGates: []corev1.PodReadinessGate{{ConditionType: servingv1.PodConditionImagesReady}},
				},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
					{Type: servingv1.PodConditionImagesReady, Status: gate, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince},
				}, ContainerStatuses: []corev1.ContainerStatus{{Name: "engine", Image: running, ImageID: imageID(running), Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: readySince}}}}},
			}
			raw, err := json.Marshal(pod)
			if err != nil {
				return nil, nil, err
			}
			list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
		}
	}
	return ms, list, nil
}

func ptrTo[T any](v T) *T { return &v }

// imageID is a made-up image digest for an image.
func imageID(image string) string {
	if strings.HasSuffix(image, "v0.9.0") {
		return "docker.io/vllm/vllm-openai@sha256:3c4e0b5d"
	}
	return "docker.io/vllm/vllm-openai@sha256:9a81f2c7"
}

// readKubectlYAML reads the ModelServing and the pod List back from YAML, as the
// CLI reads kubectl's output.
func readKubectlYAML(msYAML, podsYAML []byte) (*servingv1.ModelServing, []*corev1.Pod, error) {
	var ms servingv1.ModelServing
	if err := yaml.UnmarshalStrict(msYAML, &ms); err != nil {
		return nil, nil, fmt.Errorf("ModelServing: %w", err)
	}
	var list corev1.List
	if err := yaml.Unmarshal(podsYAML, &list); err != nil {
		return nil, nil, fmt.Errorf("pods: %w", err)
	}
	var pods []*corev1.Pod
	for i, item := range list.Items {
		var p corev1.Pod
		if err := json.Unmarshal(item.Raw, &p); err != nil {
			return nil, nil, fmt.Errorf("pods: item %d: %w", i, err)
		}
		pods = append(pods, &p)
	}
	return &ms, pods, nil
}

func modelServingRollout(w io.Writer) error {
	ms0, list, err := msObjects()
	if err != nil {
		return err
	}
	msYAML, err := yaml.Marshal(ms0)
	if err != nil {
		return err
	}
	podsYAML, err := yaml.Marshal(list)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "$ kubectl get modelserving qwen -o yaml")
	fmt.Fprint(w, indent(string(msYAML)))
	ms, pods, err := readKubectlYAML(msYAML, podsYAML)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "$ kubectl get pods -l modelserving.volcano.sh/name=qwen -o yaml   # one item shown; the others in brief:")
	item, err := yaml.Marshal(pods[2])
	if err != nil {
		return err
	}
	fmt.Fprint(w, indent(string(item)))
	for _, p := range pods {
		gate, ready := "", ""
		for _, c := range p.Status.Conditions {
			switch c.Type {
			case servingv1.PodConditionImagesReady:
				gate = string(c.Status)
			case corev1.PodReady:
				ready = string(c.Status)
			}
		}
		fmt.Fprintf(w, "  %-16s revision %s  spec %s  running %s  Ready=%s images-ready=%s\n",
			p.Name, p.Labels[servingv1.LabelRevision], strings.TrimPrefix(p.Spec.Containers[0].Image, "vllm/vllm-openai:"),
			strings.TrimPrefix(p.Status.ContainerStatuses[0].Image, "vllm/vllm-openai:"), ready, gate)
	}

	// What kplan rollout -f ms.yaml -f pods.yaml does with them.
	pools, err := servingv1.RolloutPools(ms, pods)
	if err != nil {
		return err
	}
	pool := pools[0] // Gang mode: one pool of serving groups
	replicas, err := rollout.FromPods(pool.Pods, pool.Options)
	if err != nil {
		return err
	}
	step, err := rollout.Plan(replicas, pool.Strategy)
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "$ kplan rollout -f ms.yaml -f pods.yaml   # the step it plans, in brief")
	fmt.Fprintf(w, "  %s rollout to %s, %d serving groups, maxUnavailable %d, maxSurge %d\n",
		strings.ToLower(string(pool.Strategy.Mode)), pool.Strategy.TargetRevision, pool.Strategy.Replicas,
		step.Budget.MaxUnavailable, step.Budget.MaxSurge)
	fmt.Fprintf(w, "  replicas:  %s\n", describeReplicas(replicas, pool.Strategy.TargetRevision))
	fmt.Fprintf(w, "  next step: %s\n", describeStep(step, pool.Strategy.Mode))
	for _, wt := range step.Waiting {
		fmt.Fprintf(w, "    %s waits: %s (%s)\n", wt.Replica, wt.Reason, wt.Message)
	}
	fmt.Fprintln(w, "  (qwen-1's pods still say Ready, but their images-ready gate is False: the")
	fmt.Fprintln(w, "  kubelet has not restarted them on v0.9.1 yet, and the update spends the")
	fmt.Fprintln(w, "  budget until it has and they are ready again)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "$ kplan rollout -f ms.yaml -f pods.yaml --simulate   # in brief")
	return simulate(w, rollouttest.Scenario{Strategy: pool.Strategy, Replicas: replicas, GangSize: len(pool.Options.Columns)})
}

// indent indents every line of s by four spaces.
func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
