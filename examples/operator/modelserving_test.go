package operator_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/kube"
	"github.com/kplan-dev/kplan/revision"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// The ModelServing tests run the ModelServing controller (package modelserving) on the real API
// server. testenv's kubelet plays the node (startMSKubelet: pods are bound, start
// after a delay, restart a changed container, terminate gracefully when deleted;
// setReady holds pods pending, fail makes one exit) and the test watches every
// pod event (podWatch), checking each observed state against the one before with
// rollouttest's Monitor: the availability floor per pool, the surge ceiling, no
// gang serving on two revisions, no pod created on an older revision than
// planned.

// msRoles are the roles of the test ModelServings: one prefill pod and two decode
// pods per serving group.
func msRoles(image string) []servingv1.Role {
	role := func(name string, members int32) servingv1.Role {
		return servingv1.Role{Name: name, Replicas: members, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llm"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: image}}},
		}}
	}
	return []servingv1.Role{role("prefill", 1), role("decode", 2)}
}

func intOrStr(v intstr.IntOrString) *intstr.IntOrString { return &v }

// newModelServing creates a ModelServing of groups serving groups.
func newModelServing(t *testing.T, ns, name string, mode servingv1.RolloutMode, groups int32, image string) *servingv1.ModelServing {
	t.Helper()
	ms := &servingv1.ModelServing{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: servingv1.ModelServingSpec{
			Replicas: &groups,
			Roles:    msRoles(image),
			RolloutStrategy: servingv1.RolloutStrategy{
				Mode:           mode,
				MaxUnavailable: intOrStr(intstr.FromInt(1)),
				MaxSurge:       intOrStr(intstr.FromInt(0)),
			},
		},
	}
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// editBackoff retries a spec update that conflicts with the operator's status
// writes (retry.DefaultRetry's 5 tries lost that race in a long generated run).
var editBackoff = wait.Backoff{Steps: 50, Duration: 10 * time.Millisecond, Factor: 1.2, Jitter: 0.1, Cap: 200 * time.Millisecond}

// editModelServing changes the spec with f, retrying conflicts.
func editModelServing(t *testing.T, ms *servingv1.ModelServing, f func(*servingv1.ModelServing)) {
	t.Helper()
	err := retry.RetryOnConflict(editBackoff, func() error {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(ms), ms); err != nil {
			return err
		}
		f(ms)
		return admin.Update(context.Background(), ms)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setImage sets every role's image.
func setImage(image string) func(*servingv1.ModelServing) {
	return func(ms *servingv1.ModelServing) {
		for i := range ms.Spec.Roles {
			ms.Spec.Roles[i].Template.Spec.Containers[0].Image = image
		}
	}
}

// setImageAndEnv sets every role's image and an environment variable naming it:
// a change of more than images, which recreates pods.
func setImageAndEnv(image string) func(*servingv1.ModelServing) {
	return func(ms *servingv1.ModelServing) {
		for i := range ms.Spec.Roles {
			c := &ms.Spec.Roles[i].Template.Spec.Containers[0]
			c.Image = image
			c.Env = []corev1.EnvVar{{Name: "ENGINE_IMAGE", Value: image}}
		}
	}
}

// gatesTrue reports whether every readiness gate of a pod has its condition
// True.
func gatesTrue(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		if i < 0 || p.Status.Conditions[i].Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podWatch records every event of a ModelServing's pods and checks each observed
// state with rollouttest's Monitor, one per pool (a role in Rolling and Lockstep
// mode, all pods in Gang and Group mode).
type podWatch struct {
	t    *testing.T
	ms   *servingv1.ModelServing
	stop func() // ends the watch

	mu       sync.Mutex
	pods     map[string]*corev1.Pod
	monitors map[string]*rollouttest.Monitor
	strategy map[string]rollout.Strategy
	creates  int
	deletes  int
	// moved counts pods whose revision label changed under the same UID (in
	// place).
	moved int
	// serving: also check, at every event, that each pool keeps n -
	// maxUnavailable replicas serving (servingFloor); for tests where the
	// kubelet takes no pod down.
	serving bool
	// gates: also check, at every event, checkGates (on in the crash tests;
	// the tests that fail pods by hand may leave a gate open on a failed pod).
	gates    bool
	replaced map[string]bool // ReplacementFor values seen
	// world holds the pods the test took down (deleted or failed): the states
	// in which they go down start the monitors afresh, so that the world's
	// own deletions and failures are set aside as rollouttest.CheckTransition
	// sets aside a pod becoming unready. rebased counts the states checked by
	// the monitors replaced.
	world   map[string]bool
	rebased int
	// healing holds the pods the test deleted (by UID) until a pod of that
	// name is available again. Meanwhile a floor violation starts the pool's
	// monitor afresh instead of failing (forgiven counts them): the controller
	// may have planned from a view without the deletion, spending the budget
	// the world spent too, which no controller can prevent.
	healing   map[string]types.UID
	forgiven  int
	events    int
	violation error
	// spec is the spec the strategies are derived from; set with expect.
	spec servingv1.ModelServingSpec
	// dataKeys and dataTarget, set with expectData, make the watch read each
	// pod's served data (servedData) and check the pools under the target data
	// revision too.
	dataKeys   *revision.Keys
	dataTarget string
	// history caches the revision history (revisions); staleHistory: it is
	// listed again on every event until its newest entry is not staleTarget.
	history      []string
	staleHistory bool
	staleTarget  string
}

// watchPods starts watching ms's pods; call before creating ms. Stop it with
// finish, which fails the test on a violation.
func watchPods(t *testing.T, ns, name string) *podWatch {
	t.Helper()
	pw := &podWatch{t: t, ms: &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		pods:     map[string]*corev1.Pod{},
		monitors: map[string]*rollouttest.Monitor{}, strategy: map[string]rollout.Strategy{}, replaced: map[string]bool{}, world: map[string]bool{}, healing: map[string]types.UID{}}
	pw.stop = onPodEvents(t, ns, name, pw.handle, pw.fail)
	return pw
}

// onPodEvents watches the pods of the ModelServing name in ns and calls handle with
// each event, one at a time, from a goroutine; fail is called if the watch closes.
// The returned stop ends the watch and waits for the goroutine; the test's cleanup
// calls it too.
func onPodEvents(t *testing.T, ns, name string, handle func(context.Context, watch.Event), fail func(error)) (stop func()) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingLabels{servingv1.LabelName: name})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					fail(errors.New("the pod watch closed"))
					return
				}
				handle(ctx, ev)
			}
		}
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

