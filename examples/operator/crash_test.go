package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// A crash at every write: the ModelServing controller must keep its promises
// whatever write the previous process died after. For each scenario (a rollout
// in each mode, a recovery, a scale, a rollback) the test first runs it once
// without a crash and counts the controller's writes to the API server (W);
// then, for every k from 1 to W, it runs the scenario in a namespace of its own
// where the controller stops dead after its k-th write (every later write
// fails, so the API server's state is what a process killed right then would
// leave), lets the world move on, and starts a fresh controller (new cache,
// no expectations) on that state. At every observed state of every namespace
// the invariants hold (rollouttest.Monitor per pool, and checkGates: no
// readiness gate open on a pod running another image than its spec, no gang
// serving two revisions), and every run converges with every pod at the
// target. The crashes are counted writes, not kills by time, so each run is
// reproducible: KPLAN_CRASH_AT=<k> runs one crash point,
// KPLAN_CRASH_SCENARIOS=<name,...> some scenarios, and KPLAN_CRASH_LARGE=1
// larger ModelServings (a group more, two decode pods per group).

// errCrashed is what every write of a crashed controller returns.
var errCrashed = errors.New("the controller crashed before this write")

// crashClient counts the operator's writes per namespace; a namespace with a
// limit k stops taking writes after the k-th (the k-th itself is sent).
type crashClient struct {
	client.Client
	mu      sync.Mutex
	limit   map[string]int
	count   map[string]int
	crashed map[string]bool
}

func newCrashClient(c client.Client, limit map[string]int) *crashClient {
	return &crashClient{Client: c, limit: limit, count: map[string]int{}, crashed: map[string]bool{}}
}

// write counts one write to namespace ns; errCrashed when the namespace's
// controller is dead.
func (c *crashClient) write(ns string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed[ns] {
		return errCrashed
	}
	c.count[ns]++
	if k, ok := c.limit[ns]; ok && c.count[ns] >= k {
		c.crashed[ns] = true
	}
	return nil
}

// state returns how many writes namespace ns took and whether it crashed.
func (c *crashClient) state(ns string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[ns], c.crashed[ns]
}

func (c *crashClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *crashClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *crashClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *crashClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *crashClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return errors.New("crashClient: DeleteAllOf is not counted per namespace")
}

func (c *crashClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return errors.New("crashClient: Apply is not counted per namespace")
}

func (c *crashClient) Status() client.SubResourceWriter {
	return crashWriter{c.Client.Status(), c}
}

func (c *crashClient) SubResource(name string) client.SubResourceClient {
	return crashSubClient{c.Client.SubResource(name), c}
}

type crashWriter struct {
	client.SubResourceWriter
	c *crashClient
}

func (w crashWriter) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := w.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return w.SubResourceWriter.Create(ctx, obj, sub, opts...)
}

func (w crashWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := w.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w crashWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := w.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (w crashWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return errors.New("crashClient: Apply is not counted per namespace")
}

type crashSubClient struct {
	client.SubResourceClient
	c *crashClient
}

func (s crashSubClient) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s crashSubClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s crashSubClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.c.write(obj.GetNamespace()); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s crashSubClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return errors.New("crashClient: Apply is not counted per namespace")
}

// crashScenario is one ModelServing and what happens to it once it runs.
type crashScenario struct {
	name string
	spec func() servingv1.ModelServingSpec
	// prepare, when set, runs with a working controller after the deploy and
	// is waited for.
	prepare func(t *testing.T, r *crashRun)
	// change starts what the controller carries out: a spec edit, or a pod
	// failing.
	change func(t *testing.T, r *crashRun)
}

// crashRun is one ModelServing in its own namespace, its watch and kubelet.
type crashRun struct {
	ns string
	ms *servingv1.ModelServing
	pw *podWatch
	k  *msKubelet
}

// crashRoles are the crash scenarios' roles: one prefill and one decode pod per
// serving group (two decode pods with KPLAN_CRASH_LARGE set).
func crashRoles(image string) []servingv1.Role {
	roles := msRoles(image)
	if os.Getenv("KPLAN_CRASH_LARGE") == "" {
		roles[1].Replicas = 1
	}
	return roles
}

// crashSpec is a scenario's spec: groups serving groups (one more with
// KPLAN_CRASH_LARGE set).
func crashSpec(mode servingv1.RolloutMode, groups int32) servingv1.ModelServingSpec {
	if os.Getenv("KPLAN_CRASH_LARGE") != "" {
		groups++
	}
	return servingv1.ModelServingSpec{Replicas: ptr(groups), Roles: crashRoles("engine:v1"),
		RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}}
}

