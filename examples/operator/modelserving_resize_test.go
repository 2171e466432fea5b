package operator_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
)

// The in-place resize tests: the roles' engine starts Burstable (requests
// below limits) with a resize policy that restarts it for a memory change and
// not for a cpu change; testenv's kubelet plays the node's resize.

// engineResources is the engine's requests and limits.
func engineResources(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(memReq)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
	}
}

// setResources sets every role's engine resources.
func setResources(r corev1.ResourceRequirements) func(*servingv1.ModelServing) {
	return func(ms *servingv1.ModelServing) {
		for i := range ms.Spec.Roles {
			ms.Spec.Roles[i].Template.Spec.Containers[0].Resources = *r.DeepCopy()
		}
	}
}

// deploySized creates a ModelServing of 3 serving groups whose engines have
// resources r and the resize policy above, watched by a new podWatch, and waits
// for it.
func deploySized(t *testing.T, ns, name string, mode servingv1.RolloutMode, r corev1.ResourceRequirements) (*servingv1.ModelServing, *podWatch, *msKubelet) {
	t.Helper()
	k := startMSKubelet(t, ns, 100*time.Millisecond)
	pw := watchPods(t, ns, name)
	groups := int32(3)
	ms := &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"),
			RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}},
	}
	setResources(r)(ms)
	for i := range ms.Spec.Roles {
		ms.Spec.Roles[i].Template.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
		}
	}
	pw.expect(ms.Spec)
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 60*time.Second)
	return ms, pw, k
}

// sameCPUMemory compares the cpu and memory of two resource lists by value.
func sameCPUMemory(a, b corev1.ResourceList) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		qa, oka := a[name]
		qb, okb := b[name]
		if oka != okb || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// applied reports whether container status s reports the resources r applied
// (status resources and allocatedResources).
func applied(s corev1.ContainerStatus, r corev1.ResourceRequirements) bool {
	return s.Resources != nil && sameCPUMemory(s.Resources.Requests, r.Requests) && sameCPUMemory(s.Resources.Limits, r.Limits) &&
		sameCPUMemory(s.AllocatedResources, r.Requests)
}

// resizeGate watches a ModelServing's pods and checks, at every event, that a
// pod whose readiness gate is True runs with the resources its spec names: a
// running container reporting status resources reports its spec's, and no
// resize is pending or in progress.
type resizeGate struct {
	stop func() // ends the watch

	mu        sync.Mutex
	events    int
	violation error
}

func watchResizeGate(t *testing.T, ns, name string) *resizeGate {
	t.Helper()
	g := &resizeGate{}
	g.stop = onPodEvents(t, ns, name, func(_ context.Context, ev watch.Event) {
		if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted {
			g.check(p)
		}
	}, g.fail)
	return g
}

func (g *resizeGate) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.violation == nil {
		g.violation = err
	}
}

func (g *resizeGate) check(p *corev1.Pod) {
	g.mu.Lock()
	g.events++
	g.mu.Unlock()
	if c := kube.PodCondition(p, servingv1.PodConditionImagesReady); c == nil || c.Status != corev1.ConditionTrue || p.DeletionTimestamp != nil {
		return
	}
	for _, t := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if kube.PodCondition(p, t) != nil {
			g.fail(fmt.Errorf("pod %s: gate open while its status has %s", p.Name, t))
		}
	}
	for _, c := range p.Spec.Containers {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == c.Name && s.State.Running != nil && s.Resources != nil && !applied(s, c.Resources) {
				g.fail(fmt.Errorf("pod %s: gate open while container %s runs with %v, allocated %v, its spec %v", p.Name, c.Name, s.Resources, s.AllocatedResources, c.Resources))
			}
		}
	}
}

// finish stops the watch and fails the test on a violation.
func (g *resizeGate) finish(t *testing.T) {
	t.Helper()
	g.stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.violation != nil {
		t.Fatalf("gate check: %v", g.violation)
	}
	if g.events == 0 {
		t.Fatal("the gate check saw no pod event")
	}
}

