package revision

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"
)

// machine is the state-machine model of one ConfigMapSet: the set with its status,
// the hub ConfigMap, the pods with their annotations and container statuses, and a
// clock. Pods are created through Inject, reconciles go through Plan, and the node
// side runs Restarts and MarkCurrent on container statuses the model keeps.
type machine struct {
	set   *ConfigMapSet
	hub   *corev1.ConfigMap
	pods  map[string]*corev1.Pod
	now   time.Time
	datas []map[string]string // every data the spec held, by index
	// nameOf is the revision name data i got when last created.
	nameOf map[int]string
	data   int // index of spec.data in datas
}

const smKubeVersion = "v1.30.0"

func newMachine(t *rapid.T) *machine {
	set := newSet(nil)
	set.Spec.UpdateStrategy.Partition = drawPartition(t)
	drawStrategy(t, set)
	m := &machine{set: set, pods: map[string]*corev1.Pod{}, now: t0.Add(time.Minute), nameOf: map[int]string{}}
	m.setData(data("v0"), -1)
	return m
}

// drawStrategy draws restartInjectedContainers with maxUnavailable, injectUpdateOrder
// and revisionHistoryLimit.
func drawStrategy(t *rapid.T, set *ConfigMapSet) {
	us := &set.Spec.UpdateStrategy
	us.RestartInjectedContainers, us.MaxUnavailable = false, nil
	if rapid.Bool().Draw(t, "restartInjectedContainers") {
		mu := rapid.OneOf(
			rapid.Custom(func(t *rapid.T) intstr.IntOrString { return intstr.FromInt32(rapid.Int32Range(1, 3).Draw(t, "int")) }),
			rapid.Custom(func(t *rapid.T) intstr.IntOrString {
				return intstr.FromString(rapid.SampledFrom([]string{"1%", "25%", "50%", "100%"}).Draw(t, "pct"))
			}),
		).Draw(t, "maxUnavailable")
		us.RestartInjectedContainers = true
		us.MaxUnavailable = &mu
	}
	set.Spec.InjectUpdateOrder = rapid.Bool().Draw(t, "injectUpdateOrder")
	limit := rapid.Int32Range(0, 3).Draw(t, "revisionHistoryLimit")
	set.Spec.RevisionHistoryLimit = &limit
}

func drawPartition(t *rapid.T) *intstr.IntOrString {
	p := rapid.OneOf(
		rapid.Custom(func(t *rapid.T) intstr.IntOrString { return intstr.FromInt32(rapid.Int32Range(0, 8).Draw(t, "int")) }),
		rapid.Custom(func(t *rapid.T) intstr.IntOrString {
			return intstr.FromString(rapid.SampledFrom([]string{"0%", "1%", "30%", "50%", "99%", "100%"}).Draw(t, "pct"))
		}),
	).Draw(t, "partition")
	return &p
}

// setData puts d into spec.data; old >= 0 re-applies datas[old].
func (m *machine) setData(d map[string]string, old int) {
	if old >= 0 {
		m.data = old
	} else {
		m.datas = append(m.datas, d)
		m.data = len(m.datas) - 1
	}
	m.set.Spec.Data = maps.Clone(m.datas[m.data])
	m.set.Generation++
}

// podList returns the pods in name order.
func (m *machine) podList() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m.pods))
	for _, n := range slices.Sorted(maps.Keys(m.pods)) {
		out = append(out, m.pods[n])
	}
	return out
}

func (m *machine) pickPod(t *rapid.T) *corev1.Pod {
	if len(m.pods) == 0 {
		t.Skip("no pods")
	}
	return m.pods[rapid.SampledFrom(slices.Sorted(maps.Keys(m.pods))).Draw(t, "pod")]
}