func (pw *podWatch) fail(err error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.violation == nil {
		pw.violation = err
	}
}

// expect sets the spec the next observations are checked under (call it before
// each change of the spec, with the new spec).
func (pw *podWatch) expect(spec servingv1.ModelServingSpec) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.spec = *spec.DeepCopy()
	pw.staleHistory = true
	pw.staleTarget = ""
	if n := len(pw.history); n > 0 {
		pw.staleTarget = pw.history[n-1]
	}
}

// revisions returns the ModelServing's revision history, listed again only when
// it may have changed: until a spec change (expect) shows a new target, or when
// a pod runs a revision the history lacks. Listing on every event made the
// watch fall minutes behind a 400-pod rollout.
func (pw *podWatch) revisions(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	if len(pw.history) > 0 && !pw.staleHistory && (pod == nil || slices.Contains(pw.history, pod.Labels[servingv1.LabelRevision])) {
		return pw.history, nil
	}
	h, err := revisionHistory(ctx, pw.ms)
	if err != nil {
		return nil, err
	}
	pw.history = h
	if n := len(h); n > 0 && h[n-1] != pw.staleTarget {
		pw.staleHistory = false
	}
	return h, nil
}

func (pw *podWatch) handle(ctx context.Context, ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		if ev.Type == watch.Error && ctx.Err() == nil {
			pw.fail(fmt.Errorf("pod watch: %v", apierrors.FromObject(ev.Object)))
		}
		return
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.events++
	if f := pod.Annotations[servingv1.AnnotationReplacementFor]; f != "" {
		pw.replaced[f] = true
	}
	switch ev.Type {
	case watch.Added:
		pw.creates++
		pw.pods[pod.Name] = pod
	case watch.Modified:
		if old := pw.pods[pod.Name]; old != nil && old.UID == pod.UID && old.Labels[servingv1.LabelRevision] != pod.Labels[servingv1.LabelRevision] {
			pw.moved++
		}
		pw.pods[pod.Name] = pod
	case watch.Deleted:
		pw.deletes++
		delete(pw.pods, pod.Name)
	}
	if pw.violation != nil || pw.spec.Replicas == nil {
		return
	}
	history, err := pw.revisions(ctx, pod)
	if err != nil || len(history) == 0 {
		return // the ModelServing is gone, or has no revision yet
	}
	observed := slices.Collect(mapsValues(pw.pods))
	if pw.dataKeys != nil {
		observed = servedData(observed, *pw.dataKeys)
	}
	pools, err := observedPools(pw.spec, observed, history, time.Now())
	if err != nil {
		pw.violation = fmt.Errorf("event %d (%s %s): %w", pw.events, ev.Type, pod.Name, err)
		return
	}
	if pw.world[pod.Name] && (ev.Type == watch.Deleted || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed) {
		for name, m := range pw.monitors {
			pw.rebased += m.Observations
			delete(pw.monitors, name)
			delete(pw.strategy, name)
		}
		if ev.Type == watch.Deleted {
			delete(pw.world, pod.Name)
		}
	}
	for name, uid := range pw.healing {
		if p := pw.pods[name]; p != nil && p.UID != uid && p.DeletionTimestamp == nil && isReady(p) && gatesTrue(p) {
			delete(pw.healing, name)
		}
	}
	for _, p := range pools {
		p.strategy.TargetDataRevision = pw.dataTarget
		m := pw.monitors[p.name]
		if m == nil {
			m = &rollouttest.Monitor{}
			pw.monitors[p.name] = m
		}
		if old, ok := pw.strategy[p.name]; !ok || !sameStrategy(old, p.strategy) {
			m.SetStrategy(p.strategy)
			pw.strategy[p.name] = p.strategy
		}
		if err := m.Observe(p.replicas); err != nil {
			if len(pw.healing) > 0 && strings.Contains(err.Error(), "below floor") {
				pw.forgiven++
				pw.rebased += m.Observations
				delete(pw.monitors, p.name)
				delete(pw.strategy, p.name)
				continue
			}
			pw.violation = fmt.Errorf("event %d (%s %s), pool %q: %w\npods:\n%s", pw.events, ev.Type, pod.Name, p.name, err, describePods(pw.pods))
			return
		}
	}
	if pw.gates {
		if err := checkGates(pw.spec.RolloutStrategy.Mode, slices.Collect(mapsValues(pw.pods))); err != nil {
			pw.violation = fmt.Errorf("event %d (%s %s): %w\npods:\n%s", pw.events, ev.Type, pod.Name, err, describePods(pw.pods))
			return
		}
	}
	if pw.serving {
		if err := servingFloor(pw.spec, slices.Collect(mapsValues(pw.pods)), history); err != nil {
			pw.violation = fmt.Errorf("event %d (%s %s): %w\npods:\n%s", pw.events, ev.Type, pod.Name, err, describePods(pw.pods))
		}
	}
}

