package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// The kubelet's tests run it against a real API server, started once for them
// (the other tests of the package need none). They assert the order of what
// happens and lower bounds of the delays, with upper bounds generous enough for
// a machine busy with other work.

var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
	kc      client.WithWatch
	nsSeq   int
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// apiServer starts the API server on first use and returns a client of it.
func apiServer(t *testing.T) client.WithWatch {
	t.Helper()
	envOnce.Do(func() {
		env, envErr = testenv.Start(context.Background(), testenv.Options{})
		if envErr == nil {
			kc, envErr = client.NewWithWatch(env.Config, client.Options{Scheme: clientgoscheme.Scheme})
		}
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return kc
}

// upper bounds every wait: generous, for a busy machine.
const upper = 30 * time.Second

// kubeletFor starts a kubelet on a namespace and node of the test's own.
func kubeletFor(t *testing.T, opts testenv.KubeletOptions) (client.WithWatch, string, *testenv.Kubelet) {
	t.Helper()
	c := apiServer(t)
	nsSeq++
	ns := fmt.Sprintf("kubelet-%d", nsSeq)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	opts.Namespace = ns
	if opts.Node == "" {
		opts.Node = "node-" + ns
	}
	k, err := testenv.StartKubelet(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return c, ns, k
}

func newPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}}}
}

// podEvents watches one pod's events; next reads them in order.
type podEvents struct {
	t *testing.T
	w watch.Interface
}

