package rdmaplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// testHandle is the scheduler handle the plugin uses: only its client.
type testHandle struct {
	fwk.Handle
	cs kubernetes.Interface
}

func (h testHandle) ClientSet() kubernetes.Interface { return h.cs }

func newTestPlugin(t *testing.T, cs kubernetes.Interface) *Plugin {
	t.Helper()
	p, err := newPlugin(Args{}, testHandle{cs: cs})
	if err != nil {
		t.Fatal(err)
	}
	p.snapshot = func(node string) fwk.NodeInfo { return view(t, p, node) }
	return p
}

// view is the scheduler's NodeInfo of node as the plugin's state shows it: the bound
// pods and the reserved (assumed) ones.
func view(t *testing.T, p *Plugin, node string) fwk.NodeInfo {
	t.Helper()
	p.state.mu.RLock()
	var pods []*corev1.Pod
	for _, h := range p.state.pods[node] {
		pods = append(pods, h.pod)
	}
	for uid, r := range p.state.reserved {
		if r.node == node {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid}, Spec: corev1.PodSpec{NodeName: node}})
		}
	}
	p.state.mu.RUnlock()
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	return ni
}

// rdmaPod is a pod asking for n VFs (CountModel) and, when gpus > 0, that many GPUs
// jointly on the VFs' PCIe roots.
func rdmaPod(t *testing.T, name string, vfs, gpus int) *corev1.Pod {
	t.Helper()
	res := corev1.ResourceList{rdma.ResourceRDMA: *resource.NewQuantity(int64(vfs), resource.DecimalSI)}
	ann := map[string]string{}
	hint, err := json.Marshal(rdma.DeviceAllocateHints{rdma.RDMA: {VFSelector: &metav1.LabelSelector{}}})
	if err != nil {
		t.Fatal(err)
	}
	ann[rdma.AnnotationDeviceAllocateHint] = string(hint)
	if gpus > 0 {
		res[rdma.ResourceNvidiaGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
		joint, err := json.Marshal(rdma.DeviceJointAllocate{DeviceTypes: []rdma.DeviceType{rdma.GPU, rdma.RDMA}, RequiredScope: rdma.JointSamePCIe})
		if err != nil {
			t.Fatal(err)
		}
		ann[rdma.AnnotationDeviceJointAllocate] = string(joint)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

func podInfo(t *testing.T, pod *corev1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// withNominated adds a pod nominated to the node to clones of the cycle state and
// the NodeInfo, as the scheduler does before it filters a node with nominated pods.
func withNominated(t *testing.T, p *Plugin, state fwk.CycleState, pod, nominated *corev1.Pod, ni fwk.NodeInfo) (fwk.CycleState, fwk.NodeInfo) {
	t.Helper()
	stateWith, niWith := state.Clone(), ni.Snapshot()
	niWith.AddPodInfo(podInfo(t, nominated))
	if s := p.AddPod(context.Background(), stateWith, pod, podInfo(t, nominated), niWith); !s.IsSuccess() {
		t.Fatal(s)
	}
	return stateWith, niWith
}

// preFilter runs PreFilter for pod on a new cycle state.
func preFilter(t *testing.T, p *Plugin, pod *corev1.Pod) fwk.CycleState {
	t.Helper()
	state := framework.NewCycleState()
	if _, s := p.PreFilter(context.Background(), state, pod, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter(%s): %v", pod.Name, s)
	}
	return state
}

// holdOn binds pod to node in the plugin's state with what Reserve gives it, as a
// bound pod with its annotation.
func holdOn(t *testing.T, p *Plugin, pod *corev1.Pod, node string) rdma.Allocation {
	t.Helper()
	state := preFilter(t, p, pod)
	if s := p.Reserve(context.Background(), state, pod, node); !s.IsSuccess() {
		t.Fatalf("Reserve(%s): %v", pod.Name, s)
	}
	d, err := readCycle(state)
	if err != nil {
		t.Fatal(err)
	}
	bound := boundPod(t, string(pod.UID), node, *d.alloc)
	p.onPod(bound)
	return *d.alloc
}

// selectVictims does what the scheduler's DefaultPreemption does on one node
// (SelectVictimsOnNode): on a clone of the cycle state, remove every candidate, check
// the preemptor fits, then add the candidates back one by one in the given order
// (most important first), keeping each that still lets the preemptor fit. It returns
// the victims, or ok false when the preemptor does not fit even with every candidate
// gone.
func selectVictims(t *testing.T, p *Plugin, state fwk.CycleState, preemptor *corev1.Pod, ni fwk.NodeInfo, candidates []*corev1.Pod) (victims []string, ok bool) {
	t.Helper()
	ctx := context.Background()
	state = state.Clone()
	ni = ni.Snapshot()
	onNode := map[string]*corev1.Pod{}
	for _, pi := range ni.GetPods() {
		onNode[pi.GetPod().Name] = pi.GetPod()
	}
	remove := func(c *corev1.Pod) {
		t.Helper()
		if err := ni.RemovePod(klog.Background(), onNode[c.Name]); err != nil {
			t.Fatal(err)
		}
		if s := p.RemovePod(ctx, state, preemptor, podInfo(t, onNode[c.Name]), ni); !s.IsSuccess() {
			t.Fatal(s)
		}
	}
	for _, c := range candidates {
		remove(c)
	}
	if !p.Filter(ctx, state, preemptor, ni).IsSuccess() {
		return nil, false
	}
	for _, c := range candidates {
		pi := podInfo(t, onNode[c.Name])
		ni.AddPodInfo(pi)
		if s := p.AddPod(ctx, state, preemptor, pi, ni); !s.IsSuccess() {
			t.Fatal(s)
		}
		if !p.Filter(ctx, state, preemptor, ni).IsSuccess() {
			remove(c)
			victims = append(victims, c.Name)
		}
	}
	return victims, true
}

// Preemption's dry run sees the devices of the pods it removes as free, gives back
// those of the pods it reprieves, and leaves the plugin's state and the original
// cycle state as they were.
func TestPreemptionFreesVictimsDevices(t *testing.T) {
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	low1 := rdmaPod(t, "low-1", 1, 0)
	low2 := rdmaPod(t, "low-2", 2, 0)
	holdOn(t, p, low1, "n1")
	// low-2 is assumed (reserved, not yet bound).
	if s := p.Reserve(context.Background(), preFilter(t, p, low2), low2, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	ni := view(t, p, "n1")

	for _, tc := range []struct {
		name        string
		vfs         int
		order       []*corev1.Pod
		wantVictims []string
		wantFit     bool
	}{
		{"two VFs: the one-VF pod is reprieved, the assumed two-VF pod evicted", 2, []*corev1.Pod{low1, low2}, []string{"low-2"}, true},
		{"two VFs, the other order: the first reprieved stays", 2, []*corev1.Pod{low2, low1}, []string{"low-1"}, true},
		{"three VFs: the one-VF pod is reprieved", 3, []*corev1.Pod{low1, low2}, []string{"low-2"}, true},
		{"four VFs need both gone", 4, []*corev1.Pod{low1, low2}, []string{"low-1", "low-2"}, true},
		{"five VFs never fit", 5, []*corev1.Pod{low1, low2}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := rdmaPod(t, "high", tc.vfs, 0)
			state := preFilter(t, p, pod)
			if s := p.Filter(context.Background(), state, pod, ni); s.Code() != fwk.Unschedulable && s.Code() != fwk.UnschedulableAndUnresolvable {
				t.Fatalf("before preemption Filter = %v, want a rejection (3 of 4 VFs held)", s)
			}
			victims, fit := selectVictims(t, p, state, pod, ni, tc.order)
			if fit != tc.wantFit {
				t.Fatalf("fits with every candidate removed: %v, want %v", fit, tc.wantFit)
			}
			if diff := cmp.Diff(tc.wantVictims, victims); diff != "" {
				t.Fatalf("victims (-want +got):\n%s", diff)
			}
			// The simulation ran on a clone: the cycle state and the plugin's state
			// still count every holder.
			if s := p.Filter(context.Background(), state, pod, ni); s.IsSuccess() {
				t.Fatal("after the dry run, Filter on the original cycle state passes: the simulation leaked")
			}
			_, used, err := p.state.state("n1", ni)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(used.VFs()); got != 3 {
				t.Fatalf("plugin state holds %d VFs after the dry run, want 3", got)
			}
		})
	}
}

// A pod nominated to a node (after its preemption) counts there as holding what it
// would get, so a pod of lower or equal priority does not take the devices freed for
// it; removing the nominated pod again frees them.
func TestNominatedPodHoldsItsDevices(t *testing.T) {
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	ctx := context.Background()
	nominated := rdmaPod(t, "nominated", 3, 0)
	pod := rdmaPod(t, "other", 2, 0)
	state := preFilter(t, p, pod)
	ni := view(t, p, "n1")
	// What the scheduler does for a node with nominated pods: add them to clones of
	// the NodeInfo and the cycle state.
	stateWith, niWith := withNominated(t, p, state, pod, nominated, ni)
	if s := p.Filter(ctx, stateWith, pod, niWith); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter with a 3-VF pod nominated on a 4-VF node = %v, want Unschedulable", s)
	}
	if s := p.Filter(ctx, state, pod, ni); !s.IsSuccess() {
		t.Fatalf("Filter without the nominated pod = %v, want success (the clone leaked)", s)
	}
	if err := niWith.RemovePod(klog.Background(), nominated); err != nil {
		t.Fatal(err)
	}
	if s := p.RemovePod(ctx, stateWith, pod, podInfo(t, nominated), niWith); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.Filter(ctx, stateWith, pod, niWith); !s.IsSuccess() {
		t.Fatalf("Filter after removing the nominated pod again = %v, want success", s)
	}
	// A nominated pod already holding its devices (bound meanwhile) is not counted twice.
	holdOn(t, p, nominated, "n1")
	one := rdmaPod(t, "one", 1, 0)
	oneState := preFilter(t, p, one)
	ni = view(t, p, "n1")
	if s := p.AddPod(ctx, oneState, one, podInfo(t, nominated), ni); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.Filter(ctx, oneState, one, ni); !s.IsSuccess() {
		t.Fatalf("a 1-VF pod beside the bound 3-VF nominated pod: Filter = %v, want success", s)
	}
}

// The plugin's informer and the scheduler's cache see a deletion at different
// times. A pod the scheduler's NodeInfo no longer has holds nothing for Filter and
// Reserve, even before the plugin's informer tells it; a pod the plugin knows holds
// devices again as soon as the NodeInfo has it.
func TestOnlyPodsTheSchedulerSeesHoldDevices(t *testing.T) {
	ctx := context.Background()
	p := newTestPlugin(t, nil)
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs
	victim := rdmaPod(t, "victim", 4, 0)
	holdOn(t, p, victim, "n1")
	withVictim := view(t, p, "n1")
	gone := withVictim.Snapshot()
	if err := gone.RemovePod(klog.Background(), withVictim.GetPods()[0].GetPod()); err != nil {
		t.Fatal(err)
	}
	p.snapshot = func(string) fwk.NodeInfo { return gone }
	pod := rdmaPod(t, "pod", 4, 0)
	state := preFilter(t, p, pod)
	if s := p.Filter(ctx, state, pod, withVictim); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter while the scheduler still has the victim = %v, want Unschedulable", s)
	}
	if s := p.Filter(ctx, state, pod, gone); !s.IsSuccess() {
		t.Fatalf("Filter once the scheduler's cache dropped the victim = %v, want success", s)
	}
	if s := p.Reserve(ctx, state, pod, "n1"); !s.IsSuccess() {
		t.Fatalf("Reserve once the scheduler's cache dropped the victim = %v, want success", s)
	}
	p.Unreserve(ctx, state, pod, "n1")
	if s := p.Filter(ctx, preFilter(t, p, pod), pod, withVictim); s.Code() != fwk.Unschedulable {
		t.Fatalf("Filter on the view with the victim after the cache held the other view = %v, want Unschedulable", s)
	}
}

// preBindClient is a fake API server holding pod, whose pod patches fail with
// patchErr when it is set.
func preBindClient(pod *corev1.Pod, patchErr error) *fake.Clientset {
	cs := fake.NewClientset(pod.DeepCopy())
	if patchErr != nil {
		cs.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, patchErr
		})
	}
	return cs
}

