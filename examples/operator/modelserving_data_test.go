package operator_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/revision"
)

// testDataLabel carries, on the watch's copies of the pods, the data revision a
// pod serves (servedData), for rollout.FromPods.
const testDataLabel = "test.kplan.dev/data-revision"

// servedData is the test's own reading of the data of a ModelServing's pods, from
// the documented annotations (not the operator's code): a pod's data revision
// (labelled testDataLabel on a copy) is the one it is asked for (the set's
// updateRevision annotation, else its currentRevision), so that the monitor
// sees the controller's data update when the controller writes it; a pod whose
// wanted revision differs from the one it serves is moving its data, so not
// ready.
func servedData(pods []*corev1.Pod, keys revision.Keys) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		cp := p.DeepCopy()
		if cp.Labels == nil {
			cp.Labels = map[string]string{}
		}
		cp.Labels[testDataLabel] = cmp.Or(p.Annotations[keys.UpdateRevision], p.Annotations[keys.CurrentRevision])
		if dataMoving(p, keys) {
			for j := range cp.Status.Conditions {
				if cp.Status.Conditions[j].Type == corev1.PodReady {
					cp.Status.Conditions[j].Status = corev1.ConditionFalse
				}
			}
		}
		out[i] = cp
	}
	return out
}

// dataMoving reports whether the pod is asked for data its reload sidecar has not
// confirmed yet.
func dataMoving(p *corev1.Pod, keys revision.Keys) bool {
	want := p.Annotations[keys.UpdateRevision]
	return want != "" && want != p.Annotations[keys.CurrentRevision]
}

// expectData makes the watch read the pods' data with the set's keys and check
// the pools under target as the data target.
func (pw *podWatch) expectData(keys revision.Keys, target string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.dataKeys, pw.dataTarget = &keys, target
}

