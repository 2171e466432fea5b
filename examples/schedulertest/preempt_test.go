package schedulertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// priorityClass creates a PriorityClass, deleted at the end of the test.
func priorityClass(t *testing.T, ctx context.Context, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// withPriority gives the pod a PriorityClass (and its value, which the Priority
// admission plugin would fill in). It keeps the default termination grace period:
// the test runs kubelets (startKubelets) that terminate a preempted pod gracefully.
func withPriority(p *corev1.Pod, class string, value int32) *corev1.Pod {
	p.Spec.PriorityClassName = class
	p.Spec.Priority = &value
	return p
}

func waitBound(t *testing.T, ctx context.Context, ns, name string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	waitFor(t, ctx, time.Minute, "pod "+name+" bound with devices", func(ctx context.Context) (bool, error) {
		var err error
		got, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && boundWithDevices(got), err
	})
	return got
}

// rdmaKeys lists what a pod's annotation holds: "pf <bdf>", "vf <bdf>", "gpu <minor>".
func rdmaKeys(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	dec, err := rdma.DecodeAllocated(p.Annotations[rdma.AnnotationDeviceAllocated])
	if err != nil {
		t.Fatalf("pod %s: %v", p.Name, err)
	}
	var keys []string
	for _, e := range dec.RDMA {
		pf, _ := rdma.EntryPF(e)
		if e.Extension == nil || len(e.Extension.VirtualFunctions) == 0 {
			keys = append(keys, "pf "+pf.String())
		}
		if e.Extension != nil {
			for _, vf := range e.Extension.VirtualFunctions {
				keys = append(keys, "vf "+vf.BusID)
			}
		}
	}
	gpus, err := dec.GPUMinors()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		keys = append(keys, fmt.Sprintf("gpu %d", g))
	}
	slices.Sort(keys)
	return keys
}

// TestPreemptionFreesRDMADevices: a high-priority pod whose label selector only the
// NIC a low-priority pod holds matches preempts that pod, and only that pod (another
// low-priority pod on the node holds a NIC it cannot use), and lands on its NIC. The
// scheduler's preemption dry run sees the NIC free only through the plugin's
// RemovePod, and keeps the other pod through AddPod. A kubelet on each node
// terminates the preempted pod gracefully: the high-priority pod, nominated to
// the node, waits unbound until the victim is gone, so the NIC is never held twice.
func TestPreemptionFreesRDMADevices(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "preempt")
	// pre-a: two whole PFs, one labelled nic=special; pre-b: two nic=plain PFs.
	a := makeNode("pre-a", shape{roots: 1, pfs: 2})
	a.Devices[0].Labels = map[string]string{"nic": "special"}
	a.Devices[1].Labels = map[string]string{"nic": "plain"}
	b := makeNode("pre-b", shape{roots: 1, pfs: 2, pfLabels: map[string]string{"nic": "plain"}})
	createNodes(t, ctx, a, b)
	const terminate = 2 * time.Second
	startKubelets(t, ctx, ns, terminate, a.Name, b.Name)
	priorityClass(t, ctx, "kplan-low", 100)
	priorityClass(t, ctx, "kplan-high", 1000)
	startScheduler(t, nil)

	special := &rdma.DeviceHint{Selector: selector("nic", "special")}
	lowSpecial := withPriority(makePod(t, ns, "low-special", podSpec{rdma: 1, hint: special}), "kplan-low", 100)
	lowPlain := withPriority(makePod(t, ns, "low-plain", podSpec{rdma: 1, hint: &rdma.DeviceHint{Selector: selector("nic", "plain")}}), "kplan-low", 100)
	lowPlain.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "pre-a"}
	for _, p := range []*corev1.Pod{lowSpecial, lowPlain} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	heldSpecial := rdmaKeys(t, waitBound(t, ctx, ns, "low-special"))
	plainBefore := waitBound(t, ctx, ns, "low-plain")

	high := withPriority(makePod(t, ns, "high", podSpec{rdma: 1, hint: special}), "kplan-high", 1000)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, time.Minute, "low-special terminating", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "low-special", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	// The victim terminates for terminate: meanwhile high is nominated to pre-a
	// and not bound (its NIC is still the victim's).
	waitFor(t, ctx, time.Minute, "high nominated to pre-a", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, err = cs.CoreV1().Pods(ns).Get(ctx, "low-special", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		if p.Spec.NodeName != "" && err == nil {
			return false, fmt.Errorf("high bound to %s while low-special still terminates", p.Spec.NodeName)
		}
		if p.Status.NominatedNodeName == "pre-a" && err == nil {
			t.Logf("high nominated to pre-a, unbound while low-special terminates")
			return true, nil
		}
		return p.Spec.NodeName != "", nil // bound once the victim was gone
	})
	got := waitBound(t, ctx, ns, "high")
	if got.Spec.NodeName != "pre-a" {
		t.Fatalf("high landed on %s, want pre-a", got.Spec.NodeName)
	}
	if diff := cmpKeys(heldSpecial, rdmaKeys(t, got)); diff != "" {
		t.Errorf("high holds other devices than the preempted pod held:\n%s", diff)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "low-special", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("low-special: %v, want it deleted by preemption", err)
	}
	plain, err := cs.CoreV1().Pods(ns).Get(ctx, "low-plain", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("low-plain, whose NIC high cannot use, was preempted: %v", err)
	}
	if plain.UID != plainBefore.UID || plain.DeletionTimestamp != nil {
		t.Errorf("low-plain was replaced or is being deleted: %+v", plain.ObjectMeta)
	}
	if n := checkNoDeviceTwice(t, listPods(t, ctx, ns)); n != 2 {
		t.Errorf("%d pods bound with devices, want 2 (low-plain and high)", n)
	}
}