// addPod creates a pod through Inject, as the webhook would, and checks that its
// initial revision keeps the partition.
func (m *machine) addPod(t *rapid.T) {
	name := fmt.Sprintf("p-%02d", rapid.IntRange(0, 40).Draw(t, "name"))
	if m.pods[name] != nil {
		t.Skip("name taken")
	}
	p := podfixture.Pod("ns", name, podfixture.Labels("app", "sample"), podfixture.Containers("main"), podfixture.Created(m.now), podfixture.Ready())
	others := m.podList()
	res, err := Inject(p, InjectInput{Set: m.set, Pods: others, KubeVersion: smKubeVersion, Sidecar: SidecarOptions{Image: "reload:1"}, Now: m.now})
	if err != nil {
		t.Fatalf("inject %s: %v", name, err)
	}
	update := m.set.Status.UpdateRevision
	if update == "" {
		update = RevisionHash(m.set.Spec.Data, 0)
	}
	onUpdate := 0
	for _, o := range others {
		if o.Annotations[testKeys.UpdateRevision] == update {
			onUpdate++
		}
	}
	kept, _ := ResolvePartition(m.set.Spec.UpdateStrategy.Partition, len(others)+1)
	switch {
	case res.Revision == update && m.set.Status.CurrentRevision != "" && m.set.Status.CurrentRevision != update && onUpdate >= len(others)+1-kept:
		t.Fatalf("new pod %s gets the update although %d of %d pods have it and %d are kept", name, onUpdate, len(others)+1, kept)
	case res.Revision != update && (res.Revision != m.set.Status.CurrentRevision || onUpdate < len(others)+1-kept):
		t.Fatalf("new pod %s gets %q (update %q, current %q, %d of %d on update, %d kept)", name, res.Revision, update, m.set.Status.CurrentRevision, onUpdate, len(others)+1, kept)
	}
	started := metav1.NewTime(m.now)
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: ReloadSidecarName(m.set.Name), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
	m.pods[name] = p
}

// nodeStep does the node side's next step for the pod: finish restarts in progress,
// else start the restarts Restarts asks for, else mark the current revision when
// MarkCurrent allows it. It reports whether it did anything.
func (m *machine) nodeStep(t *rapid.T, p *corev1.Pod) bool {
	statuses := func(f func(cs *corev1.ContainerStatus)) {
		for i := range p.Status.InitContainerStatuses {
			f(&p.Status.InitContainerStatuses[i])
		}
		for i := range p.Status.ContainerStatuses {
			f(&p.Status.ContainerStatuses[i])
		}
	}
	finished := false
	statuses(func(cs *corev1.ContainerStatus) {
		if cs.State.Running == nil {
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(m.now)}}
			finished = true
		}
	})
	if finished {
		return true
	}
	need, err := Restarts(p, m.set)
	if err != nil {
		t.Fatal(err)
	}
	if len(need) > 0 {
		if need[0] == ReloadSidecarName(m.set.Name) && len(need) != 1 {
			t.Fatalf("pod %s: the reload sidecar restarts alone first, got %v", p.Name, need)
		}
		if need[0] != ReloadSidecarName(m.set.Name) && !m.set.Spec.UpdateStrategy.RestartInjectedContainers {
			t.Fatalf("pod %s: restarts %v without restartInjectedContainers", p.Name, need)
		}
		statuses(func(cs *corev1.ContainerStatus) {
			if slices.Contains(need, cs.Name) {
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "Restarting"}}
			}
		})
		if _, ok, _ := MarkCurrent(p, m.set, m.now); ok {
			t.Fatalf("pod %s: MarkCurrent while restarting", p.Name)
		}
		return true
	}
	patch, ok, err := MarkCurrent(p, m.set, m.now)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return false
	}
	*p = *patch.Apply(p)
	st, _ := testKeys.Read(p)
	if !st.Updated() || !podReady(p) {
		t.Fatalf("pod %s marked current: %+v ready=%v", p.Name, st, podReady(p))
	}
	// Every container that loads the files restarted after the revision was wanted.
	statuses(func(cs *corev1.ContainerStatus) {
		if cs.Name != ReloadSidecarName(m.set.Name) && !m.set.Spec.UpdateStrategy.RestartInjectedContainers {
			return
		}
		if cs.State.Running.StartedAt.Time.Before(st.UpdateTimestamp) {
			t.Fatalf("pod %s marked current, but %s started at %v, before %v", p.Name, cs.Name, cs.State.Running.StartedAt, st.UpdateTimestamp)
		}
	})
	return true
}

// podView is what the checks read from a pod.
type podView struct {
	wanted, current string
	ready, label    bool
	injected        bool // has the reload sidecar
}

func (v podView) unavailable() bool {
	// A pod without the reload sidecar never restarts: only readiness counts.
	return !v.ready || (v.injected && v.wanted != "" && v.wanted != v.current)
}