// playReloadAgent plays the reload sidecars of the namespace's pods: a pod asked
// for a data revision it does not serve reports it (the set's currentRevision
// annotation and its timestamp, as the agent's revision.MarkCurrent writes them)
// delay later. It stops when the test ends.
func playReloadAgent(t *testing.T, ns string, keys revision.Keys, delay time.Duration) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	pending := map[types.UID]string{}
	wg.Go(func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.DeletionTimestamp != nil || !dataMoving(p, keys) {
				continue
			}
			want := p.Annotations[keys.UpdateRevision]
			mu.Lock()
			if pending[p.UID] == want {
				mu.Unlock()
				continue
			}
			pending[p.UID] = want
			mu.Unlock()
			name, uid := p.Name, p.UID
			wg.Go(func() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(delay):
				}
				patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%q,%q:%q}}}`, uid,
					keys.CurrentRevision, want, keys.CurrentRevisionTimestamp, revision.FormatTimestamp(time.Now()))
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if err := admin.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil && ctx.Err() == nil {
					t.Logf("agent: pod %s: %v", name, err)
				}
				mu.Lock()
				delete(pending, uid)
				mu.Unlock()
			})
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// outOfService is the test's own budget check, apart from rollouttest's: once
// armed, at every pod event, each role may have at most budget of its pods out of
// service (in Gang mode: at most budget serving groups with a pod out of
// service): missing, terminating, not ready, with a readiness gate not True, or
// moving its data.
type outOfService struct {
	mu        sync.Mutex
	armed     bool
	worst     int
	checked   int
	violation error
}

func watchOutOfService(t *testing.T, ns, name string, spec servingv1.ModelServingSpec, keys revision.Keys, budget int) *outOfService {
	t.Helper()
	o := &outOfService{}
	pods := map[string]*corev1.Pod{}
	want := map[string]int{}
	perGroup := 0
	for _, r := range spec.Roles {
		want[r.Name] = int(r.Replicas) * int(*spec.Replicas)
		perGroup += int(r.Replicas)
	}
	if spec.RolloutStrategy.Mode == servingv1.GangMode {
		want = map[string]int{"groups": int(*spec.Replicas)}
	}
	onPodEvents(t, ns, name, func(_ context.Context, ev watch.Event) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		if ev.Type == watch.Deleted {
			delete(pods, p.Name)
		} else {
			pods[p.Name] = p
		}
		serving := map[string]int{}
		groupServing := map[string]int{}
		for _, q := range pods {
			if q.DeletionTimestamp == nil && isReady(q) && gatesTrue(q) && !dataMoving(q, keys) {
				serving[q.Labels[servingv1.LabelRole]]++
				groupServing[q.Labels[servingv1.LabelGroupIndex]]++
			}
		}
		if spec.RolloutStrategy.Mode == servingv1.GangMode {
			serving = map[string]int{"groups": 0}
			for _, n := range groupServing {
				if n == perGroup {
					serving["groups"]++
				}
			}
		}
		o.mu.Lock()
		if o.armed {
			o.checked++
			for _, role := range slices.Sorted(maps.Keys(want)) {
				out := want[role] - serving[role]
				o.worst = max(o.worst, out)
				if out > budget && o.violation == nil {
					o.violation = fmt.Errorf("%s %s: role %s has %d of %d pods out of service, budget %d\npods:\n%s",
						ev.Type, p.Name, role, out, want[role], budget, describeData(pods, keys))
				}
			}
		}
		o.mu.Unlock()
	}, func(err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.violation == nil {
			o.violation = err
		}
	})
	return o
}

func (o *outOfService) arm() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.armed = true
}

func (o *outOfService) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.violation != nil {
		t.Fatal(o.violation)
	}
	if o.checked == 0 {
		t.Fatal("the out-of-service watch checked no event")
	}
	t.Logf("out-of-service watch: %d events checked, at most %d pods of a role (serving groups in Gang mode) out of service", o.checked, o.worst)
}

func describeData(pods map[string]*corev1.Pod, keys revision.Keys) string {
	var lines []string
	for _, p := range pods {
		lines = append(lines, fmt.Sprintf("  %s %s image=%s ready=%v gates=%v deleting=%v data wanted=%s served=%s", p.Name, p.Labels[servingv1.LabelRevision],
			p.Spec.Containers[0].Image, isReady(p), gatesTrue(p), p.DeletionTimestamp != nil, p.Annotations[keys.UpdateRevision], p.Annotations[keys.CurrentRevision]))
	}
	slices.Sort(lines)
	return fmt.Sprint(lines)
}

// waitDataServed waits until every pod of ms serves rev, confirmed, and the set's
// status says its rollout completed on rev for n pods.
func waitDataServed(t *testing.T, ms *servingv1.ModelServing, set *revision.ConfigMapSet, keys revision.Keys, rev string, n int) {
	t.Helper()
	err := waitFor(90*time.Second, func() error {
		var pods corev1.PodList
		if err := admin.List(context.Background(), &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
			return err
		}
		var errs []error
		for _, p := range pods.Items {
			if st, _ := keys.Read(&p); st.UpdateRevision != rev || st.CurrentRevision != rev {
				errs = append(errs, fmt.Errorf("pod %s wants %s, serves %s", p.Name, st.UpdateRevision, st.CurrentRevision))
			}
		}
		if len(pods.Items) != n {
			errs = append(errs, fmt.Errorf("%d pods, want %d", len(pods.Items), n))
		}
		var cur revision.ConfigMapSet
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), &cur); err != nil {
			return err
		}
		s := cur.Status
		if s.UpdateRevision != rev || s.CurrentRevision != rev || s.UpdatedReadyPods != int32(n) || s.MatchedPods != int32(n) {
			errs = append(errs, fmt.Errorf("set status %+v", s))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatalf("data %s not served everywhere: %v", rev, err)
	}
}

// TestModelServingReleasesDataAndImagesUnderOneBudget: in Rolling and Gang mode, a
// ModelServing names a ConfigMapSet (type External) selecting its pods. An image change and a data
// change at once, then a data change alone, roll out with never more than
// maxUnavailable pods of a role (serving groups in Gang mode) out of service (a
// pod moving its data counts as out until its reload sidecar reports the new
// revision), checked at every pod
// event by rollouttest.Monitor (the suite's pod watch) and by a watch of the
// test's own; each rollout completes, with every pod on the new image and data,
// updated in place (same UIDs), and the set's status completes too.
func TestModelServingReleasesDataAndImagesUnderOneBudget(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode} {
		t.Run(string(mode), func(t *testing.T) { testDataAndImages(t, mode) })
	}
}

func testDataAndImages(t *testing.T, mode servingv1.RolloutMode) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, 200*time.Millisecond)
	const setName, name = "llm-conf", "llm"
	keys, err := revision.KeysFor(setName)
	if err != nil {
		t.Fatal(err)
	}
	playReloadAgent(t, ns, keys, 400*time.Millisecond)
	dataV := func(v string) map[string]string { return map[string]string{"model.conf": "weights=" + v} }
	set := &revision.ConfigMapSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: revision.ConfigMapSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llm"}},
			Data:           dataV("1"),
			Containers:     []revision.ContainerInjectSpec{{Name: "engine", MountPath: "/etc/llm"}},
			UpdateStrategy: revision.ConfigMapSetUpdateStrategy{Type: revision.ExternalUpdate},
		},
	}
	if err := admin.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	rev1 := revision.RevisionHash(dataV("1"), 0)
	eventually(t, "first reconcile of the set", func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		if set.Status.LastContainersTimestamp == nil || set.Status.UpdateRevision != rev1 {
			return fmt.Errorf("status %+v", set.Status)
		}
		return nil
	})
	time.Sleep(1100 * time.Millisecond) // pods created in the set's first second would be cold

	groups := int32(3)
	spec := servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"), ConfigMapSet: setName,
		RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}}
	pw := watchPods(t, ns, name)
	pw.expect(spec)
	pw.expectData(keys, rev1)
	oos := watchOutOfService(t, ns, name, spec, keys, 1)
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	n := podCount(spec)
	waitRolledOut(t, ms, pw, 60*time.Second)
	waitDataServed(t, ms, set, keys, rev1, n)
	uids := podUIDs(t, ms)

	// An image change and a data change at once.
	oos.arm()
	rev2 := revision.RevisionHash(dataV("2"), 0)
	pw.expectData(keys, rev2)
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); pw.expect(m.Spec) })
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.Data = dataV("2") })
	waitRolledOut(t, ms, pw, 90*time.Second)
	waitDataServed(t, ms, set, keys, rev2, n)

	// Data alone.
	rev3 := revision.RevisionHash(dataV("3"), 0)
	pw.expectData(keys, rev3)
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.Data = dataV("3") })
	waitDataServed(t, ms, set, keys, rev3, n)
	waitRolledOut(t, ms, pw, 90*time.Second)

	creates, deletes := pw.finish()
	oos.check(t)
	if creates != n || deletes != 0 {
		t.Errorf("%d creates and %d deletes, want %d and 0: the image changed in place and data never recreates", creates, deletes, n)
	}
	if got := podUIDs(t, ms); !maps.Equal(got, uids) {
		t.Errorf("pod UIDs changed: before %v, after %v", uids, got)
	}
	for _, p := range listPods(t, ms) {
		if img := p.Spec.Containers[0].Image; img != "engine:v2" {
			t.Errorf("pod %s runs %s", p.Name, img)
		}
	}
}

func listPods(t *testing.T, ms *servingv1.ModelServing) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// TestModelServingRefusesASetItDoesNotOwn: a ModelServing that names a
// ConfigMapSet whose updateStrategy.type is not External (its own controller
// would move the pods' data under a second budget) or that does not exist fails
// its plan (Failed, PlanFailed, naming spec.configMapSet) and creates no pod;
// once the set is External, the ModelServing rolls out (the controller watches
// ConfigMapSets).
func TestModelServingRefusesASetItDoesNotOwn(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, 100*time.Millisecond)
	keys, err := revision.KeysFor("conf")
	if err != nil {
		t.Fatal(err)
	}
	playReloadAgent(t, ns, keys, 100*time.Millisecond)
	groups := int32(1)
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm"}, Spec: servingv1.ModelServingSpec{
		Replicas: &groups, Roles: msRoles("engine:v1"), ConfigMapSet: "conf",
		RolloutStrategy: servingv1.RolloutStrategy{MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}}}
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	failedWith := func(want string) {
		t.Helper()
		eventually(t, "Failed naming "+want, func() error {
			c := meta.FindStatusCondition(getMS(t, ms).Status.Conditions, servingv1.ConditionFailed)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(servingv1.ReasonPlanFailed) || !strings.Contains(c.Message, want) {
				return fmt.Errorf("Failed condition %+v", c)
			}
			return nil
		})
		if pods := listPods(t, ms); len(pods) != 0 {
			t.Errorf("%d pods created for a ModelServing whose plan failed", len(pods))
		}
	}
	failedWith("spec.configMapSet: ConfigMapSet " + ns + "/conf not found")
	set := newSet(t, ns, "conf", map[string]string{"f": "1"}, false)
	updateSet(t, set, func(s *revision.ConfigMapSet) {
		s.Spec.Selector.MatchLabels = map[string]string{"app": "llm"}
		s.Spec.Containers = []revision.ContainerInjectSpec{{Name: "engine", MountPath: "/etc/llm"}}
	})
	failedWith(`has spec.updateStrategy.type ""; it must be "External"`)
	updateSet(t, set, func(s *revision.ConfigMapSet) { s.Spec.UpdateStrategy.Type = revision.ExternalUpdate })
	time.Sleep(1100 * time.Millisecond) // pods created in the second the set's containers were seen would be cold
	pw := watchPods(t, ns, ms.Name)
	pw.expect(ms.Spec)
	waitRolledOut(t, ms, pw, 60*time.Second)
	waitDataServed(t, ms, set, keys, revision.RevisionHash(map[string]string{"f": "1"}, 0), podCount(ms.Spec))
	pw.finish()
}