// checkGates checks the operator's readiness gate against what pods run: a pod
// whose gate is True runs, in every ready container, the image its spec names
// (an in-place update closes the gate before it changes an image, and opens it
// once the kubelet runs the new one); in Gang mode, a serving group whose
// members (those not terminating) all have their gates True runs one revision.
func checkGates(mode servingv1.RolloutMode, pods []*corev1.Pod) error {
	type group struct {
		open, members int
		revs          map[string]bool
	}
	groups := map[string]*group{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		g := groups[p.Labels[servingv1.LabelGroupName]]
		if g == nil {
			g = &group{revs: map[string]bool{}}
			groups[p.Labels[servingv1.LabelGroupName]] = g
		}
		g.members++
		g.revs[p.Labels[servingv1.LabelRevision]] = true
		if c := kube.PodCondition(p, servingv1.PodConditionImagesReady); c == nil || c.Status != corev1.ConditionTrue {
			continue
		}
		g.open++
		for _, c := range p.Spec.Containers {
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == c.Name && s.Ready && s.Image != c.Image {
					return fmt.Errorf("pod %s: gate open while container %s runs %s, its spec %s", p.Name, c.Name, s.Image, c.Image)
				}
			}
		}
	}
	if mode != servingv1.GangMode {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		if g := groups[name]; g.open == g.members && len(g.revs) > 1 {
			return fmt.Errorf("serving group %s: every gate open while its members run revisions %v", name, slices.Sorted(maps.Keys(g.revs)))
		}
	}
	return nil
}

// servingFloor checks that every pool keeps n - maxUnavailable replicas serving
// (per column in Group mode): pods ready by their readiness gates whose
// containers all report the spec's image and are ready. Unlike Monitor's floor,
// which forgives pods the world took down, it holds the controller to the
// budget when the world takes none down, so an in-place update that the
// controller did not count would show.
func servingFloor(spec servingv1.ModelServingSpec, pods []*corev1.Pod, history []string) error {
	serving := withReady(pods, func(p *corev1.Pod) bool {
		for _, c := range p.Spec.Containers {
			i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name })
			if i < 0 || !p.Status.ContainerStatuses[i].Ready || p.Status.ContainerStatuses[i].Image != c.Image {
				return false
			}
		}
		return true
	})
	pools, err := observedPools(spec, serving, history, time.Now())
	if err != nil {
		return err
	}
	for _, p := range pools {
		b, err := rollout.ResolveBudget(p.strategy.MaxUnavailable, p.strategy.MaxSurge, p.strategy.Replicas)
		if err != nil {
			return err
		}
		per := map[string]int{}
		for _, c := range p.strategy.Columns {
			per[c] = 0
		}
		if p.strategy.Mode != rollout.Group {
			per = map[string]int{"": 0}
		}
		for _, r := range rollouttest.Counted(p.replicas) {
			if rollouttest.Available(r) {
				if p.strategy.Mode == rollout.Group {
					per[r.Column]++
				} else {
					per[""]++
				}
			}
		}
		for _, col := range slices.Sorted(maps.Keys(per)) {
			if floor := p.strategy.Replicas - b.MaxUnavailable; per[col] < floor {
				if col != "" {
					col = " column " + col
				}
				return fmt.Errorf("pool %q%s: %d replicas serving, below %d (n=%d, maxUnavailable=%d)", p.name, col, per[col], floor, p.strategy.Replicas, b.MaxUnavailable)
			}
		}
	}
	return nil
}

// withReady returns pods with those that ok refuses marked not ready (copies).
func withReady(pods []*corev1.Pod, ok func(*corev1.Pod) bool) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p
		if !isReady(p) || ok(p) {
			continue
		}
		cp := *p
		cp.Status.Conditions = slices.Clone(p.Status.Conditions)
		for j := range cp.Status.Conditions {
			if cp.Status.Conditions[j].Type == corev1.PodReady {
				cp.Status.Conditions[j].Status = corev1.ConditionFalse
			}
		}
		out[i] = &cp
	}
	return out
}