// checkPodsRun checks that every pod of ms runs revision rev with image and
// resources r applied (and ready, gates True), and returns the engine's
// restart count by pod.
func checkPodsRun(t *testing.T, ms *servingv1.ModelServing, rev, image string, r corev1.ResourceRequirements) map[string]int32 {
	t.Helper()
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		t.Fatal(err)
	}
	restarts := map[string]int32{}
	for _, p := range pods.Items {
		c := p.Spec.Containers[0]
		if p.Labels[servingv1.LabelRevision] != rev || c.Image != image || !sameCPUMemory(c.Resources.Requests, r.Requests) || !sameCPUMemory(c.Resources.Limits, r.Limits) ||
			len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Image != image || !applied(p.Status.ContainerStatuses[0], r) ||
			!isReady(&p) || !gatesTrue(&p) {
			t.Errorf("pod %s after the rollout: revision %s (want %s), spec %s %v, statuses %+v, conditions %+v",
				p.Name, p.Labels[servingv1.LabelRevision], rev, c.Image, c.Resources, p.Status.ContainerStatuses, p.Status.Conditions)
			continue
		}
		restarts[p.Name] = p.Status.ContainerStatuses[0].RestartCount
	}
	return restarts
}

// TestModelServingResizesInPlace: in each mode, a rollout that changes only the
// engine's cpu and memory moves every pod in place (same names and UIDs, no
// create or delete, each pod's revision label changed once) through the
// resize subresource, under the budget (rollouttest.Monitor and servingFloor
// at every pod event), with no gate open on resources the node has not
// applied; the engine restarts once, as its memory resize policy says. Then a
// change of image and resources together moves them in place the same way.
func TestModelServingResizesInPlace(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode, servingv1.LockstepMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			name := "resize-" + strings.ToLower(string(mode))
			ms, pw, _ := deploySized(t, ns, name, mode, engineResources("1", "2", "1Gi", "2Gi"))
			gate := watchResizeGate(t, ns, name)
			n := podCount(ms.Spec)
			before := podUIDs(t, ms)
			pw.checkServing(true)
			pw.checkGates(true)

			bigger := engineResources("2", "4", "2Gi", "4Gi")
			c0, d0, m0 := pw.counts()
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setResources(bigger)(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			c1, d1, m1 := pw.counts()
			if c1 != c0 || d1 != d0 || m1-m0 != n {
				t.Errorf("resources-only rollout: %d creates, %d deletes, %d pods moved in place; want 0, 0 and %d", c1-c0, d1-d0, m1-m0, n)
			}
			if diff := cmp.Diff(before, podUIDs(t, ms)); diff != "" {
				t.Errorf("pods (name: UID) changed by a resources-only rollout (-before +after):\n%s", diff)
			}
			for pod, restarts := range checkPodsRun(t, ms, getMS(t, ms).Status.UpdateRevision, "engine:v1", bigger) {
				if restarts != 1 {
					t.Errorf("pod %s: engine restarted %d times by a memory resize under RestartContainer, want 1", pod, restarts)
				}
			}

			both := engineResources("3", "4", "2Gi", "4Gi") // cpu only: no restart for the resize
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); setResources(both)(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			c2, d2, m2 := pw.counts()
			if c2 != c1 || d2 != d1 || m2-m1 != n {
				t.Errorf("image and resources rollout: %d creates, %d deletes, %d pods moved in place; want 0, 0 and %d", c2-c1, d2-d1, m2-m1, n)
			}
			if diff := cmp.Diff(before, podUIDs(t, ms)); diff != "" {
				t.Errorf("pods (name: UID) changed by an image and resources rollout (-before +after):\n%s", diff)
			}
			for pod, restarts := range checkPodsRun(t, ms, getMS(t, ms).Status.UpdateRevision, "engine:v2", both) {
				if restarts != 2 {
					t.Errorf("pod %s: engine restarted %d times in all, want 2 (memory resize, new image)", pod, restarts)
				}
			}
			pw.finish()
			gate.finish(t)
		})
	}
}

