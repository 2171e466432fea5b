package revision

import (
	"cmp"
	"maps"
	"slices"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/exact"
)

// The state machine's reconcile: Plan on the model's pods and the invariants every
// result must keep (machine_test.go holds the model and its actions).

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
		if diff := gocmp.Diff(snapshot, in, exact.Options); diff != "" {
			t.Fatalf("Plan changed its input (-before +after):\n%s", diff)
		}
		shuffled := rapid.Permutation(pods).Draw(t, "shuffled")
		res2, err := Plan(Input{Set: m.set, Hub: m.hub, Pods: shuffled, Now: m.now})
		if err != nil {
			t.Fatalf("Plan fails on shuffled pods: %v", err)
		}
		if diff := gocmp.Diff(res, res2, exact.Options); diff != "" {
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
	hubCM := res.Hub.ConfigMap
	if hubCM == nil || hubCM.Name != "cms1-hub" || hubCM.Namespace != "ns" {
		t.Fatalf("hub %+v", res.Hub)
	}
	switch wantAction := map[bool]kplan.Action{true: kplan.ActionCreate, false: kplan.ActionUpdate}[m.hub == nil]; {
	case m.hub != nil && m.hub.Data[HubDataKey] == hubCM.Data[HubDataKey]:
		if res.Hub.Action != kplan.ActionNone || gocmp.Diff(m.hub, hubCM, exact.Options) != "" {
			t.Fatalf("the hub is unchanged, but the plan says %s %+v", res.Hub.Action, hubCM)
		}
	case res.Hub.Action != wantAction:
		t.Fatalf("hub action %s, want %s", res.Hub.Action, wantAction)
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

	// Waiting names exactly the pods that do not run the update confirmed and ready,
	// in name order, each with a reason its state bears out; Complete says that only
	// the partition holds pods back.
	var wantWaiting, gotWaiting []string
	for _, p := range pods {
		v := after[p.Name]
		// A pod on the update that a raised partition sends back, held by the budget.
		sentBack := aAfter > want && slices.ContainsFunc(res.Waiting, func(w PodReason) bool {
			return w.Name == p.Name && w.Reason == ReasonMaxUnavailableReached
		})
		if v.wanted != update || v.current != update || !v.ready || sentBack {
			wantWaiting = append(wantWaiting, p.Name)
		}
	}
	onlyPartition, budget := true, 0
	for _, w := range res.Waiting {
		if w.Reason == ReasonMaxUnavailableReached {
			budget++
		}
	}
	for _, w := range res.Waiting {
		gotWaiting = append(gotWaiting, w.Name)
		v := after[w.Name]
		ok := w.Message != ""
		switch w.Reason {
		case ReasonPartitioned:
			// Kept: want pods are on the update, or will be once the pods waiting for
			// the budget move.
			ok = ok && v.ready && v.wanted != "" && v.wanted == v.current && v.wanted != update && aAfter+budget >= want
		case ReasonRevisionNotConfirmed:
			ok = ok && !cold[w.Name] && v.wanted != v.current
		case ReasonPodNotReady:
			ok = ok && !cold[w.Name] && !v.ready && v.wanted == v.current
		case ReasonMaxUnavailableReached:
			mu, _ := resolveMaxUnavailable(us.MaxUnavailable, n)
			ua := 0
			for _, a := range after {
				if a.unavailable() {
					ua++
				}
			}
			ok = ok && restart && !cold[w.Name] && ua >= mu
		case ReasonNotInjected, ReasonCreatedBeforeContainersChange:
			ok = ok && cold[w.Name] && slices.ContainsFunc(res.Cold, func(c PodReason) bool { return c.Name == w.Name && c.Reason == w.Reason })
		default:
			ok = false
		}
		if !ok {
			t.Fatalf("pod %s waits with %s (%s), but its state is %+v (cold %v, %d of %d on the update, want %d)", w.Name, w.Reason, w.Message, v, cold[w.Name], aAfter, n, want)
		}
		onlyPartition = onlyPartition && w.Reason == ReasonPartitioned
	}
	if !slices.Equal(gotWaiting, wantWaiting) {
		t.Fatalf("Waiting %v, want %v", gotWaiting, wantWaiting)
	}
	if res.Complete != onlyPartition {
		t.Fatalf("Complete = %v, Waiting %+v", res.Complete, res.Waiting)
	}
	if res.Complete && kept == 0 && res.Status.CurrentRevision != update {
		t.Fatalf("complete with partition 0, but the current revision is %s, not %s", res.Status.CurrentRevision, update)
	}
	// Complete, a plan may still ask a pod for the revision it runs (the partition or
	// the data changed before the pod confirmed the revision it wanted): nothing
	// restarts.
	for _, pp := range res.Pods {
		if res.Complete && pp.Annotations != nil && after[pp.Name].wanted != before[pp.Name].current {
			t.Fatalf("complete, but pod %s is asked for revision %s, which it does not run", pp.Name, after[pp.Name].wanted)
		}
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
	m.hub = res.Hub.ConfigMap
	m.set.Status = res.Status
	for _, p := range applyPatches(pods, res.Pods) {
		m.pods[p.Name] = p
	}
	return res
}