func watchPod(t *testing.T, c client.WithWatch, ns, name string) *podEvents {
	t.Helper()
	w, err := c.Watch(context.Background(), &corev1.PodList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &podEvents{t: t, w: w}
}

// next returns the first event that ok accepts, with when it was read, failing
// the test after the upper bound.
func (pe *podEvents) next(what string, ok func(watch.EventType, *corev1.Pod) bool) (*corev1.Pod, time.Time) {
	pe.t.Helper()
	timeout := time.After(upper)
	var last *corev1.Pod
	for {
		select {
		case ev, open := <-pe.w.ResultChan():
			if !open {
				pe.t.Fatalf("waiting for %s: the watch closed", what)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				pe.t.Fatalf("waiting for %s: event %s %v", what, ev.Type, ev.Object)
			}
			last = p
			if ok(ev.Type, p) {
				return p, time.Now()
			}
		case <-timeout:
			pe.t.Fatalf("waiting %v for %s; last seen %+v", upper, what, last)
		}
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func isReady(_ watch.EventType, p *corev1.Pod) bool {
	return condition(p, corev1.PodReady) == corev1.ConditionTrue
}

func atLeast(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got < want {
		t.Errorf("%s after %v, want at least %v", what, got, want)
	}
}

func TestKubeletBindsThenStarts(t *testing.T) {
	opts := testenv.KubeletOptions{BindDelay: 300 * time.Millisecond, StartDelay: 500 * time.Millisecond, Jitter: 0.5, Seed: 1}
	c, ns, k := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	start := time.Now()
	pod := newPod(ns, "p")
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "wait", Image: "wait:v1"},
		{Name: "sidecar", Image: "sidecar:v1", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	bound, boundAt := events.next("the binding", func(_ watch.EventType, p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if bound.Spec.NodeName != k.Node() || condition(bound, corev1.PodScheduled) != corev1.ConditionTrue || bound.Status.Phase != corev1.PodPending {
		t.Errorf("bound pod: node %q, phase %s, conditions %+v", bound.Spec.NodeName, bound.Status.Phase, bound.Status.Conditions)
	}
	pending, _ := events.next("the pending status", func(_ watch.EventType, p *corev1.Pod) bool { return condition(p, corev1.PodReady) != "" })
	if pending.Status.Phase == corev1.PodPending {
		if condition(pending, corev1.PodInitialized) != corev1.ConditionFalse || len(pending.Status.ContainerStatuses) != 1 || pending.Status.ContainerStatuses[0].State.Waiting == nil {
			t.Errorf("pending pod: conditions %+v, containers %+v", pending.Status.Conditions, pending.Status.ContainerStatuses)
		}
	}
	running, runningAt := events.next("the pod ready", isReady)
	atLeast(t, "bound", boundAt.Sub(start), opts.BindDelay)
	atLeast(t, "ready", runningAt.Sub(start), opts.BindDelay+opts.StartDelay)
	s := running.Status
	if s.Phase != corev1.PodRunning || s.StartTime == nil || s.PodIP == "" || s.HostIP == "" {
		t.Errorf("running pod: phase %s, start time %v, pod IP %q, host IP %q", s.Phase, s.StartTime, s.PodIP, s.HostIP)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if condition(running, ct) != corev1.ConditionTrue {
			t.Errorf("condition %s is not True: %+v", ct, s.Conditions)
		}
	}
	if len(s.ContainerStatuses) != 1 || s.ContainerStatuses[0].State.Running == nil || !s.ContainerStatuses[0].Ready || s.ContainerStatuses[0].ImageID != testenv.ImageID("app:v1") {
		t.Errorf("container statuses %+v", s.ContainerStatuses)
	}
	if len(s.InitContainerStatuses) != 2 || s.InitContainerStatuses[0].State.Terminated == nil || s.InitContainerStatuses[0].State.Terminated.ExitCode != 0 ||
		s.InitContainerStatuses[1].State.Running == nil || !s.InitContainerStatuses[1].Ready {
		t.Errorf("init container statuses %+v: want wait completed and sidecar running", s.InitContainerStatuses)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: k.Node()}, &node); err != nil {
		t.Fatal(err)
	}
	if len(node.Status.Conditions) == 0 || node.Status.Conditions[0].Type != corev1.NodeReady || node.Status.Conditions[0].Status != corev1.ConditionTrue || len(node.Spec.Taints) != 0 {
		t.Errorf("node %s: conditions %+v, taints %+v: want Ready and untainted", node.Name, node.Status.Conditions, node.Spec.Taints)
	}
}

func TestKubeletDeletesGracefully(t *testing.T) {
	opts := testenv.KubeletOptions{TerminateDelay: 700 * time.Millisecond, Jitter: 0.5, Seed: 2}
	c, ns, _ := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	running, _ := events.next("the pod ready", isReady)
	start := time.Now()
	if err := c.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(running), &p); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("right after the delete: %v, deletionTimestamp %v; want the pod terminating", err, p.DeletionTimestamp)
	}
	if err := c.Create(ctx, newPod(ns, "p")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating a pod of the terminating pod's name: %v, want AlreadyExists", err)
	}
	stopping, _ := events.next("the pod not ready", func(_ watch.EventType, p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && condition(p, corev1.PodReady) == corev1.ConditionFalse
	})
	if condition(stopping, corev1.ContainersReady) != corev1.ConditionFalse || stopping.Status.ContainerStatuses[0].Ready {
		t.Errorf("terminating pod: conditions %+v, containers %+v", stopping.Status.Conditions, stopping.Status.ContainerStatuses)
	}
	gone, goneAt := events.next("the pod removed", func(ev watch.EventType, _ *corev1.Pod) bool { return ev == watch.Deleted })
	atLeast(t, "removed", goneAt.Sub(start), opts.TerminateDelay)
	if gone.Status.Phase != corev1.PodSucceeded || gone.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("removed pod: phase %s, containers %+v; want Succeeded with its container terminated", gone.Status.Phase, gone.Status.ContainerStatuses)
	}
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Errorf("creating the pod again once removed: %v", err)
	}

	t.Run("a grace period shorter than the delay is kept", func(t *testing.T) {
		c, ns, _ := kubeletFor(t, testenv.KubeletOptions{TerminateDelay: time.Minute})
		events := watchPod(t, c, ns, "q")
		if err := c.Create(ctx, newPod(ns, "q")); err != nil {
			t.Fatal(err)
		}
		running, _ := events.next("the pod ready", isReady)
		start := time.Now()
		if err := c.Delete(ctx, running, client.GracePeriodSeconds(1)); err != nil {
			t.Fatal(err)
		}
		_, goneAt := events.next("the pod removed", func(ev watch.EventType, _ *corev1.Pod) bool { return ev == watch.Deleted })
		atLeast(t, "removed", goneAt.Sub(start), time.Second)
	})
}