func viewPods(t *rapid.T, pods []*corev1.Pod) map[string]podView {
	out := map[string]podView{}
	for _, p := range pods {
		st, err := testKeys.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		_, label := p.Labels[testKeys.UpdateOrder]
		out[p.Name] = podView{wanted: st.UpdateRevision, current: st.CurrentRevision, ready: podReady(p), label: label,
			injected: hasContainer(p, ReloadSidecarName("cms1"))}
	}
	return out
}

func hubNames(t *rapid.T, cm *corev1.ConfigMap) []string {
	h, err := DecodeHub(cm)
	if err != nil {
		t.Fatal(err)
	}
	return h.names()
}

// plan runs one reconcile, checks every invariant against the state before it, and
// applies the result. With pure it also checks that Plan does not change its input
// and gives the same result for a shuffled pod list (settle's inner reconciles skip
// that, to keep the race-detector run short).
func (m *machine) plan(t *rapid.T, pure bool) Result {
	pods := m.podList()
	in := Input{Set: m.set, Hub: m.hub, Pods: pods, Now: m.now}
	var snapshot Input
	if pure {
		snapshot = Input{Set: m.set.DeepCopy(), Hub: m.hub.DeepCopy(), Pods: make([]*corev1.Pod, 0, len(pods)), Now: m.now}
		for _, p := range pods {
			snapshot.Pods = append(snapshot.Pods, p.DeepCopy())
		}
	}
	res, err := Plan(in)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if pure {
		if diff := gocmp.Diff(snapshot, in, exact); diff != "" {
			t.Fatalf("Plan changed its input (-before +after):\n%s", diff)
		}
		shuffled := rapid.Permutation(pods).Draw(t, "shuffled")
		res2, err := Plan(Input{Set: m.set, Hub: m.hub, Pods: shuffled, Now: m.now})
		if err != nil {
			t.Fatalf("Plan fails on shuffled pods: %v", err)
		}
		if diff := gocmp.Diff(res, res2, exact); diff != "" {
			t.Fatalf("Plan depends on pod order (-pods as listed +shuffled):\n%s", diff)
		}
	}

	st := m.set.Status
	us := m.set.Spec.UpdateStrategy
	restart := us.RestartInjectedContainers
	before := viewPods(t, pods)
	hubBefore := hubNames(t, m.hub)
	after := viewPods(t, applyPatches(pods, res.Pods))
	update := res.Status.UpdateRevision
	// Cold pods (created before spec.containers last changed, or not injected) are
	// never touched.
	cold := map[string]bool{}
	for _, p := range pods {
		cold[p.Name] = isColdAt(p, res.Status.LastContainersTimestamp) || !hasContainer(p, ReloadSidecarName(m.set.Name))
	}
	for _, pp := range res.Pods {
		if cold[pp.Name] {
			t.Fatalf("cold pod %s patched", pp.Name)
		}
	}
	// Result.Cold names exactly those pods (the machine has no terminating pods).
	var wantCold, gotCold []string
	for name, c := range cold {
		if c {
			wantCold = append(wantCold, name)
		}
	}
	slices.Sort(wantCold)
	for _, c := range res.Cold {
		gotCold = append(gotCold, c.Name)
	}
	if !slices.Equal(gotCold, wantCold) {
		t.Fatalf("Result.Cold %v, want %v", gotCold, wantCold)
	}

	// The update revision: the old name when the data is in the hub, else its hash.
	if old, ok := m.nameOf[m.data]; ok && slices.Contains(hubBefore, old) {
		if update != old {
			t.Fatalf("re-applied data got %s, not its old revision %s", update, old)
		}
	} else if update != RevisionHash(m.set.Spec.Data, 0) {
		t.Fatalf("update revision %s is not the hash of spec.data", update)
	}
	m.nameOf[m.data] = update
	order := append(slices.DeleteFunc(slices.Clone(hubBefore), func(n string) bool { return n == update }), update)

	// The hub round-trips and keeps order; live revisions are never trimmed; at most
	// the limit of non-live revisions stays, and none is dropped below it.
	hubCM := m.hub
	if res.Hub != nil {
		hubCM = res.Hub
		if res.Hub.Name != "cms1-hub" || res.Hub.Namespace != "ns" {
			t.Fatalf("hub %s/%s", res.Hub.Namespace, res.Hub.Name)
		}
	}
	h, err := DecodeHub(hubCM)
	if err != nil {
		t.Fatalf("the hub does not decode: %v", err)
	}
	if enc, _ := h.Encode(); enc != hubCM.Data[HubDataKey] {
		t.Fatalf("the hub does not round-trip:\n%s\n%s", enc, hubCM.Data[HubDataKey])
	}
	hubAfter := h.names()
	if !slices.Equal(hubAfter, res.Revisions) {
		t.Fatalf("Revisions %v, hub holds %v", res.Revisions, hubAfter)
	}
	if f, err := h.Files(update); err != nil || !maps.Equal(f, m.set.Spec.Data) {
		t.Fatalf("the update revision's files are %v, %v", f, err)
	}
	live := map[string]bool{update: true, st.CurrentRevision: true, res.Status.CurrentRevision: true}
	for name, v := range after {
		live[v.wanted], live[v.current] = true, true
		if !cold[name] && !slices.Contains(hubAfter, v.wanted) {
			t.Fatalf("a pod wants %s, which the hub %v does not hold", v.wanted, hubAfter)
		}
	}
	// A pod's wanted revision before this plan stays too: the pod patch may land after
	// the hub write, or not at all, and the pod then still reads its old revision.
	for name, v := range before {
		live[v.wanted] = true
		if v.wanted != "" && !cold[name] && slices.Contains(hubBefore, v.wanted) && !slices.Contains(hubAfter, v.wanted) {
			t.Fatalf("pod %s wanted %s before the plan, which the hub %v no longer holds", name, v.wanted, hubAfter)
		}
	}
	i, nonLive := 0, 0
	for _, n := range order {
		if i < len(hubAfter) && hubAfter[i] == n {
			i++
			if !live[n] {
				nonLive++
			}
			continue
		}
		if live[n] {
			t.Fatalf("live revision %s trimmed: %v -> %v", n, order, hubAfter)
		}
	}
	limit := int(*m.set.Spec.RevisionHistoryLimit)
	if i != len(hubAfter) || nonLive > limit || (len(hubAfter) < len(order) && nonLive != limit) {
		t.Fatalf("hub %v after %v: %d non-live, limit %d", hubAfter, order, nonLive, limit)
	}

	// Partition: never more pods on the update than wanted, unless they were there
	// already; without restarts the count reaches want at once.
	n := len(pods)
	kept, _ := ResolvePartition(us.Partition, n)
	want := n - kept
	countU := func(vs map[string]podView) int {
		c := 0
		for _, v := range vs {
			if v.wanted == update {
				c++
			}
		}
		return c
	}
	aBefore, aAfter := countU(before), countU(after)
	rollback := st.CurrentRevision != update && slices.Contains(order, st.CurrentRevision)
	warmOff, warmOn := 0, 0 // warm pods off and on the update before the plan
	for name, v := range before {
		switch {
		case cold[name]:
		case v.wanted == update:
			warmOn++
		default:
			warmOff++
		}
	}
	switch {
	case aAfter > max(want, aBefore):
		t.Fatalf("partition: %d pods on the update, want %d, %d before", aAfter, want, aBefore)
	case aBefore <= want && aAfter < aBefore:
		t.Fatalf("partition: pods rolled back from %d to %d with %d wanted", aBefore, aAfter, want)
	case aBefore > want && aAfter < want:
		t.Fatalf("partition: rolled back too far: %d -> %d, want %d", aBefore, aAfter, want)
	case !restart && aBefore <= want && aAfter != min(want, aBefore+warmOff):
		t.Fatalf("partition: %d pods on the update, want %d", aAfter, want)
	case !restart && aBefore > want && rollback && aAfter != max(want, aBefore-warmOn):
		t.Fatalf("partition raised: %d pods on the update, want %d", aAfter, want)
	case !rollback && aAfter < aBefore:
		t.Fatalf("rolled back without a revision to roll back to")
	}

	// maxUnavailable: a plan never makes more pods unavailable than the budget, or
	// than were unavailable already.
	if restart {
		mu, _ := resolveMaxUnavailable(us.MaxUnavailable, n)
		ub, ua := 0, 0
		for name := range before {
			if before[name].unavailable() {
				ub++
			}
			if after[name].unavailable() {
				ua++
			}
		}
		if ua > max(mu, ub) {
			t.Fatalf("maxUnavailable %d: %d unavailable pods, %d before", mu, ua, ub)
		}
	}

	// Priority: no pod left off the update precedes a pod moved onto it, unless the
	// budget kept the former (available) pod back.
	type key struct {
		class int
		name  string
	}
	prio := func(name string) key {
		rev := before[name].wanted
		switch {
		case rev != "" && rev == st.CurrentRevision:
			return key{len(order) + 1, name}
		case !slices.Contains(order, rev):
			return key{0, name}
		default:
			return key{1 + slices.Index(order, rev), name}
		}
	}
	less := func(a, b key) bool { return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.name, b.name)) < 0 }
	for p := range before {
		if cold[p] || before[p].wanted == update || after[p].wanted != update {
			continue
		}
		for q := range before {
			if cold[q] || before[q].wanted == update || after[q].wanted == update || !less(prio(q), prio(p)) {
				continue
			}
			if !restart || before[q].unavailable() {
				t.Fatalf("priority: %s %v updated before %s %v", p, prio(p), q, prio(q))
			}
		}
	}

	// Rollback order: pods that have not confirmed the update go back first, then in
	// reverse name order.
	rbKey := func(name string) key {
		c := 0
		if before[name].current == update {
			c = 1
		}
		return key{c, name}
	}
	rbLess := func(a, b key) bool { return cmp.Or(cmp.Compare(a.class, b.class), -cmp.Compare(a.name, b.name)) < 0 }
	for p := range before {
		if cold[p] || before[p].wanted != update || after[p].wanted == update {
			continue
		}
		for q := range before {
			if cold[q] || before[q].wanted != update || after[q].wanted != update || !rbLess(rbKey(q), rbKey(p)) {
				continue
			}
			if !restart || before[q].unavailable() {
				t.Fatalf("rollback: %s %v went back before %s %v", p, rbKey(p), q, rbKey(q))
			}
		}
	}

	// Status counts match the pods; the current revision advances only when every pod
	// runs the update and is ready.
	var want2 ConfigMapSetStatus
	for _, v := range after {
		want2.MatchedPods++
		up := v.wanted == update && v.current == update
		if up {
			want2.UpdatedPods++
		}
		if v.ready {
			want2.ReadyPods++
			if up {
				want2.UpdatedReadyPods++
			}
		}
	}
	got := res.Status
	if got.MatchedPods != want2.MatchedPods || got.UpdatedPods != want2.UpdatedPods || got.ReadyPods != want2.ReadyPods || got.UpdatedReadyPods != want2.UpdatedReadyPods {
		t.Fatalf("status %+v, pods say %+v", got, want2)
	}
	if wantCur := cmp.Or(map[bool]string{true: update}[got.UpdatedReadyPods == got.MatchedPods], st.CurrentRevision); got.CurrentRevision != wantCur {
		t.Fatalf("current revision %s, want %s", got.CurrentRevision, wantCur)
	}
	if got.ObservedGeneration != m.set.Generation {
		t.Fatalf("observedGeneration %d, generation %d", got.ObservedGeneration, m.set.Generation)
	}

	// The update-order label marks exactly the pods asked for a revision they have
	// not confirmed.
	for name, v := range after {
		if cold[name] {
			continue
		}
		if wantLabel := m.set.Spec.InjectUpdateOrder && v.wanted != v.current; v.label != wantLabel {
			t.Fatalf("pod %s: update-order label %v, want %v (%+v)", name, v.label, wantLabel, v)
		}
	}

	// Apply.
	if res.Hub != nil {
		m.hub = res.Hub
	}
	m.set.Status = res.Status
	for _, p := range applyPatches(pods, res.Pods) {
		m.pods[p.Name] = p
	}
	return res
}