func editSpec(f func(*servingv1.ModelServing)) func(*testing.T, *crashRun) {
	return func(t *testing.T, r *crashRun) {
		editModelServing(t, r.ms, func(m *servingv1.ModelServing) { f(m); r.pw.expect(m.Spec) })
	}
}

func crashScenarios() []crashScenario {
	return []crashScenario{
		{name: "rolling-recreate", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.RollingMode, 2) },
			change: editSpec(setImageAndEnv("engine:v2"))},
		{name: "gang-in-place", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.GangMode, 2) },
			change: editSpec(setImage("engine:v2"))},
		{name: "gang-recreate-surge", spec: func() servingv1.ModelServingSpec {
			s := crashSpec(servingv1.GangMode, 2)
			s.RolloutStrategy.MaxSurge = intOrStr(intstr.FromInt(1))
			return s
		}, change: editSpec(setImageAndEnv("engine:v2"))},
		{name: "group", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.GroupMode, 2) },
			change: editSpec(setImageAndEnv("engine:v2"))},
		{name: "lockstep-in-place", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.LockstepMode, 2) },
			change: editSpec(setImage("engine:v2"))},
		{name: "recovery", spec: func() servingv1.ModelServingSpec {
			s := crashSpec(servingv1.GangMode, 2)
			s.RecoveryPolicy = &servingv1.RecoveryPolicy{Strategy: servingv1.CreateThenDelete}
			return s
		}, change: func(t *testing.T, r *crashRun) { r.k.fail(t, r.ms.Name+"-decode-1-0") }},
		{name: "scale", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.RollingMode, 1) },
			change: editSpec(func(m *servingv1.ModelServing) { m.Spec.Replicas = ptr(int32(3)) })},
		{name: "rollback", spec: func() servingv1.ModelServingSpec { return crashSpec(servingv1.GangMode, 2) },
			// One group moved to a new template, the partition holding the other;
			// then the template is reverted and the partition lifted.
			prepare: editSpec(func(m *servingv1.ModelServing) {
				setImageAndEnv("engine:v2")(m)
				m.Spec.RolloutStrategy.Partition = intOrStr(intstr.FromInt(1))
			}),
			change: editSpec(func(m *servingv1.ModelServing) {
				for i := range m.Spec.Roles {
					m.Spec.Roles[i].Template.Spec.Containers[0].Env = nil
				}
				setImage("engine:v1")(m)
				m.Spec.RolloutStrategy.Partition = nil
			})},
	}
}

// TestModelServingCrashAtEveryWrite runs every crash scenario with a crash after
// each of the controller's writes (see the comment above).
func TestModelServingCrashAtEveryWrite(t *testing.T) {
	only := map[string]bool{}
	if v := os.Getenv("KPLAN_CRASH_SCENARIOS"); v != "" {
		for _, s := range strings.Split(v, ",") {
			only[s] = true
		}
	}
	at := 0
	if v := os.Getenv("KPLAN_CRASH_AT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KPLAN_CRASH_AT=%q: want a number from 1", v)
		}
		at = n
	}
	total := 0
	for _, sc := range crashScenarios() {
		if len(only) > 0 && !only[sc.name] {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			total += runCrashes(t, sc, at)
		})
	}
	t.Logf("%d crash points covered", total)
}

// runCrashes runs one scenario: once without a crash to count its writes W,
// then with a crash after each k in 1..W (only k = at when at > 0), all
// namespaces at once. It returns the number of runs whose controller crashed.
func runCrashes(t *testing.T, sc crashScenario, at int) int {
	control := startCrashRuns(t, sc, []int{0})
	w := control.written[0]
	t.Logf("%s: %d writes without a crash", sc.name, w)
	if w == 0 {
		t.Fatal("the scenario made no write")
	}
	ks := make([]int, 0, w)
	for k := 1; k <= w; k++ {
		if at == 0 || k == at {
			ks = append(ks, k)
		}
	}
	res := startCrashRuns(t, sc, ks)
	crashed := 0
	for _, c := range res.crashed {
		if c {
			crashed++
		}
	}
	t.Logf("%s: %d of %d runs crashed (the others finished in fewer writes), all converged", sc.name, crashed, len(ks))
	return crashed
}

// crashResult is what startCrashRuns saw per run: the writes each controller
// made before it crashed or the rollout finished, and whether it crashed.
type crashResult struct {
	written []int
	crashed []bool
}