func mapsValues(m map[string]*corev1.Pod) func(func(*corev1.Pod) bool) {
	return func(yield func(*corev1.Pod) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func sameStrategy(a, b rollout.Strategy) bool {
	return a.TargetRevision == b.TargetRevision && a.Replicas == b.Replicas && slices.Equal(a.History, b.History) &&
		fmt.Sprint(a.LatestRatio) == fmt.Sprint(b.LatestRatio)
}

func describePods(pods map[string]*corev1.Pod) string {
	var lines []string
	for _, p := range pods {
		lines = append(lines, fmt.Sprintf("  %s %s phase=%s ready=%v gates=%v deleting=%v", p.Name, p.Labels[servingv1.LabelRevision],
			p.Status.Phase, isReady(p), gatesTrue(p), p.DeletionTimestamp != nil))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// revisionHistory lists the ControllerRevisions the ModelServing controls, oldest
// first (by revision number): the last is the target.
func revisionHistory(ctx context.Context, ms *servingv1.ModelServing) ([]string, error) {
	var list appsv1.ControllerRevisionList
	if err := admin.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1.ControllerRevision) int { return cmp.Compare(a.Revision, b.Revision) })
	var out []string
	for _, r := range list.Items {
		if c := metav1.GetControllerOf(&r); c != nil && c.Kind == "ModelServing" && c.Name == ms.Name {
			out = append(out, r.Name)
		}
	}
	return out, nil
}

type observedPool struct {
	name     string
	replicas []rollout.Replica
	strategy rollout.Strategy
}

// observedPools is the test's own reading of a ModelServing's pods as rollout
// pools, from the documented labels and mode mapping (not the operator's code).
func observedPools(spec servingv1.ModelServingSpec, pods []*corev1.Pod, history []string, now time.Time) ([]observedPool, error) {
	groups := int(*spec.Replicas)
	rs := spec.RolloutStrategy
	base := rollout.Strategy{TargetRevision: history[len(history)-1], History: history,
		MaxUnavailable: rs.MaxUnavailable, MaxSurge: rs.MaxSurge}
	opts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: servingv1.LabelRevision, DataRevision: testDataLabel}, MinReadySeconds: rs.MinReadySeconds, Now: now,
		Annotations: rollout.PodAnnotations{ReplacementFor: servingv1.AnnotationReplacementFor, SwappedAt: servingv1.AnnotationSwappedAt}}
	// latest is the LatestRatio of a pool of unit pods per group: the partition
	// keeps that many groups (or that share) on the previous revision.
	latest := func(unit int) *intstr.IntOrString {
		p := rs.Partition
		switch {
		case p == nil:
			return nil
		case p.Type == intstr.Int:
			return intOrStr(intstr.FromInt(max(groups-p.IntValue(), 0) * unit))
		default:
			pct, err := strconv.ParseFloat(strings.TrimSuffix(p.StrVal, "%"), 64)
			if err != nil {
				return nil
			}
			return intOrStr(intstr.FromString(strconv.FormatFloat(max(100-pct, 0), 'f', -1, 64) + "%"))
		}
	}
	switch rs.Mode {
	case servingv1.GangMode, servingv1.GroupMode:
		st := base
		st.Replicas = groups
		for _, r := range spec.Roles {
			for m := range r.Replicas {
				st.Columns = append(st.Columns, fmt.Sprintf("%s-%d", r.Name, m))
			}
		}
		opts.Labels.Column, opts.Labels.Index = servingv1.LabelColumn, servingv1.LabelGroupIndex
		if rs.Mode == servingv1.GangMode {
			st.Mode = rollout.Gang
			opts.Labels.Gang, opts.Columns = servingv1.LabelGroupName, st.Columns
		} else {
			st.Mode = rollout.Group
		}
		st.LatestRatio = latest(1)
		reps, err := readPods(pods, opts)
		return []observedPool{{name: "all", replicas: reps, strategy: st}}, err
	default:
		var out []observedPool
		for _, r := range spec.Roles {
			var mine []*corev1.Pod
			for _, p := range pods {
				if p.Labels[servingv1.LabelRole] == r.Name {
					mine = append(mine, p)
				}
			}
			reps, err := readPods(mine, opts)
			if err != nil {
				return nil, err
			}
			st := base
			st.Mode = rollout.Rolling
			st.Replicas = groups * int(r.Replicas)
			st.LatestRatio = latest(int(r.Replicas))
			out = append(out, observedPool{name: r.Name, replicas: reps, strategy: st})
		}
		return out, nil
	}
}

// readPods reads pods with rollout.FromPods (recovery's fields come from the
// documented annotations) as Kubernetes defines readiness: ready only when
// their readiness gates' conditions are True too (the Ready condition catches
// up with a gate only when the kubelet next writes it).
func readPods(pods []*corev1.Pod, opts rollout.PodOptions) ([]rollout.Replica, error) {
	return rollout.FromPods(withReady(pods, gatesTrue), opts)
}

// finish stops the watch, fails the test on a violation, and returns the creates
// and deletes it saw.
func (pw *podWatch) finish() (creates, deletes int) {
	pw.t.Helper()
	return pw.finishNamed("")
}

// finishNamed is finish, naming the run in a failure.
func (pw *podWatch) finishNamed(run string) (creates, deletes int) {
	pw.t.Helper()
	pw.stop()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if run != "" {
		run += ": "
	}
	if pw.violation != nil {
		pw.t.Fatalf("%sinvariant broken: %v", run, pw.violation)
	}
	checked := pw.rebased
	for _, m := range pw.monitors {
		checked += m.Observations
	}
	if checked == 0 {
		pw.t.Fatal("the watch checked no state")
	}
	pw.t.Logf("%d pod events, %d pool states checked, %d creates, %d deletes", pw.events, checked, pw.creates, pw.deletes)
	if pw.forgiven > 0 {
		pw.t.Logf("%d floor violations forgiven while a pod the test deleted was not replaced yet", pw.forgiven)
	}
	return pw.creates, pw.deletes
}

// counts returns the creates, deletes and in-place revision changes seen so far.
func (pw *podWatch) counts() (creates, deletes, moved int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.creates, pw.deletes, pw.moved
}

// worldFault tells the watch that the test takes pod down next: deletes it
// (deleted) or fails it.
func (pw *podWatch) worldFault(pod *corev1.Pod, deleted bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.world[pod.Name] = true
	if deleted {
		pw.healing[pod.Name] = pod.UID
	}
}

// checkGates turns the gate check (checkGates) on or off.
func (pw *podWatch) checkGates(on bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.gates = on
}

// checkServing turns the serving floor check (servingFloor) on or off.
func (pw *podWatch) checkServing(on bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.serving = on
}

// converged checks the end state with rollouttest.Converged (whole rows in Group
// mode).
func (pw *podWatch) converged() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	history, err := revisionHistory(context.Background(), pw.ms)
	if err != nil || len(history) == 0 {
		return fmt.Errorf("no revisions: %v", err)
	}
	observed := slices.Collect(mapsValues(pw.pods))
	if pw.dataKeys != nil {
		observed = servedData(observed, *pw.dataKeys)
	}
	pools, err := observedPools(pw.spec, observed, history, time.Now())
	if err != nil {
		return err
	}
	for _, p := range pools {
		if err := rollouttest.Converged(p.replicas, p.strategy); err != nil {
			return fmt.Errorf("pool %s: %w", p.name, err)
		}
	}
	return nil
}