func cmpKeys(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	return fmt.Sprintf("want %v\ngot  %v", want, got)
}

// denyBindings makes the API server refuse every binding in namespace ns (a
// ValidatingAdmissionPolicy on pods/binding) until the returned function is called.
// It waits until the policy is in force.
func denyBindings(t *testing.T, ctx context.Context, ns string) (lift func()) {
	t.Helper()
	name := "kplan-deny-binding-" + ns
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "bindings are blocked by the test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	api := cs.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lift = func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	t.Cleanup(lift)
	// The policy takes effect once the API server's informers have it: probe with a
	// dry-run binding of a pod no scheduler runs for yet.
	probe := makePod(t, ns, "probe", podSpec{})
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, time.Minute, "the binding policy in force", func(ctx context.Context) (bool, error) {
		err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "nowhere"},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "bindings are blocked"), nil
	})
	deletePod(t, ctx, ns, "probe")
	return lift
}

// TestFailedBindingReleasesAndRetries: the API server refuses a joint pod's binding.
// The scheduler unreserves it: another pod gets its GPUs and VFs meanwhile. Once
// bindings are allowed again, the first pod is retried, gets other devices and binds
// with them; no device is held twice. Two ways of writing the annotation:
//
//   - bind: the checked-in configuration, the plugin binds and the binding carries
//     the annotation, so a refused binding leaves no annotation;
//   - prebind: DefaultBinder binds, so PreBind has written the annotation before the
//     binding was refused, and the retry must replace it (gpu list included) although
//     its GPUs went to the other pod.
func TestFailedBindingReleasesAndRetries(t *testing.T) {
	needEnv(t)
	for _, mode := range []string{"bind", "prebind"} {
		t.Run(mode, func(t *testing.T) {
			var edit func(map[string]any)
			if mode == "prebind" {
				undo, err := applyConfig(context.Background(), "rbac-prebind.yaml") // PreBind patches pods
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(undo)
				edit = func(cfg map[string]any) {
					delete(cfg["profiles"].([]any)[0].(map[string]any)["plugins"].(map[string]any), "bind")
				}
			}
			failedBindingRetries(t, mode, edit)
		})
	}
}

func failedBindingRetries(t *testing.T, mode string, edit func(map[string]any)) {
	ctx := context.Background()
	blocked := namespace(t, ctx, "bind-blocked-"+mode)
	open := namespace(t, ctx, "bind-open-"+mode)
	createNodes(t, ctx, makeNode("bind-"+mode, shape{roots: 1, gpus: 4, pfs: 1, vfs: 8}))
	lift := denyBindings(t, ctx, blocked)
	s := startScheduler(t, edit)

	joint := podSpec{rdma: 2, gpus: 2, hint: &rdma.DeviceHint{VFSelector: &metav1.LabelSelector{}},
		joint: &rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe}}
	if _, err := cs.CoreV1().Pods(blocked).Create(ctx, makePod(t, blocked, "a", joint), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var refused *corev1.Pod
	waitFor(t, ctx, time.Minute, "pod a refused its binding", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(blocked).Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		refused = p
		c := scheduledCondition(p)
		return p.Spec.NodeName == "" && c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "bindings are blocked"), nil
	})
	_, annotated := refused.Annotations[rdma.AnnotationDeviceAllocated]
	var staleKeys []string
	switch {
	case mode == "bind" && annotated:
		t.Fatalf("the plugin binds, yet pod a carries an annotation though its binding was refused: %s", refused.Annotations[rdma.AnnotationDeviceAllocated])
	case mode == "prebind" && !annotated:
		t.Fatal("PreBind ran before the refused binding, yet pod a carries no annotation")
	case annotated:
		staleKeys = rdmaKeys(t, refused)
	}

	// Pod a failed, so its devices were released: b (same request) can get them.
	if _, err := cs.CoreV1().Pods(open).Create(ctx, makePod(t, open, "b", joint), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bKeys := rdmaKeys(t, waitBound(t, ctx, open, "b"))
	if staleKeys != nil && !slices.ContainsFunc(bKeys, func(k string) bool { return slices.Contains(staleKeys, k) }) {
		// b was scheduled while a held a reservation in a retry: a's retry then gets
		// the same devices as before and the stale annotation is no test.
		t.Logf("b got %v, none of a's failed attempt %v: the retry path with other devices was not exercised", bKeys, staleKeys)
	}

	lift()
	got := waitBound(t, ctx, blocked, "a")
	aKeys := rdmaKeys(t, got)
	for _, k := range aKeys {
		if slices.Contains(bKeys, k) {
			t.Errorf("a holds %s, which b holds (a %v, b %v)", k, aKeys, bKeys)
		}
	}
	if len(aKeys) != 4 {
		t.Errorf("a holds %v, want 2 VFs and 2 GPUs", aKeys)
	}
	if n := checkNoDeviceTwice(t, append(listPods(t, ctx, blocked), listPods(t, ctx, open)...)); n != 2 {
		t.Errorf("%d pods bound with devices, want 2", n)
	}
	if n := s.logCount("gpu: the annotation holds GPUs"); n != 0 {
		t.Errorf("the scheduler log shows %d failures on a's stale gpu list", n)
	}
}