// TestModelServingRecreatesOnInfeasibleResize: a resize the node reports
// Infeasible (PodResizePending) falls back to recreating the pod, under the
// budget (every pod event checked by rollouttest.Monitor and servingFloor): the
// rollout completes with every pod new (new UIDs, same names), created with the
// new resources. A change the resize subresource cannot express (the QoS
// class) recreates without trying.
func TestModelServingRecreatesOnInfeasibleResize(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			name := "infeasible-" + strings.ToLower(string(mode))
			ms, pw, k := deploySized(t, ns, name, mode, engineResources("1", "2", "1Gi", "2Gi"))
			gate := watchResizeGate(t, ns, name)
			n := podCount(ms.Spec)
			before := podUIDs(t, ms)
			pw.checkServing(true)
			pw.checkGates(true)
			huge := resource.MustParse("32")
			k.SetResizeInfeasible(func(p *corev1.Pod) bool { return p.Spec.Containers[0].Resources.Limits.Cpu().Cmp(huge) >= 0 })

			tooBig := engineResources("1", "32", "1Gi", "2Gi")
			c0, d0, _ := pw.counts()
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setResources(tooBig)(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 120*time.Second)
			c1, d1, m1 := pw.counts()
			if c1-c0 != n || d1-d0 != n {
				t.Errorf("infeasible resize: %d creates, %d deletes; want %d and %d (every pod recreated)", c1-c0, d1-d0, n, n)
			}
			after := podUIDs(t, ms)
			for pod, uid := range before {
				if after[pod] == "" || after[pod] == uid {
					t.Errorf("pod %s: UID %s before, %q after; want a new pod of that name", pod, uid, after[pod])
				}
			}
			checkPodsRun(t, ms, getMS(t, ms).Status.UpdateRevision, "engine:v1", tooBig)

			guaranteed := engineResources("2", "2", "2Gi", "2Gi") // Burstable to Guaranteed
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setResources(guaranteed)(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 120*time.Second)
			c2, d2, m2 := pw.counts()
			if c2-c1 != n || d2-d1 != n || m2 != m1 {
				t.Errorf("a QoS class change: %d creates, %d deletes, %d moved in place; want %d, %d and 0", c2-c1, d2-d1, m2-m1, n, n)
			}
			checkPodsRun(t, ms, getMS(t, ms).Status.UpdateRevision, "engine:v1", guaranteed)
			pw.finish()
			gate.finish(t)
		})
	}
}

// sizedSpec is a crash scenario's spec with the engines' resources and resize
// policy of the resize tests.
func sizedSpec(mode servingv1.RolloutMode, r corev1.ResourceRequirements) servingv1.ModelServingSpec {
	s := crashSpec(mode, 2)
	ms := &servingv1.ModelServing{Spec: s}
	setResources(r)(ms)
	for i := range ms.Spec.Roles {
		ms.Spec.Roles[i].Template.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
			{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
		}
	}
	return ms.Spec
}

// TestModelServingResizeCrashAtEveryWrite: the crash test (see
// TestModelServingCrashAtEveryWrite) of in-place resizes: a gang moving to a
// new image and new resources at once, and a rolling resize the node refuses
// (recreated). Whatever write the controller dies after (a gate closed, a pod
// resized but not relabelled, relabelled but not yet resized by the node, a
// pod deleted for its infeasible resize), the invariants hold at every observed
// state and a fresh controller converges.
func TestModelServingResizeCrashAtEveryWrite(t *testing.T) {
	at := 0
	if v := os.Getenv("KPLAN_CRASH_AT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KPLAN_CRASH_AT=%q: want a number from 1", v)
		}
		at = n
	}
	from := engineResources("1", "2", "1Gi", "2Gi")
	for _, sc := range []crashScenario{
		{name: "gang-resize-and-image", spec: func() servingv1.ModelServingSpec { return sizedSpec(servingv1.GangMode, from) },
			change: editSpec(func(m *servingv1.ModelServing) {
				setImage("engine:v2")(m)
				setResources(engineResources("2", "4", "2Gi", "4Gi"))(m)
			})},
		{name: "rolling-resize-infeasible", spec: func() servingv1.ModelServingSpec { return sizedSpec(servingv1.RollingMode, from) },
			change: func(t *testing.T, r *crashRun) {
				r.k.SetResizeInfeasible(func(p *corev1.Pod) bool {
					return p.Spec.Containers[0].Resources.Limits.Cpu().Cmp(resource.MustParse("32")) >= 0
				})
				editSpec(setResources(engineResources("1", "32", "1Gi", "2Gi")))(t, r)
			}},
	} {
		t.Run(sc.name, func(t *testing.T) { runCrashes(t, sc, at) })
	}
}

// TestOperatorResizesOnlyItsPods: the operator's ServiceAccount may patch
// pods/resize (its ClusterRole), and the policy kplan-operator-writes keeps
// that to pods a ModelServing controls: its resize of another pod is refused,
// while the same resize by an administrator is valid and applied.
func TestOperatorResizesOnlyItsPods(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Resources: engineResources("1", "2", "1Gi", "2Gi")}}}}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	resize := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"1500m"}}}]}}`))
	err := operClient(t).SubResource("resize").Patch(ctx, pod.DeepCopy(), resize)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only of pods a ModelServing controls") {
		t.Fatalf("the operator resizing a pod no ModelServing controls: %v; want Forbidden by the kplan-operator-writes policy", err)
	}
	got := pod.DeepCopy()
	if err := admin.SubResource("resize").Patch(ctx, got, resize); err != nil {
		t.Fatalf("the same resize by an administrator: %v", err)
	}
	if q := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("cpu request after the administrator's resize: %s, want 1500m", q.String())
	}
}