// waitRolledOut waits until the status reports the rollout of the current
// generation complete, and the watch sees the converged pods.
func waitRolledOut(t *testing.T, ms *servingv1.ModelServing, pw *podWatch, timeout time.Duration) {
	t.Helper()
	err := waitFor(timeout, func() error {
		var cur servingv1.ModelServing
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(ms), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionProgressing)
		if cur.Status.ObservedGeneration != cur.Generation || c == nil || c.Reason != servingv1.ReasonRolloutComplete {
			return fmt.Errorf("generation %d, observed %d, Progressing %+v", cur.Generation, cur.Status.ObservedGeneration, c)
		}
		return pw.converged()
	})
	if err != nil {
		pw.mu.Lock()
		pods := describePods(pw.pods)
		pw.mu.Unlock()
		t.Fatalf("rollout of %s/%s did not complete: %v\npods:\n%s", ms.Namespace, ms.Name, err, pods)
	}
}

func podCount(spec servingv1.ModelServingSpec) int {
	n := 0
	for _, r := range spec.Roles {
		n += int(r.Replicas)
	}
	return n * int(*spec.Replicas)
}

// TestModelServingRollsOutInEveryMode: a fresh deploy, then a new image and
// environment (more than images: pods are recreated) rolled out to every pod,
// in each mode, with the watch checking every pod event; each pod
// is created once per revision and deleted once (the minimum), and the end
// state is converged.
func TestModelServingRollsOutInEveryMode(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode, servingv1.LockstepMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			startMSKubelet(t, ns, 100*time.Millisecond)
			name := strings.ToLower(string(mode))
			pw := watchPods(t, ns, name)
			ms := &servingv1.ModelServing{}
			pw.expect(servingv1.ModelServingSpec{Replicas: ptr(int32(3)), Roles: msRoles("engine:v1"),
				RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}})
			*ms = *newModelServing(t, ns, name, mode, 3, "engine:v1")
			waitRolledOut(t, ms, pw, 60*time.Second)
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImageAndEnv("engine:v2")(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			creates, deletes := pw.finish()
			n := podCount(ms.Spec)
			if creates != 2*n || deletes != n {
				t.Errorf("%d creates and %d deletes for %d pods rolled out once, want %d and %d", creates, deletes, n, 2*n, n)
			}
			var pods corev1.PodList
			if err := admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if img := p.Spec.Containers[0].Image; img != "engine:v2" {
					t.Errorf("pod %s runs %s after the rollout", p.Name, img)
				}
				if p.Labels["app"] != "llm" {
					t.Errorf("pod %s lacks its template's label app=llm: %v", p.Name, p.Labels)
				}
			}
		})
	}
}

// msPods lists the ModelServing's pods that are not being deleted, by revision.
func msPods(t *testing.T, ms *servingv1.ModelServing) map[string][]string {
	t.Helper()
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Labels[servingv1.LabelRevision]] = append(out[p.Labels[servingv1.LabelRevision]], p.Name)
		}
	}
	return out
}

func getMS(t *testing.T, ms *servingv1.ModelServing) *servingv1.ModelServing {
	t.Helper()
	var cur servingv1.ModelServing
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(ms), &cur); err != nil {
		t.Fatal(err)
	}
	return &cur
}

// deploy creates a ModelServing watched by a new podWatch and waits for it.
func deploy(t *testing.T, ns, name string, mode servingv1.RolloutMode, groups int32, delay time.Duration) (*servingv1.ModelServing, *podWatch, *msKubelet) {
	t.Helper()
	k := startMSKubelet(t, ns, delay)
	pw := watchPods(t, ns, name)
	pw.expect(servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"),
		RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}})
	ms := newModelServing(t, ns, name, mode, groups, "engine:v1")
	waitRolledOut(t, ms, pw, 60*time.Second)
	return ms, pw, k
}

// TestModelServingStopsAtTheBudgetWhenNewPodsNeverBecomeReady: the new image's
// pods never become ready, so the rollout stops with one pod per role down (the
// budget), RollingUpdate gives rollout's reason (MaxUnavailableReached) and
// names the waiting pods, the
// service stays Available; reverting the template rolls back to the first
// revision (renumbered, not copied).
func TestModelServingStopsAtTheBudgetWhenNewPodsNeverBecomeReady(t *testing.T) {
	ns := newNamespace(t)
	ms, pw, k := deploy(t, ns, "stuck", servingv1.RollingMode, 3, 50*time.Millisecond)
	first := getMS(t, ms).Status.UpdateRevision
	k.setReady(func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image != "engine:bad" })
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:bad")(m); pw.expect(m.Spec) })
	eventually(t, "the rollout stops at the budget", func() error {
		cur := getMS(t, ms)
		c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionRollingUpdate)
		if cur.Status.ObservedGeneration != cur.Generation || c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(rollout.ReasonBudget) {
			return fmt.Errorf("RollingUpdate %+v", c)
		}
		if !strings.Contains(c.Message, "maxUnavailable budget exhausted") || !strings.Contains(c.Message, "not available yet") {
			return fmt.Errorf("RollingUpdate message %q does not say why", c.Message)
		}
		return nil
	})
	time.Sleep(time.Second) // nothing more may move
	cur := getMS(t, ms)
	bad := msPods(t, ms)[cur.Status.UpdateRevision]
	slices.Sort(bad)
	if len(bad) != 2 || !strings.Contains(bad[0], "-decode-") || !strings.Contains(bad[1], "-prefill-") {
		t.Fatalf("pods on the bad revision: %v, want one decode and one prefill pod (the budget of each role)", bad)
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Available: %+v, want True (each role keeps its floor)", c)
	}
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v1")(m); pw.expect(m.Spec) })
	waitRolledOut(t, ms, pw, 60*time.Second)
	pw.finish()
	cur = getMS(t, ms)
	if cur.Status.UpdateRevision != first {
		t.Errorf("rolled back to revision %s, want the first one %s", cur.Status.UpdateRevision, first)
	}
	if revs := msPods(t, ms); len(revs) != 1 || len(revs[first]) != podCount(cur.Spec) {
		t.Errorf("pods by revision after the rollback: %v", revs)
	}
	history, err := revisionHistory(context.Background(), ms)
	if err != nil || len(history) != 2 || history[1] != first {
		t.Errorf("revisions oldest first: %v (%v), want two with %s newest", history, err, first)
	}
}