// When PreBind fails (the patch is refused, conflicts, or the pod is gone), the
// scheduler calls Unreserve: the devices are free for the next pod, and nothing is
// held twice.
func TestPreBindFailureReleasesTheDevices(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		patchErr error
		deleted  bool // the pod is deleted while binding (the informer tells the plugin)
	}{
		{name: "patch refused", patchErr: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "a", errors.New("denied by policy"))},
		{name: "patch conflicts", patchErr: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "a", errors.New("the object has been modified"))},
		{name: "pod deleted meanwhile", patchErr: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "a"), deleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rdmaPod(t, "a", 4, 0)
			p := newTestPlugin(t, preBindClient(a, tc.patchErr))
			p.state.setDevice(device(t, "n1", 1, 0, 1, 4)) // 4 VFs: a takes all
			state := preFilter(t, p, a)
			if s := p.Reserve(ctx, state, a, "n1"); !s.IsSuccess() {
				t.Fatal(s)
			}
			b := rdmaPod(t, "b", 1, 0)
			if s := p.Filter(ctx, preFilter(t, p, b), b, view(t, p, "n1")); s.IsSuccess() {
				t.Fatal("while a is reserved, b fits")
			}
			if s := p.PreBind(ctx, state, a, "n1"); s.IsSuccess() {
				t.Fatal("PreBind succeeded though the patch failed")
			}
			if tc.deleted {
				p.onPodDelete(a)
			}
			p.Unreserve(ctx, state, a, "n1")
			p.Unreserve(ctx, state, a, "n1") // twice: still nothing released beyond a's
			_, used, err := p.state.state("n1", view(t, p, "n1"))
			if err != nil {
				t.Fatal(err)
			}
			if !used.IsEmpty() {
				t.Fatalf("after Unreserve the node still holds %v", used.VFs())
			}
			if s := p.Reserve(ctx, preFilter(t, p, b), b, "n1"); !s.IsSuccess() {
				t.Fatalf("b after a's release: %v", s)
			}
			// a retried (unless deleted) fits no more: b holds one of the 4 VFs.
			if !tc.deleted {
				if s := p.Filter(ctx, preFilter(t, p, a), a, view(t, p, "n1")); s.Code() != fwk.Unschedulable {
					t.Fatalf("a retried: Filter = %v, want Unschedulable", s)
				}
			}
		})
	}
}