// startCrashRuns deploys the scenario once per limit (0: no crash), each in a
// namespace of its own, waits for all to run, starts an operator whose writes
// stop after each namespace's limit, makes the change everywhere, waits until
// every run crashed or finished, and then starts a fresh operator and waits for
// every run to converge, checking every observed state.
func startCrashRuns(t *testing.T, sc crashScenario, limits []int) crashResult {
	t.Helper()
	ctx := context.Background()
	// One kubelet for all runs (a kubelet per namespace would list pods a
	// thousand times a second).
	opts := kubeletDefaults
	opts.StartDelay, opts.RestartDelay = 200*time.Millisecond, 200*time.Millisecond
	kl, err := testenv.StartKubelet(ctx, admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kl.Stop)
	runs := make([]*crashRun, len(limits))
	for i := range limits {
		ns := newNamespace(t)
		k := &msKubelet{Kubelet: kl, ns: ns}
		pw := watchPods(t, ns, "crash")
		ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crash"}, Spec: sc.spec()}
		pw.expect(ms.Spec)
		if err := admin.Create(ctx, ms); err != nil {
			t.Fatal(err)
		}
		runs[i] = &crashRun{ns: ns, ms: ms, pw: pw, k: k}
	}
	for _, r := range runs {
		waitRolledOut(t, r.ms, r.pw, 120*time.Second)
		r.pw.checkGates(true)
		if sc.prepare != nil {
			sc.prepare(t, r)
		}
	}
	if sc.prepare != nil {
		for _, r := range runs {
			waitRolledOut(t, r.ms, r.pw, 120*time.Second)
		}
	}
	limit := map[string]int{}
	for i, r := range runs {
		if limits[i] > 0 {
			limit[r.ns] = limits[i]
		}
	}
	var cc *crashClient
	restartManager(t, &managerOptions{wrap: func(c client.Client) client.Client {
		cc = newCrashClient(c, limit)
		return cc
	}})
	t.Cleanup(func() {
		if cc != nil {
			restartManager(t, nil)
		}
	})
	for _, r := range runs {
		sc.change(t, r)
	}
	// Every run either crashes or finishes without reaching its limit. A run
	// finishes only after the controller's first write: a change the generation
	// does not show (a pod failing) leaves the old status complete and the
	// watch converged until the controller and the watch have seen it (on a busy
	// machine the first check came before both, counting no write at all).
	for i, r := range runs {
		err := waitFor(120*time.Second, func() error {
			written, crashed := cc.state(r.ns)
			if crashed {
				return nil
			}
			cur := getMS(t, r.ms)
			if written > 0 && cur.Status.ObservedGeneration == cur.Generation && isComplete(cur) && r.pw.converged() == nil {
				return nil
			}
			n, _ := cc.state(r.ns)
			return fmt.Errorf("%d writes, limit %d, not converged", n, limits[i])
		})
		if err != nil {
			t.Fatalf("run %d (%s): %v", i, r.ns, err)
		}
	}
	out := crashResult{written: make([]int, len(runs)), crashed: make([]bool, len(runs))}
	for i, r := range runs {
		out.written[i], out.crashed[i] = cc.state(r.ns)
	}
	// The world moves on while the operator is down.
	time.Sleep(time.Second)
	restartManager(t, nil)
	cc = nil
	for i, r := range runs {
		waitRolledOut(t, r.ms, r.pw, 120*time.Second)
		// Pods the last steps deleted may still be terminating.
		if err := waitFor(30*time.Second, func() error { return atTarget(ctx, r) }); err != nil {
			t.Errorf("run %d (%s, crash after write %d): %v", i, r.ns, limits[i], err)
		}
		r.pw.finishNamed(fmt.Sprintf("run %d (%s, crash after write %d of %d)", i, r.ns, limits[i], out.written[i]))
	}
	return out
}

// atTarget checks that every pod of the run runs its spec's images, is ready, and
// is on the update revision.
func atTarget(ctx context.Context, r *crashRun) error {
	cur := &servingv1.ModelServing{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(r.ms), cur); err != nil {
		return err
	}
	want := map[string]string{}
	for _, role := range cur.Spec.Roles {
		want[role.Name] = role.Template.Spec.Containers[0].Image
	}
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(r.ns), client.MatchingLabels{servingv1.LabelName: r.ms.Name}); err != nil {
		return err
	}
	if n := podCount(cur.Spec); len(pods.Items) != n {
		return fmt.Errorf("%d pods, want %d", len(pods.Items), n)
	}
	for _, p := range pods.Items {
		if p.Labels[servingv1.LabelRevision] != cur.Status.UpdateRevision {
			return fmt.Errorf("pod %s on %s, want %s", p.Name, p.Labels[servingv1.LabelRevision], cur.Status.UpdateRevision)
		}
		if img := p.Spec.Containers[0].Image; img != want[p.Labels[servingv1.LabelRole]] {
			return fmt.Errorf("pod %s runs %s, want %s", p.Name, img, want[p.Labels[servingv1.LabelRole]])
		}
		if !isReady(&p) || !gatesTrue(&p) {
			return fmt.Errorf("pod %s not ready", p.Name)
		}
	}
	return nil
}