// TestModelServingScales: scale up and down in Rolling and Gang mode; the new
// groups take the lowest free indices, and scaling down keeps the floor.
func TestModelServingScales(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			ms, pw, _ := deploy(t, ns, "scale", mode, 2, 50*time.Millisecond)
			for _, n := range []int32{5, 1, 3} {
				editModelServing(t, ms, func(m *servingv1.ModelServing) { m.Spec.Replicas = ptr(n); pw.expect(m.Spec) })
				waitRolledOut(t, ms, pw, 60*time.Second)
				cur := getMS(t, ms)
				if cur.Status.Replicas != n || cur.Status.AvailableReplicas != n || len(cur.Status.Groups) != int(n) {
					t.Fatalf("scaled to %d: status replicas %d, available %d, groups %v", n, cur.Status.Replicas, cur.Status.AvailableReplicas, cur.Status.Groups)
				}
			}
			pw.finish()
		})
	}
}

// TestModelServingPartitionPausesAndResumes: a partition of every group holds a
// new template back, lowering it moves that many groups' pods, and 0 finishes.
func TestModelServingPartitionPausesAndResumes(t *testing.T) {
	ns := newNamespace(t)
	ms, pw, _ := deploy(t, ns, "part", servingv1.GangMode, 3, 50*time.Millisecond)
	editModelServing(t, ms, func(m *servingv1.ModelServing) {
		m.Spec.RolloutStrategy.Partition = intOrStr(intstr.FromInt(3))
		setImage("engine:v2")(m)
		pw.expect(m.Spec)
	})
	waitRolledOut(t, ms, pw, 30*time.Second)
	cur := getMS(t, ms)
	if c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionRollingUpdate); c == nil || c.Reason != servingv1.ReasonPartitioned {
		t.Errorf("RollingUpdate %+v, want reason Partitioned", c)
	}
	if n := len(msPods(t, ms)[cur.Status.UpdateRevision]); n != 0 {
		t.Fatalf("%d pods on the new revision under a partition of every group", n)
	}
	for _, p := range []int{1, 0} {
		editModelServing(t, ms, func(m *servingv1.ModelServing) {
			m.Spec.RolloutStrategy.Partition = intOrStr(intstr.FromInt(p))
			pw.expect(m.Spec)
		})
		waitRolledOut(t, ms, pw, 30*time.Second)
		cur := getMS(t, ms)
		if got, want := int(cur.Status.UpdatedReplicas), 3-p; got != want {
			t.Fatalf("partition %d: %d groups updated, want %d", p, got, want)
		}
	}
	pw.finish()
}

// TestModelServingOperatorRestartedMidRollout: the operator is stopped while a
// rollout is under way and a new one started; the rollout converges with every
// pod created and deleted once (no duplicate) and no invariant broken.
func TestModelServingOperatorRestartedMidRollout(t *testing.T) {
	ns := newNamespace(t)
	ms, pw, _ := deploy(t, ns, "restart", servingv1.RollingMode, 4, 400*time.Millisecond)
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImageAndEnv("engine:v2")(m); pw.expect(m.Spec) })
	eventually(t, "the rollout under way", func() error {
		cur := getMS(t, ms)
		if cur.Status.UpdateRevision == "" || cur.Status.UpdateRevision == cur.Status.CurrentRevision && cur.Generation == cur.Status.ObservedGeneration && len(msPods(t, ms)) == 1 {
			return errors.New("not started")
		}
		if n := len(msPods(t, ms)[cur.Status.UpdateRevision]); n == 0 || n >= podCount(cur.Spec)-2 {
			return fmt.Errorf("%d pods on the new revision", n)
		}
		return nil
	})
	restartManager(t, nil)
	waitRolledOut(t, ms, pw, 90*time.Second)
	creates, deletes := pw.finish()
	n := podCount(ms.Spec)
	if creates != 2*n || deletes != n {
		t.Errorf("%d creates and %d deletes for %d pods rolled out once, want %d and %d", creates, deletes, n, 2*n, n)
	}
}