// settle makes every pod ready and lets reconciles and the node side run without
// failures: the rollout must complete as far as the partition allows, within a bound.
func (m *machine) settle(t *rapid.T) {
	for _, p := range m.pods {
		podfixture.Ready()(p)
	}
	n := len(m.pods)
	rounds := n + 3
	var res Result
	for r := 0; ; r++ {
		m.now = m.now.Add(time.Second)
		res = m.plan(t, r == 0)
		moved := len(res.Pods) > 0
		for _, p := range m.podList() {
			for m.nodeStep(t, p) {
				moved = true
			}
		}
		if !moved {
			break
		}
		if r == rounds {
			t.Fatalf("no fixpoint after %d rounds with %d pods", rounds, n)
		}
	}
	update := res.Status.UpdateRevision
	kept, _ := ResolvePartition(m.set.Spec.UpdateStrategy.Partition, n)
	onUpdate, coldOnUpdate, warm, allUpdated := 0, 0, 0, true
	for _, p := range m.podList() {
		st, _ := testKeys.Read(p)
		allUpdated = allUpdated && st.UpdateRevision == update && st.CurrentRevision == update
		if st.UpdateRevision == update {
			onUpdate++
		}
		if isColdAt(p, m.set.Status.LastContainersTimestamp) || !hasContainer(p, ReloadSidecarName(m.set.Name)) {
			if st.UpdateRevision == update {
				coldOnUpdate++
			}
			continue
		}
		warm++
		if st.UpdateRevision != st.CurrentRevision {
			t.Fatalf("settled, but pod %s wants %s and runs %s", p.Name, st.UpdateRevision, st.CurrentRevision)
		}
	}
	// Warm pods fill the update up to n-kept; cold pods stay where they are.
	want := max(coldOnUpdate, min(n-kept, coldOnUpdate+warm))
	rollback := m.set.Status.CurrentRevision != update && slices.Contains(res.Revisions, m.set.Status.CurrentRevision)
	if onUpdate != want && !(onUpdate > want && !rollback) {
		t.Fatalf("settled with %d of %d pods on the update (%d cold), want %d (current %s)", onUpdate, n, coldOnUpdate, want, m.set.Status.CurrentRevision)
	}
	if allUpdated && (m.set.Status.CurrentRevision != update || int(m.set.Status.UpdatedReadyPods) != n) {
		t.Fatalf("every pod runs %s but the status is %+v", update, m.set.Status)
	}
}