// A joint pod whose annotation was written by PreBind but whose binding then failed
// is retried with the annotation from that attempt on it; if its GPUs went to another
// pod meanwhile, the retry gets other GPUs and PreBind replaces the stale gpu list (it
// used to fail for ever: "the annotation holds GPUs [0 1], the allocation [2 3]").
func TestPreBindRetryReplacesItsOwnStaleAnnotation(t *testing.T) {
	ctx := context.Background()
	a := rdmaPod(t, "a", 2, 2)
	cs := preBindClient(a, nil)
	p := newTestPlugin(t, cs)
	p.state.setDevice(device(t, "n1", 1, 4, 1, 8)) // one root: 4 GPUs, 8 VFs

	first := preFilter(t, p, a)
	if s := p.Reserve(ctx, first, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.PreBind(ctx, first, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	// The binding fails: the scheduler unreserves and retries a later with the pod as
	// the API server has it now, annotation included.
	p.Unreserve(ctx, first, a, "n1")
	a, err := cs.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := rdma.DecodeAllocated(a.Annotations[rdma.AnnotationDeviceAllocated])
	if err != nil {
		t.Fatal(err)
	}
	staleGPUs, err := stale.GPUMinors()
	if err != nil {
		t.Fatal(err)
	}
	b := rdmaPod(t, "b", 2, 2)
	bAlloc := holdOn(t, p, b, "n1")
	var bGPUs []int32
	for _, g := range bAlloc.GPUs {
		bGPUs = append(bGPUs, g.Minor)
	}
	if diff := cmp.Diff(staleGPUs, bGPUs); diff != "" {
		t.Fatalf("b was meant to take the GPUs of a's failed attempt (-a's +b's):\n%s", diff)
	}

	retry := preFilter(t, p, a)
	if s := p.Reserve(ctx, retry, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.PreBind(ctx, retry, a, "n1"); !s.IsSuccess() {
		t.Fatalf("PreBind on the retry: %v", s)
	}
	got, err := cs.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rdma.DecodeAllocated(got.Annotations[rdma.AnnotationDeviceAllocated])
	if err != nil {
		t.Fatal(err)
	}
	d, err := readCycle(retry)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rdma.Entries(*d.alloc, rdma.CountModel), dec.RDMA); diff != "" {
		t.Errorf("rdma entries (-allocation +annotation):\n%s", diff)
	}
	gpus, err := dec.GPUMinors()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gpus {
		if slices.Contains(bGPUs, g) {
			t.Errorf("a's annotation names GPU %d, which b holds (annotation GPUs %v)", g, gpus)
		}
	}
	if len(gpus) != 2 {
		t.Errorf("a's annotation names GPUs %v, want 2", gpus)
	}
}

// A gpu list the plugin did not choose (the pod asks no GPUs of it) is kept.
func TestWithoutGPUs(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"only gpu", `{"gpu":[{"minor":0}]}`, ""},
		{"rdma and gpu", `{"gpu":[{"minor":0}],"rdma":[{"minor":1,"id":"0000:10:00.0","busID":"0000:10:00.0"}]}`, `{"rdma":[{"minor":1,"id":"0000:10:00.0","busID":"0000:10:00.0"}]}`},
		{"fpga kept", `{"fpga":[{"minor":3}],"gpu":[{"minor":0}]}`, `{"fpga":[{"minor":3}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withoutGPUs(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got == tc.want {
				return
			}
			// Compare as JSON: key order and spacing are the codec's.
			var g, w any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("%q: %v", got, err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("withoutGPUs(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// bindingClient is a fake API server holding pod that applies bindings as the real
// one does (node name, and the binding's annotations copied onto the pod), or
// refuses them with bindErr when it is set.
func bindingClient(t *testing.T, pod *corev1.Pod, bindErr error) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset(pod.DeepCopy())
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	cs.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(clienttesting.CreateAction)
		if !ok || ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		if bindErr != nil {
			return true, nil, bindErr
		}
		b := ca.GetObject().(*corev1.Binding)
		obj, err := cs.Tracker().Get(pods, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Spec.NodeName = b.Target.Name
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			p.Annotations[k] = v
		}
		return true, nil, cs.Tracker().Update(pods, p, p.Namespace)
	})
	return cs
}

// As the first bind plugin, the plugin binds the pod with a Binding carrying the
// annotation: one write, no patch; PreBind does nothing.
func TestBindCarriesTheAnnotation(t *testing.T) {
	ctx := context.Background()
	a := rdmaPod(t, "a", 2, 2)
	cs := bindingClient(t, a, nil)
	p := newTestPlugin(t, cs)
	p.bindsFirst = func() bool { return true }
	p.state.setDevice(device(t, "n1", 1, 4, 1, 8))
	state := preFilter(t, p, a)
	if s := p.Reserve(ctx, state, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if _, s := p.PreBindPreFlight(ctx, state, a, "n1"); !s.IsSkip() {
		t.Fatalf("PreBindPreFlight = %v, want Skip: Bind writes the annotation", s)
	}
	if s := p.PreBind(ctx, state, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.Bind(ctx, state, a, "n1"); !s.IsSuccess() {
		t.Fatalf("Bind: %v", s)
	}
	var verbs []string
	for _, act := range cs.Actions() {
		verbs = append(verbs, act.GetVerb()+" "+act.GetResource().Resource+"/"+act.GetSubresource())
	}
	if diff := cmp.Diff([]string{"create pods/binding"}, verbs); diff != "" {
		t.Errorf("API calls (-want +got):\n%s", diff)
	}
	got, err := cs.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := readCycle(state)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rdma.EncodeAllocated("", *d.alloc, rdma.CountModel)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "n1" || got.Annotations[rdma.AnnotationDeviceAllocated] != want {
		t.Errorf("bound pod: node %q, annotation %s; want n1, %s", got.Spec.NodeName, got.Annotations[rdma.AnnotationDeviceAllocated], want)
	}
	// A pod without an allocation, or a plugin that is not the first binder, leaves
	// binding to the next binder.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns", UID: "plain"}}
	if _, s := p.PreFilter(ctx, framework.NewCycleState(), plain, nil); !s.IsSkip() {
		t.Fatalf("PreFilter of a pod without a request = %v, want Skip", s)
	}
	if s := p.Bind(ctx, framework.NewCycleState(), plain, "n1"); !s.IsSkip() {
		t.Errorf("Bind of a pod the plugin skipped = %v, want Skip", s)
	}
	p.bindsFirst = func() bool { return false }
	if s := p.Bind(ctx, state, a, "n1"); !s.IsSkip() {
		t.Errorf("Bind when another binder comes first = %v, want Skip", s)
	}
}

// A refused binding leaves no annotation on the pod, and Unreserve frees the devices.
func TestBindFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	a := rdmaPod(t, "a", 4, 0)
	cs := bindingClient(t, a, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/binding"}, "a", errors.New("denied by policy")))
	p := newTestPlugin(t, cs)
	p.bindsFirst = func() bool { return true }
	p.state.setDevice(device(t, "n1", 1, 0, 1, 4))
	state := preFilter(t, p, a)
	if s := p.Reserve(ctx, state, a, "n1"); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := p.Bind(ctx, state, a, "n1"); s.IsSuccess() || s.IsSkip() {
		t.Fatalf("Bind = %v, want the API server's refusal", s)
	}
	p.Unreserve(ctx, state, a, "n1")
	got, err := cs.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Annotations[rdma.AnnotationDeviceAllocated]; ok || got.Spec.NodeName != "" {
		t.Errorf("after a refused binding the pod has node %q, annotation %q", got.Spec.NodeName, v)
	}
	_, used, err := p.state.state("n1", view(t, p, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if !used.IsEmpty() {
		t.Errorf("after Unreserve the node still holds %v", used.VFs())
	}
}

// Pods asking the same sign the same; pods asking something else, or nothing, sign
// differently; a pod whose request does not decode is not signed.
func TestSignPod(t *testing.T) {
	p := newTestPlugin(t, nil)
	sign := func(pod *corev1.Pod) string {
		t.Helper()
		f, s := p.SignPod(context.Background(), pod)
		if !s.IsSuccess() {
			t.Fatalf("SignPod(%s) = %v", pod.Name, s)
		}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := sign(rdmaPod(t, "a", 2, 2)), sign(rdmaPod(t, "b", 2, 2))
	if a != b {
		t.Errorf("two pods asking the same sign %s and %s", a, b)
	}
	for _, other := range []*corev1.Pod{rdmaPod(t, "fewer-gpus", 2, 1), rdmaPod(t, "more-vfs", 3, 2), rdmaPod(t, "no-gpus", 2, 0), {ObjectMeta: metav1.ObjectMeta{Name: "plain"}}} {
		if s := sign(other); s == a {
			t.Errorf("pod %s signs like a: %s", other.Name, s)
		}
	}
	bad := rdmaPod(t, "bad", 2, 0)
	bad.Annotations[rdma.AnnotationDeviceAllocateHint] = "{"
	if _, s := p.SignPod(context.Background(), bad); s.Code() != fwk.Unschedulable {
		t.Errorf("SignPod of a pod with a broken hint = %v, want Unschedulable (not signed)", s)
	}
}

// A pod whose request cannot be read or is invalid fits no node: PreFilter says so
// with rdma's reason and message, as they are.
func TestPreFilterRejectsAnInvalidRequest(t *testing.T) {
	p := newTestPlugin(t, nil)
	half := rdmaPod(t, "half", 1, 0)
	half.Spec.Containers[0].Resources.Limits[rdma.ResourceRDMA] = resource.MustParse("1.5")
	half.Spec.Containers[0].Resources.Requests[rdma.ResourceRDMA] = resource.MustParse("1.5")
	broken := rdmaPod(t, "broken", 1, 0)
	broken.Annotations[rdma.AnnotationDeviceAllocateHint] = `{"rdma":{"requiredTopologyScope":"Rack"}}`
	for _, tc := range []struct {
		pod     *corev1.Pod
		message string
	}{
		{half, "pod ns/half: resource koordinator.sh/rdma: 1500m is not a whole number"},
		{broken, `pod ns/broken: annotation scheduling.koordinator.sh/device-allocate-hint: rdma.requiredTopologyScope: unknown "Rack"`},
	} {
		t.Run(tc.pod.Name, func(t *testing.T) {
			_, s := p.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
			if s.Code() != fwk.UnschedulableAndUnresolvable || !slices.Equal(s.Reasons(), []string{string(rdma.ReasonInvalidRequest), tc.message}) {
				t.Fatalf("PreFilter = %v %q, want UnschedulableAndUnresolvable [%s %s]", s.Code(), s.Reasons(), rdma.ReasonInvalidRequest, tc.message)
			}
		})
	}
}

// The informer handlers see added and updated objects as they are, and a deletion
// the informer missed as the object's last known state.
func TestHandlerUnwrapsAMissedDeletion(t *testing.T) {
	var got []string
	h := handler(func(o any) { got = append(got, fmt.Sprint("set ", o)) }, func(o any) { got = append(got, fmt.Sprint("delete ", o)) })
	h.OnAdd("a", false)
	h.OnUpdate("a", "b")
	h.OnDelete("c")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: "d"})
	if diff := cmp.Diff([]string{"set a", "set b", "delete c", "delete d"}, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