// TestModelServingValidation: the CRD's schema and CEL rules refuse what the
// controller could not plan.
func TestModelServingValidation(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	valid := func(name string) *servingv1.ModelServing {
		return &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: servingv1.ModelServingSpec{Replicas: ptr(int32(1)), Roles: msRoles("engine:v1")}}
	}
	for _, tc := range []struct {
		name string
		edit func(*servingv1.ModelServing)
		want string
	}{
		{"maxUnavailable and maxSurge both 0", func(m *servingv1.ModelServing) {
			m.Spec.RolloutStrategy.MaxUnavailable = intOrStr(intstr.FromInt(0))
			m.Spec.RolloutStrategy.MaxSurge = intOrStr(intstr.FromString("0%"))
		}, "cannot both be 0"},
		{"an unknown mode", func(m *servingv1.ModelServing) { m.Spec.RolloutStrategy.Mode = "rolling" }, "Unsupported value"},
		{"a role name that is not a DNS label", func(m *servingv1.ModelServing) { m.Spec.Roles[0].Name = "Prefill" }, "should match"},
		{"no roles", func(m *servingv1.ModelServing) { m.Spec.Roles = nil }, "roles"},
		{"negative replicas", func(m *servingv1.ModelServing) { m.Spec.Replicas = ptr(int32(-1)) }, "replicas"},
		{"a name too long for the revision label", func(m *servingv1.ModelServing) { m.Name = strings.Repeat("n", 53) }, "at most 52 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := valid("bad")
			tc.edit(m)
			err := admin.Create(ctx, m)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create: %v, want Invalid naming %q", err, tc.want)
			}
		})
	}
	ok := valid("good")
	ok.Spec.RolloutStrategy.MaxUnavailable = intOrStr(intstr.FromInt(0))
	ok.Spec.RolloutStrategy.MaxSurge = intOrStr(intstr.FromString("10%"))
	if err := admin.Create(ctx, ok); err != nil {
		t.Fatalf("a valid ModelServing: %v", err)
	}
	if ok.Spec.RolloutStrategy.Mode != servingv1.RollingMode || *ok.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("defaults: mode %q, history limit %v", ok.Spec.RolloutStrategy.Mode, ok.Spec.RevisionHistoryLimit)
	}
	raw, err := os.ReadFile(filepath.Join("..", "config", "samples", "modelserving.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sample servingv1.ModelServing
	if err := yaml.UnmarshalStrict(raw, &sample); err != nil {
		t.Fatalf("config/samples/modelserving.yaml: %v", err)
	}
	sample.Namespace = ns
	if err := admin.Create(ctx, &sample); err != nil {
		t.Fatalf("config/samples/modelserving.yaml: %v", err)
	}
	// The controller writes the object meanwhile: retryEdit reads it afresh on a
	// conflict.
	if err := retryEdit(ok, func(m *servingv1.ModelServing) { m.Spec.Roles[1].Replicas = 3 }); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing a role's replicas: %v, want Invalid (immutable)", err)
	}
}

// TestModelServingRecoversFailedPods: with a recovery policy, a failed pod is
// replaced create-then-delete (the replacement first, the failed pod deleted
// once the replacement serves), before a rollout in Rolling mode and during one
// in Gang mode, with every pod event checked.
func TestModelServingRecoversFailedPods(t *testing.T) {
	for _, tc := range []struct {
		mode    servingv1.RolloutMode
		rollout bool
	}{
		{servingv1.RollingMode, false},
		{servingv1.GangMode, true},
		{servingv1.GroupMode, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			ns := newNamespace(t)
			name := "rec"
			k := startMSKubelet(t, ns, 300*time.Millisecond)
			pw := watchPods(t, ns, name)
			groups := int32(3)
			ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"),
					RolloutStrategy: servingv1.RolloutStrategy{Mode: tc.mode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))},
					RecoveryPolicy:  &servingv1.RecoveryPolicy{Strategy: servingv1.CreateThenDelete}}}
			pw.expect(ms.Spec)
			if err := admin.Create(context.Background(), ms); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, ms, pw, 60*time.Second)
			victim := name + "-decode-2-1" // no rollout: any pod
			if tc.rollout {
				// A pod already on the new revision: the rollout leaves it alone,
				// so only recovery can replace it.
				editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); pw.expect(m.Spec) })
				eventually(t, "a ready pod on the new revision", func() error {
					cur := getMS(t, ms)
					var pods corev1.PodList
					if err := admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
						return err
					}
					for _, p := range pods.Items {
						if cur.Status.ObservedGeneration == cur.Generation && p.Labels[servingv1.LabelRevision] == cur.Status.UpdateRevision && isReady(&p) {
							victim = p.Name
							return nil
						}
					}
					return errors.New("none yet")
				})
			}
			replaced := victim
			if tc.mode == servingv1.GangMode {
				var p corev1.Pod
				if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim}, &p); err != nil {
					t.Fatal(err)
				}
				replaced = p.Labels[servingv1.LabelGroupName]
			}
			if tc.rollout {
				// Hold every pod that is not ready yet, and fail the victim only
				// once the controller waits for them: a failure racing with the
				// controller's own step can break the floor as an observer sees
				// it, and no controller could prevent that.
				k.setReady(func(*corev1.Pod) bool { return false })
				eventually(t, "the rollout waiting for held pods", func() error {
					cur := getMS(t, ms)
					c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionProgressing)
					if c == nil || c.Status != metav1.ConditionTrue || c.Reason == servingv1.ReasonUpdating {
						return fmt.Errorf("Progressing %+v", c)
					}
					// The status must have been written after the controller saw a
					// held pod: its message names one as not available yet.
					var pods corev1.PodList
					if err := admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
						return err
					}
					for _, p := range pods.Items {
						held := p.Labels[servingv1.LabelRevision] == cur.Status.UpdateRevision && !isReady(&p) && p.Status.Phase != corev1.PodFailed
						replica := p.Name
						if tc.mode == servingv1.GangMode {
							replica = p.Labels[servingv1.LabelGroupName]
						}
						if held && strings.Contains(c.Message, replica+",") || held && strings.HasSuffix(c.Message, replica) {
							return nil
						}
					}
					return fmt.Errorf("Progressing message %q names no held pod", c.Message)
				})
			}
			k.fail(t, victim)
			if tc.rollout {
				eventually(t, "a replacement created", func() error {
					pw.mu.Lock()
					defer pw.mu.Unlock()
					if !pw.replaced[replaced] {
						return errors.New("none yet")
					}
					return nil
				})
				k.setReady(func(*corev1.Pod) bool { return true })
			}
			eventually(t, "the failed pod replaced and deleted", func() error {
				var p corev1.Pod
				err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim}, &p)
				if err == nil {
					return fmt.Errorf("pod %s still there (phase %s, annotations %v)", victim, p.Status.Phase, p.Annotations)
				}
				if !apierrors.IsNotFound(err) {
					return err
				}
				return nil
			})
			waitRolledOut(t, ms, pw, 60*time.Second)
			pw.mu.Lock()
			wasReplaced := pw.replaced[replaced]
			pw.mu.Unlock()
			if !wasReplaced {
				t.Errorf("no replacement for %s was created", replaced)
			}
			pw.finish()
			// The replaced pods are released (deleted) and terminate a while.
			eventually(t, "the replaced pods gone", func() error {
				var pods corev1.PodList
				if err := admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
					return err
				}
				for _, p := range pods.Items {
					if len(p.Annotations) > 0 && (p.Annotations[servingv1.AnnotationReplacementFor] != "" || p.Annotations[servingv1.AnnotationSwappedAt] != "") {
						return fmt.Errorf("pod %s still carries recovery annotations %v", p.Name, p.Annotations)
					}
					if p.Status.Phase == corev1.PodFailed {
						return fmt.Errorf("pod %s failed at the end", p.Name)
					}
				}
				if len(pods.Items) != podCount(ms.Spec) {
					return fmt.Errorf("%d pods at the end, want %d", len(pods.Items), podCount(ms.Spec))
				}
				return nil
			})
			eventually(t, "the Failed condition cleared", func() error {
				cur := getMS(t, ms)
				if c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionFailed); c == nil || c.Status != metav1.ConditionFalse {
					return fmt.Errorf("Failed condition %+v", c)
				}
				return nil
			})
		})
	}
}