func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t)
		for range rapid.IntRange(0, 6).Draw(t, "initialPods") {
			m.addPod(t)
		}
		m.plan(t, true)
		t.Repeat(map[string]func(*rapid.T){
			"newData": func(t *rapid.T) {
				m.setData(data(fmt.Sprintf("v%d", len(m.datas))), -1)
			},
			"oldData": func(t *rapid.T) {
				m.setData(nil, rapid.IntRange(0, len(m.datas)-1).Draw(t, "old"))
			},
			"partition": func(t *rapid.T) {
				m.set.Spec.UpdateStrategy.Partition = drawPartition(t)
				m.set.Generation++
			},
			"strategy": func(t *rapid.T) {
				drawStrategy(t, m.set)
				m.set.Generation++
			},
			"addPod": func(t *rapid.T) { m.addPod(t) },
			"addPodWithoutWebhook": func(t *rapid.T) {
				// The webhook failed open (or injection is paused): no sidecar. The
				// pod may still carry a wanted revision copied from a template. Plan
				// must leave the pod alone and not count it as restarting.
				name := fmt.Sprintf("p-%02d", rapid.IntRange(0, 40).Draw(t, "name"))
				if m.pods[name] != nil {
					t.Skip("name taken")
				}
				opts := []podfixture.Option{podfixture.Labels("app", "sample"), podfixture.Containers("main"), podfixture.Created(m.now), podfixture.Ready()}
				if rev := m.set.Status.UpdateRevision; rev != "" && rapid.Bool().Draw(t, "copiedRevision") {
					opts = append(opts, podfixture.Annotation(testKeys.UpdateRevision, rev), podfixture.Annotation(testKeys.UpdateRevisionTimestamp, FormatTimestamp(m.now)))
				}
				m.pods[name] = podfixture.Pod("ns", name, opts...)
			},
			"deletePod": func(t *rapid.T) {
				delete(m.pods, m.pickPod(t).Name)
			},
			"unready": func(t *rapid.T) { podfixture.NotReady()(m.pickPod(t)) },
			"ready":   func(t *rapid.T) { podfixture.Ready()(m.pickPod(t)) },
			"node": func(t *rapid.T) {
				m.nodeStep(t, m.pickPod(t))
			},
			"plan": func(t *rapid.T) { m.plan(t, true) },
			"containers": func(t *rapid.T) {
				// New mount paths: only pods created from the next reconcile on get
				// them; older pods are cold.
				c := &m.set.Spec.Containers[0]
				c.MountPath = map[string]string{"/data/conf": "/data/conf2", "/data/conf2": "/data/conf"}[c.MountPath]
				m.set.Generation++
			},
			"settle": func(t *rapid.T) { m.settle(t) },
			"": func(t *rapid.T) {
				m.now = m.now.Add(time.Second)
			},
		})
	})
}