func TestKubeletRestartsAChangedImage(t *testing.T) {
	opts := testenv.KubeletOptions{RestartDelay: 600 * time.Millisecond, Jitter: 0.5, Seed: 3}
	c, ns, _ := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	running, _ := events.next("the pod ready", isReady)
	start := time.Now()
	patch := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"app","image":"app:v2"}]}}`))
	if err := c.Patch(ctx, running, patch); err != nil {
		t.Fatal(err)
	}
	stopped, _ := events.next("the container stopped", func(_ watch.EventType, p *corev1.Pod) bool {
		return condition(p, corev1.PodReady) == corev1.ConditionFalse
	})
	if cs := stopped.Status.ContainerStatuses[0]; cs.Ready || cs.State.Waiting == nil || cs.Image != "app:v1" {
		t.Errorf("restarting container %+v: want waiting, not ready, still reporting app:v1", cs)
	}
	restarted, restartedAt := events.next("the pod ready again", isReady)
	atLeast(t, "restarted", restartedAt.Sub(start), opts.RestartDelay)
	cs := restarted.Status.ContainerStatuses[0]
	if cs.Image != "app:v2" || cs.ImageID != testenv.ImageID("app:v2") || cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
		t.Errorf("restarted container %+v: want app:v2 with its image ID, restart count 1, running", cs)
	}
	if restarted.UID != running.UID || restarted.Status.Phase != corev1.PodRunning {
		t.Errorf("the pod was replaced (%s -> %s) or left running (phase %s)", running.UID, restarted.UID, restarted.Status.Phase)
	}
}

func TestKubeletReadinessGates(t *testing.T) {
	c, ns, _ := kubeletFor(t, testenv.KubeletOptions{})
	ctx := context.Background()
	const gate = corev1.PodConditionType("example.com/gate")
	pod := newPod(ns, "p")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	up, _ := events.next("the containers ready", func(_ watch.EventType, p *corev1.Pod) bool {
		return condition(p, corev1.ContainersReady) == corev1.ConditionTrue
	})
	if condition(up, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("conditions %+v: want Ready False while the gate has no condition", up.Status.Conditions)
	}
	setGate := func(status corev1.ConditionStatus) {
		t.Helper()
		for {
			var p corev1.Pod
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
				t.Fatal(err)
			}
			p.Status.Conditions = append(slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == gate }),
				corev1.PodCondition{Type: gate, Status: status, LastTransitionTime: metav1.Now()})
			err := c.Status().Update(ctx, &p)
			if err == nil {
				return
			}
			if !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	setGate(corev1.ConditionTrue)
	ready, _ := events.next("the pod ready", isReady)
	if condition(ready, gate) != corev1.ConditionTrue {
		t.Errorf("the gate's condition was lost: %+v", ready.Status.Conditions)
	}
	setGate(corev1.ConditionFalse)
	notReady, _ := events.next("the pod not ready", func(_ watch.EventType, p *corev1.Pod) bool {
		return condition(p, corev1.PodReady) == corev1.ConditionFalse
	})
	if condition(notReady, gate) != corev1.ConditionFalse || condition(notReady, corev1.ContainersReady) != corev1.ConditionTrue {
		t.Errorf("conditions %+v: want the gate False, containers ready", notReady.Status.Conditions)
	}
}

func TestKubeletFail(t *testing.T) {
	c, ns, k := kubeletFor(t, testenv.KubeletOptions{RestartDelay: 10 * time.Millisecond})
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	events.next("the pod ready", isReady)
	if err := k.Fail(ctx, ns, "p"); err != nil {
		t.Fatal(err)
	}
	failed, _ := events.next("the pod failed", func(_ watch.EventType, p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if cs := failed.Status.ContainerStatuses[0]; cs.Ready || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || condition(failed, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("failed pod: container %+v, conditions %+v", cs, failed.Status.Conditions)
	}
	time.Sleep(300 * time.Millisecond) // many polls: the pod must stay failed
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(failed), &p); err != nil || p.Status.Phase != corev1.PodFailed {
		t.Errorf("after a while: %v, phase %s; want Failed still", err, p.Status.Phase)
	}
	// A pod in a terminal phase is deleted at once, as by a kubelet.
	if err := c.Delete(ctx, &p); err != nil {
		t.Fatal(err)
	}
	events.next("the failed pod removed", func(ev watch.EventType, _ *corev1.Pod) bool { return ev == watch.Deleted })
}

func TestKubeletLoseNode(t *testing.T) {
	c, ns, k := kubeletFor(t, testenv.KubeletOptions{})
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	events.next("the pod ready", isReady)
	if err := k.LoseNode(ctx); err != nil {
		t.Fatal(err)
	}
	lost, _ := events.next("the pod lost", func(_ watch.EventType, p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if lost.Status.Reason != "NodeLost" || condition(lost, corev1.PodReady) != corev1.ConditionFalse || lost.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("lost pod: reason %q, conditions %+v, containers %+v", lost.Status.Reason, lost.Status.Conditions, lost.Status.ContainerStatuses)
	}
	// The kubelet is gone: a new pod is neither bound nor started.
	if err := c.Create(ctx, newPod(ns, "q")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	var q corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "q"}, &q); err != nil || q.Spec.NodeName != "" {
		t.Errorf("a pod created after the node was lost: %v, node %q; want it unbound", err, q.Spec.NodeName)
	}
}

func TestKubeletAllow(t *testing.T) {
	opts := testenv.KubeletOptions{StartDelay: 50 * time.Millisecond, Allow: func(*corev1.Pod) bool { return false }}
	c, ns, k := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	events.next("the pending status", func(_ watch.EventType, p *corev1.Pod) bool { return condition(p, corev1.PodReady) != "" })
	time.Sleep(500 * time.Millisecond) // ten times the start delay
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p"}, &p); err != nil || p.Status.Phase != corev1.PodPending {
		t.Fatalf("a pod Allow refuses: %v, phase %s; want Pending", err, p.Status.Phase)
	}
	k.SetAllow(nil)
	events.next("the pod ready once allowed", isReady)
}

func TestKubeletLeavesOtherNodesPodsAlone(t *testing.T) {
	c, ns, k := kubeletFor(t, testenv.KubeletOptions{})
	ctx := context.Background()
	other := newPod(ns, "elsewhere")
	other.Spec.NodeName = "another-node"
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	events := watchPod(t, c, ns, "mine")
	if err := c.Create(ctx, newPod(ns, "mine")); err != nil {
		t.Fatal(err)
	}
	events.next("the kubelet's own pod ready", isReady)
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
		t.Fatal(err)
	}
	if len(other.Status.Conditions) != 0 || len(other.Status.ContainerStatuses) != 0 {
		t.Errorf("a pod of another node got status %+v", other.Status)
	}
	if err := k.Fail(ctx, ns, "elsewhere"); err == nil {
		t.Error("Fail of a pod on another node succeeded")
	}
}

func TestKubeletNoBind(t *testing.T) {
	c, ns, k := kubeletFor(t, testenv.KubeletOptions{NoBind: true})
	ctx := context.Background()
	if err := c.Create(ctx, newPod(ns, "unbound")); err != nil {
		t.Fatal(err)
	}
	// The scheduler's part, played by the test: a pod bound to the kubelet's node.
	events := watchPod(t, c, ns, "bound")
	bound := newPod(ns, "bound")
	bound.Spec.NodeName = k.Node()
	if err := c.Create(ctx, bound); err != nil {
		t.Fatal(err)
	}
	running, _ := events.next("the bound pod ready", isReady)
	if condition(running, corev1.PodScheduled) != corev1.ConditionTrue {
		t.Errorf("conditions %+v: want PodScheduled True, as a kubelet reports it", running.Status.Conditions)
	}
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unbound"}, &p); err != nil || p.Spec.NodeName != "" {
		t.Errorf("an unbound pod: %v, node %q; want it left to a scheduler", err, p.Spec.NodeName)
	}
}

func TestKubeletStop(t *testing.T) {
	c, ns, k := kubeletFor(t, testenv.KubeletOptions{})
	k.Stop()
	k.Stop() // idempotent
	ctx := context.Background()
	if err := c.Create(ctx, newPod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p"}, &p); err != nil || p.Spec.NodeName != "" {
		t.Errorf("a pod created after Stop: %v, node %q; want it unbound", err, p.Spec.NodeName)
	}
}

func ptr[T any](v T) *T { return &v }

// resources is a container's requests and limits of cpu and memory.
func resources(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
	}
}

// resizePod is a pod of two containers: app restarts when its memory is
// resized, helper never restarts.
func resizePod(ns, name string) *corev1.Pod {
	p := newPod(ns, name)
	p.Spec.Containers[0].Resources = resources("1", "2", "1Gi", "2Gi")
	p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
	}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "helper", Image: "helper:v1", Resources: resources("100m", "200m", "64Mi", "128Mi")})
	return p
}

// resizeTo patches the pod's resize subresource with new resources for one
// container.
func resizeTo(t *testing.T, c client.Client, p *corev1.Pod, container string, r corev1.ResourceRequirements) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []map[string]any{{"name": container, "resources": r}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubResource("resize").Patch(context.Background(), p, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		t.Fatalf("resizing %s: %v", container, err)
	}
}

func conditionOf(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

// sameResources compares resource lists by value (1000m equals 1).
func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if o, ok := b[k]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// TestKubeletResizesInPlace: a resize through the pod's resize subresource is
// in progress (PodResizeInProgress, allocatedResources the new requests, the
// old resources still applied; a container whose policy restarts it for the
// changed resource is down), then RestartDelay later applied: status resources
// equal to the spec, the condition gone, that container restarted once, the
// other running on, the pod the same.
func TestKubeletResizesInPlace(t *testing.T) {
	opts := testenv.KubeletOptions{RestartDelay: 600 * time.Millisecond, Jitter: 0.5, Seed: 4}
	c, ns, _ := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, resizePod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	running, _ := events.next("the pod ready", isReady)
	for _, name := range []string{"app", "helper"} {
		cs := containerStatus(running, name)
		spec := resizePod(ns, "p").Spec.Containers[slices.IndexFunc(running.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })].Resources
		if cs.Resources == nil || !sameResources(cs.Resources.Requests, spec.Requests) || !sameResources(cs.Resources.Limits, spec.Limits) || !sameResources(cs.AllocatedResources, spec.Requests) {
			t.Fatalf("container %s of a running pod: resources %v, allocated %v; want the spec's %v", name, cs.Resources, cs.AllocatedResources, spec)
		}
	}
	start := time.Now()
	bigger := resources("1", "2", "2Gi", "4Gi")
	resizeTo(t, c, running, "app", bigger)
	progress, _ := events.next("the resize in progress", func(_ watch.EventType, p *corev1.Pod) bool {
		return conditionOf(p, corev1.PodResizeInProgress) != nil
	})
	app := containerStatus(progress, "app")
	if !sameResources(app.AllocatedResources, bigger.Requests) || app.Resources == nil || sameResources(app.Resources.Limits, bigger.Limits) {
		t.Errorf("app while resizing: allocated %v (want %v), resources %v (want the old ones)", app.AllocatedResources, bigger.Requests, app.Resources)
	}
	if app.Ready || app.State.Running != nil || condition(progress, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("app (memory policy RestartContainer) while resizing: ready %v, state %+v, pod Ready %s; want it down", app.Ready, app.State, condition(progress, corev1.PodReady))
	}
	if h := containerStatus(progress, "helper"); !h.Ready || h.State.Running == nil || h.RestartCount != 0 {
		t.Errorf("helper (not resized) while resizing: %+v; want it running on", h)
	}
	if cond := conditionOf(progress, corev1.PodResizeInProgress); cond.Status != corev1.ConditionTrue || cond.ObservedGeneration != progress.Generation {
		t.Errorf("PodResizeInProgress %+v: want True at generation %d", cond, progress.Generation)
	}
	done, doneAt := events.next("the resize applied and the pod ready", func(_ watch.EventType, p *corev1.Pod) bool {
		return conditionOf(p, corev1.PodResizeInProgress) == nil && isReady(watch.Modified, p)
	})
	atLeast(t, "resized", doneAt.Sub(start), opts.RestartDelay)
	app = containerStatus(done, "app")
	if app.Resources == nil || !sameResources(app.Resources.Requests, bigger.Requests) || !sameResources(app.Resources.Limits, bigger.Limits) ||
		!sameResources(app.AllocatedResources, bigger.Requests) || app.RestartCount != 1 || app.State.Running == nil {
		t.Errorf("app after the resize: %+v; want the new resources, restarted once, running", app)
	}
	if h := containerStatus(done, "helper"); h.RestartCount != 0 {
		t.Errorf("helper restarted %d times", h.RestartCount)
	}
	if done.UID != running.UID || conditionOf(done, corev1.PodResizePending) != nil {
		t.Errorf("after the resize: UID %s (was %s), conditions %+v", done.UID, running.UID, done.Status.Conditions)
	}

	t.Run("a cpu resize under NotRequired keeps the container running", func(t *testing.T) {
		cpu := resources("1500m", "3", "2Gi", "4Gi")
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(done), &p); err != nil {
			t.Fatal(err)
		}
		resizeTo(t, c, &p, "app", cpu)
		progress, _ := events.next("the resize in progress", func(_ watch.EventType, p *corev1.Pod) bool {
			return conditionOf(p, corev1.PodResizeInProgress) != nil
		})
		if a := containerStatus(progress, "app"); !a.Ready || a.State.Running == nil {
			t.Errorf("app during a cpu resize: %+v; want it running and ready", a)
		}
		done, _ := events.next("the resize applied", func(_ watch.EventType, p *corev1.Pod) bool {
			return conditionOf(p, corev1.PodResizeInProgress) == nil
		})
		if a := containerStatus(done, "app"); a.Resources == nil || !sameResources(a.Resources.Limits, cpu.Limits) || a.RestartCount != 1 {
			t.Errorf("app after a cpu resize: %+v; want the new limits, no further restart", a)
		}
	})
}

// TestKubeletResizeInfeasible: a resize the node refuses reports
// PodResizePending, reason Infeasible, at the pod's generation; the container
// keeps running with the resources it had. Once the node accepts, the resize
// is applied.
func TestKubeletResizeInfeasible(t *testing.T) {
	opts := testenv.KubeletOptions{RestartDelay: 100 * time.Millisecond,
		ResizeInfeasible: func(p *corev1.Pod) bool {
			return p.Spec.Containers[0].Resources.Limits.Cpu().Cmp(resource.MustParse("4")) > 0
		}}
	c, ns, k := kubeletFor(t, opts)
	ctx := context.Background()
	events := watchPod(t, c, ns, "p")
	if err := c.Create(ctx, resizePod(ns, "p")); err != nil {
		t.Fatal(err)
	}
	running, _ := events.next("the pod ready", isReady)
	huge := resources("1", "64", "1Gi", "2Gi")
	resizeTo(t, c, running, "app", huge)
	pending, _ := events.next("the resize pending", func(_ watch.EventType, p *corev1.Pod) bool {
		return conditionOf(p, corev1.PodResizePending) != nil
	})
	cond := conditionOf(pending, corev1.PodResizePending)
	if cond.Status != corev1.ConditionTrue || cond.Reason != corev1.PodReasonInfeasible || cond.ObservedGeneration != pending.Generation || conditionOf(pending, corev1.PodResizeInProgress) != nil {
		t.Errorf("conditions %+v: want PodResizePending True, Infeasible, at generation %d, and no resize in progress", pending.Status.Conditions, pending.Generation)
	}
	app := containerStatus(pending, "app")
	if app.Resources == nil || sameResources(app.Resources.Limits, huge.Limits) || !app.Ready || app.RestartCount != 0 || !isReady(watch.Modified, pending) {
		t.Errorf("app under an infeasible resize: %+v; want the old resources, running and ready", app)
	}
	time.Sleep(300 * time.Millisecond) // several polls and restart delays: nothing changes
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(running), &p); err != nil {
		t.Fatal(err)
	}
	if a := containerStatus(&p, "app"); conditionOf(&p, corev1.PodResizePending) == nil || a.Resources == nil || sameResources(a.Resources.Limits, huge.Limits) {
		t.Errorf("later: conditions %+v, app %+v; want the resize still refused", p.Status.Conditions, a)
	}
	k.SetResizeInfeasible(nil)
	done, _ := events.next("the resize applied once feasible", func(_ watch.EventType, p *corev1.Pod) bool {
		a := containerStatus(p, "app")
		return a.Resources != nil && sameResources(a.Resources.Limits, huge.Limits)
	})
	if conditionOf(done, corev1.PodResizePending) != nil || conditionOf(done, corev1.PodResizeInProgress) != nil {
		t.Errorf("conditions after the resize %+v: want no resize condition", done.Status.Conditions)
	}
}