// TestModelServingRevisionHistory follows Kubernetes' controller history: a
// revision name taken by other data bumps status.collisionCount and the next
// name is used; revisions no pod runs are deleted beyond revisionHistoryLimit,
// oldest first.
func TestModelServingRevisionHistory(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	groups := int32(1)
	spec := servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"), RevisionHistoryLimit: ptr(int32(1)),
		RolloutStrategy: servingv1.RolloutStrategy{MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(0))}}
	// The first revision's name, as history.HashControllerRevision computes it
	// (FNV-32 of the data, then the collision count, 0), taken by an unrelated
	// object.
	type revRole struct {
		Name     string                 `json:"name"`
		Template corev1.PodTemplateSpec `json:"template"`
	}
	var roles []revRole
	for _, r := range spec.Roles {
		roles = append(roles, revRole{r.Name, r.Template})
	}
	data, err := json.Marshal(map[string]any{"roles": roles})
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32()
	h.Write(data)
	h.Write([]byte("0"))
	taken := "hist-" + rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
	squatter := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: taken,
		Labels: map[string]string{servingv1.LabelName: "hist"}}, Data: runtime.RawExtension{Raw: []byte(`{"other":true}`)}, Revision: 1}
	if err := admin.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	startMSKubelet(t, ns, 0)
	pw := watchPods(t, ns, "hist")
	pw.expect(spec)
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hist"}, Spec: spec}
	if err := admin.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 30*time.Second)
	cur := getMS(t, ms)
	if cur.Status.CollisionCount == nil || *cur.Status.CollisionCount != 1 || cur.Status.UpdateRevision == taken {
		t.Fatalf("collisionCount %v, update revision %s; want 1 and a name other than %s", cur.Status.CollisionCount, cur.Status.UpdateRevision, taken)
	}
	var revs []string
	for _, image := range []string{"engine:v2", "engine:v3", "engine:v4"} {
		editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage(image)(m); pw.expect(m.Spec) })
		waitRolledOut(t, ms, pw, 30*time.Second)
		revs = append(revs, getMS(t, ms).Status.UpdateRevision)
	}
	pw.finish()
	var list appsv1.ControllerRevisionList
	if err := admin.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var owned []string
	for _, r := range list.Items {
		if metav1.IsControlledBy(&r, cur) {
			owned = append(owned, r.Name)
		}
	}
	slices.Sort(owned)
	want := []string{revs[1], revs[2]} // the update revision and one more (the limit)
	slices.Sort(want)
	if !slices.Equal(owned, want) {
		t.Errorf("revisions kept %v, want %v (the newest two)", owned, want)
	}
}

// TestModelServingWaitsForMinReadySeconds: pods count as available only after
// minReadySeconds, which no pod event announces; the controller requeues itself
// for that moment, so the rollout finishes, each batch at least that long.
func TestModelServingWaitsForMinReadySeconds(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, 0)
	pw := watchPods(t, ns, "slow")
	groups := int32(2)
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"},
		Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: msRoles("engine:v1"),
			RolloutStrategy: servingv1.RolloutStrategy{Mode: servingv1.GangMode, MaxUnavailable: intOrStr(intstr.FromInt(1)),
				MaxSurge: intOrStr(intstr.FromInt(0)), MinReadySeconds: 1}}}
	pw.expect(ms.Spec)
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 30*time.Second)
	start := time.Now()
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); pw.expect(m.Spec) })
	waitRolledOut(t, ms, pw, 30*time.Second)
	// Two batches of one group, each available a second after it is ready (the
	// API keeps whole seconds, so a batch may look available up to a second
	// early).
	if took := time.Since(start); took < time.Second {
		t.Errorf("rollout of two groups with minReadySeconds 1 took %v", took)
	}
	pw.finish()
}
