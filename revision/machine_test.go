package revision

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

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
	// Settled, the plan says the rollout is complete, unless a cold pod it can never
	// change is one the partition wants on the update (or has not confirmed its
	// revision).
	wantComplete := true
	for _, p := range m.podList() {
		st, _ := testKeys.Read(p)
		if !isColdAt(p, m.set.Status.LastContainersTimestamp) && hasContainer(p, ReloadSidecarName(m.set.Name)) {
			continue
		}
		if !st.Updated() || (st.UpdateRevision != update && onUpdate < n-kept) {
			wantComplete = false
		}
	}
	if res.Complete != wantComplete {
		t.Fatalf("settled: Complete = %v, want %v; waiting %+v", res.Complete, wantComplete, res.Waiting)
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
