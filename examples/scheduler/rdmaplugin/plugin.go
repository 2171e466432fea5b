package rdmaplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kplan-dev/kplan/rdma"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "KplanRDMA"

// DeviceResource is koordinator's Device resource, one object per node named like it.
var DeviceResource = schema.GroupVersionResource{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Resource: "devices"}

// deviceEvent is the scheduler's event resource for Device objects (plural.version.group).
const deviceEvent fwk.EventResource = "devices.v1alpha1.scheduling.koordinator.sh"

// Args are the plugin's arguments (pluginConfig[].args in a KubeSchedulerConfiguration).
type Args struct {
	// CapacityModel is how a pod's koordinator.sh/rdma request is counted: "Count"
	// (the default: the number of PFs or VFs) or "Percent" (100 per PF, as
	// koordinator upstream).
	CapacityModel string `json:"capacityModel,omitempty"`
	// ScoringStrategy is "LeastAllocated" (the default: spread) or "MostAllocated"
	// (pack).
	ScoringStrategy string `json:"scoringStrategy,omitempty"`
	// TopologyWeight (0..100) is the share of the score given to NICs sharing the
	// GPUs' PCIe roots; default 0.
	TopologyWeight int64 `json:"topologyWeight,omitempty"`
	// DRAOverlap is what to do with a node whose Device object and DRA
	// ResourceSlices publish the same devices (by PCI address): "Refuse" (the
	// default: neither pods asking for RDMA devices nor pods with resource claims are
	// placed there, with a reason naming the slice and devices) or "Ignore" (no check;
	// both allocators then hand out those devices independently).
	DRAOverlap string `json:"draOverlap,omitempty"`
}

// Values of Args.DRAOverlap.
const (
	DRAOverlapRefuse = "Refuse"
	DRAOverlapIgnore = "Ignore"
)

// Plugin allocates RDMA NICs (PFs or SR-IOV VFs, jointly with GPUs) with kplan's rdma
// package: PreFilter decodes the pod's request, Filter and Score use the node's
// Device object and what bound and reserved pods hold, Reserve allocates, Unreserve
// releases, and Bind (or, when another binder comes first, PreBind) writes the
// scheduling.koordinator.sh/device-allocated annotation.
type Plugin struct {
	handle fwk.Handle
	// snapshot returns the scheduler's view of a node in the current cycle (nil when
	// there is none).
	snapshot func(node string) fwk.NodeInfo
	// bindsFirst reports whether the plugin is the profile's first bind plugin.
	bindsFirst func() bool
	model      rdma.CapacityModel
	score      rdma.ScoreOptions
	state      *cluster
	synced     []cache.InformerSynced
	// refuseOverlap: check nodes for devices published both by Device objects and
	// by ResourceSlices (Args.DRAOverlap Refuse); watchSlices: the ResourceSlices
	// are watched (the cluster serves resource.k8s.io/v1).
	refuseOverlap, watchSlices bool
	logger                     klog.Logger
	recorder                   events.EventRecorder
}

var (
	_ fwk.PreFilterPlugin            = (*Plugin)(nil)
	_ fwk.PreFilterExtensions        = (*Plugin)(nil)
	_ fwk.FilterPlugin               = (*Plugin)(nil)
	_ fwk.ScorePlugin                = (*Plugin)(nil)
	_ fwk.ReservePlugin              = (*Plugin)(nil)
	_ fwk.PreBindPlugin              = (*Plugin)(nil)
	_ fwk.BindPlugin                 = (*Plugin)(nil)
	_ fwk.EnqueueExtensions          = (*Plugin)(nil)
	_ fwk.SignPlugin                 = (*Plugin)(nil)
	_ frameworkruntime.PluginFactory = New
)

// New builds the plugin from its arguments and starts watching Device objects and
// pods. It is the factory to register with app.WithPlugin(Name, New).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	p, err := newPlugin(args, h)
	if err != nil {
		return nil, err
	}
	if h.KubeConfig() == nil || h.SharedInformerFactory() == nil {
		return p, nil // unit tests feed the state directly
	}
	registerMetrics()
	p.logger = klog.FromContext(ctx).WithName(Name)
	p.recorder = h.EventRecorder()
	// Pods: the scheduler's own informer, so bound pods are seen as the scheduler
	// sees them.
	reg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onPod(o) },
		UpdateFunc: func(_, o any) { p.onPod(o) },
		DeleteFunc: func(o any) { p.onPodDelete(o) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s: watch pods: %w", Name, err)
	}
	p.synced = append(p.synced, reg.HasSynced)
	dyn, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := factory.ForResource(DeviceResource).Informer()
	dreg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onDevice(o) },
		UpdateFunc: func(_, o any) { p.onDevice(o) },
		DeleteFunc: func(o any) { p.onDeviceDelete(o) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s: watch devices: %w", Name, err)
	}
	p.synced = append(p.synced, dreg.HasSynced)
	// Started once the scheduler's own informers run (after its event broadcaster),
	// so that the events about Device objects already there are not lost.
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			factory.Start(ctx.Done())
		}
	}()
	if p.refuseOverlap {
		if err := p.watchResourceSlices(h); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// watchResourceSlices watches the ResourceSlices (the scheduler's own informer) when
// the cluster serves resource.k8s.io/v1; without DRA no device can be published twice.
func (p *Plugin) watchResourceSlices(h fwk.Handle) error {
	gv := resourcev1.SchemeGroupVersion.String()
	if _, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(gv); apierrors.IsNotFound(err) {
		p.logger.Info("the cluster does not serve DRA: ResourceSlices are not checked for devices published twice", "groupVersion", gv)
		return nil
	}
	reg, err := h.SharedInformerFactory().Resource().V1().ResourceSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.onSlice(o) },
		UpdateFunc: func(_, o any) { p.onSlice(o) },
		DeleteFunc: func(o any) { p.onSliceDelete(o) },
	})
	if err != nil {
		return fmt.Errorf("%s: watch resourceslices: %w", Name, err)
	}
	p.synced = append(p.synced, reg.HasSynced)
	p.watchSlices = true
	return nil
}

func newPlugin(args Args, h fwk.Handle) (*Plugin, error) {
	p := &Plugin{handle: h, state: newCluster()}
	p.snapshot = func(node string) fwk.NodeInfo {
		if h == nil || h.SnapshotSharedLister() == nil {
			return nil
		}
		ni, err := h.SnapshotSharedLister().NodeInfos().Get(node)
		if err != nil {
			return nil
		}
		return ni
	}
	p.bindsFirst = sync.OnceValue(func() bool {
		// The profile's plugins are known once the framework is built, after New.
		l, ok := h.(interface{ ListPlugins() *config.Plugins })
		if !ok {
			return false
		}
		b := l.ListPlugins().Bind.Enabled
		return len(b) > 0 && b[0].Name == Name
	})
	switch args.CapacityModel {
	case "", "Count":
		p.model = rdma.CountModel
	case "Percent":
		p.model = rdma.PercentModel
	default:
		return nil, fmt.Errorf("%s: args.capacityModel: %q is not Count or Percent", Name, args.CapacityModel)
	}
	switch args.ScoringStrategy {
	case "", "LeastAllocated":
		p.score.Strategy = rdma.LeastAllocated
	case "MostAllocated":
		p.score.Strategy = rdma.MostAllocated
	default:
		return nil, fmt.Errorf("%s: args.scoringStrategy: %q is not LeastAllocated or MostAllocated", Name, args.ScoringStrategy)
	}
	if args.TopologyWeight < 0 || args.TopologyWeight > 100 {
		return nil, fmt.Errorf("%s: args.topologyWeight: %d is outside 0..100", Name, args.TopologyWeight)
	}
	p.score.TopologyWeight = args.TopologyWeight
	switch args.DRAOverlap {
	case "", DRAOverlapRefuse:
		p.refuseOverlap = true
	case DRAOverlapIgnore:
	default:
		return nil, fmt.Errorf("%s: args.draOverlap: %q is not Refuse or Ignore", Name, args.DRAOverlap)
	}
	p.state.model = p.model
	return p, nil
}

func decodeArgs(obj runtime.Object) (Args, error) {
	var args Args
	if obj == nil {
		return args, nil
	}
	if u, ok := obj.(*runtime.Unknown); ok {
		if len(u.Raw) == 0 {
			return args, nil
		}
		dec := json.NewDecoder(bytes.NewReader(u.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return args, fmt.Errorf("%s: args: %w", Name, err)
		}
		return args, nil
	}
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return args, fmt.Errorf("%s: args: %w", Name, err)
	}
	return args, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

func (p *Plugin) onPod(o any) {
	if pod, ok := o.(*corev1.Pod); ok {
		p.emit(p.state.setPod(pod))
	}
}

func (p *Plugin) onPodDelete(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if pod, ok := o.(*corev1.Pod); ok {
		p.state.deletePod(pod.UID)
	}
}

func (p *Plugin) onDevice(o any) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		p.emit(p.state.setDevice(u))
	}
}

func (p *Plugin) onDeviceDelete(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		p.state.deleteDevice(u.GetName())
		forgetDevice(u.GetName())
	}
}

func (p *Plugin) onSlice(o any) {
	if s, ok := o.(*resourcev1.ResourceSlice); ok {
		p.state.setSlice(s)
	}
}

func (p *Plugin) onSliceDelete(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if s, ok := o.(*resourcev1.ResourceSlice); ok {
		p.state.deleteSlice(s.Name)
	}
}

// stateKey keys the pod's request (and, after Reserve, its allocation) in CycleState.
const stateKey fwk.StateKey = Name

type cycleData struct {
	// draOnly: the pod asks for no RDMA devices but has resource claims; Filter only
	// keeps it off nodes whose devices are published twice.
	draOnly bool
	req     rdma.Request
	key     string // req's canonical encoding, the key of the plugin's per-node cache
	alloc   *rdma.Allocation
	// nominated holds, per node, the pods the scheduler's simulation added there
	// that hold nothing yet (AddPod of a pod nominated to the node after its
	// preemption). Filter on such a node bypasses the cache.
	nominated map[string][]nominatedPod
}

// nominatedPod is a pod the simulation added to a node, with its request.
type nominatedPod struct {
	uid types.UID
	req rdma.Request
}

// Clone copies the simulation's additions, which AddPod and RemovePod make on clones;
// the request is shared (never changed after PreFilter), and the allocation is set
// by Reserve, which runs once per cycle on the original.
func (d *cycleData) Clone() fwk.StateData {
	c := *d
	if d.nominated != nil {
		c.nominated = make(map[string][]nominatedPod, len(d.nominated))
		for node, pods := range d.nominated {
			c.nominated[node] = slices.Clone(pods)
		}
	}
	return &c
}

func readCycle(state fwk.CycleState) (*cycleData, error) {
	v, err := state.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: read cycle state: %w", Name, err)
	}
	d, ok := v.(*cycleData)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T", Name, v)
	}
	return d, nil
}

// PreFilter decodes the pod's RDMA request; pods without one skip the plugin.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil {
		return nil, statusFor(err) // the request fits no node: UnschedulableAndUnresolvable
	}
	draOnly := req.IsZero() && len(pod.Spec.ResourceClaims) > 0 && p.watchSlices
	if req.IsZero() && !draOnly {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err := req.Validate(); err != nil && !draOnly {
		return nil, statusFor(err)
	}
	// Before the first allocation the plugin must have seen every bound pod's
	// annotation, or it could hand out a device a bound pod holds.
	if !p.hasSynced() && !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return nil, fwk.AsStatus(fmt.Errorf("%s: informers did not sync: %w", Name, context.Cause(ctx)))
	}
	if draOnly {
		state.Write(stateKey, &cycleData{draOnly: true})
		return nil, nil
	}
	key, err := json.Marshal(req) // maps encode with sorted keys: canonical
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	state.Write(stateKey, &cycleData{req: req, key: string(key)})
	return nil, nil
}

// hasSynced reports whether every informer handler has seen its initial list.
func (p *Plugin) hasSynced() bool {
	for _, f := range p.synced {
		if !f() {
			return false
		}
	}
	return true
}

// PreFilterExtensions returns the plugin itself. The scheduler's simulations change
// the NodeInfo they pass to Filter, and the plugin counts only the pods a NodeInfo
// has, so preemption removing a victim frees its devices with no help from AddPod and
// RemovePod; they only track nominated pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod counts a pod nominated to the node (after its preemption; it is not bound
// and holds nothing yet) as holding what rdma.Allocate would give it there, so pods
// of lower or equal priority do not take the devices freed for it. A bound or
// assumed pod added back (preemption reprieving a victim) is counted from the
// NodeInfo.
func (p *Plugin) AddPod(_ context.Context, state fwk.CycleState, _ *corev1.Pod, podInfoToAdd fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	d, err := readCycle(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	pod := podInfoToAdd.GetPod()
	if pod.Spec.NodeName != "" {
		return nil
	}
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil || req.IsZero() || req.Validate() != nil {
		return nil // it asks for nothing this plugin can give
	}
	if d.nominated == nil {
		d.nominated = map[string][]nominatedPod{}
	}
	node := nodeInfo.Node().Name
	d.nominated[node] = append(d.nominated[node], nominatedPod{uid: pod.UID, req: req})
	return nil
}

// RemovePod undoes AddPod for a nominated pod; other pods are counted from the
// NodeInfo.
func (p *Plugin) RemovePod(_ context.Context, state fwk.CycleState, _ *corev1.Pod, podInfoToRemove fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	d, err := readCycle(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node, uid := nodeInfo.Node().Name, podInfoToRemove.GetPod().UID
	if len(d.nominated[node]) == 0 {
		return nil
	}
	d.nominated[node] = slices.DeleteFunc(d.nominated[node], func(n nominatedPod) bool { return n.uid == uid })
	return nil
}

// statusFor turns an error into a scheduler status. An rdma error's reason and
// message go in as they are, the reason first, so the scheduler's summary of a pod
// that fits no node counts the nodes per reason ("3 InsufficientDevices"). The code
// follows the sentinel the error wraps: rdma.ErrUnsatisfiable (not even an idle node
// would fit the pod; a node with an invalid or no Device object; a pod whose request
// is invalid) is UnschedulableAndUnresolvable, as preemption cannot help;
// rdma.ErrInsufficient (not enough free now) is Unschedulable. So is an error that
// wraps neither: a bound pod's annotation that cannot be used (preempting that pod
// helps; the node is usable again once it changes or goes). A node the plugin
// refuses for its own reasons (devices also published for DRA) is
// UnschedulableAndUnresolvable with the plugin's reason.
func statusFor(err error) *fwk.Status {
	var ne *nodeError
	if errors.As(err, &ne) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, string(ne.Reason), ne.Message)
	}
	code := fwk.Unschedulable
	if errors.Is(err, rdma.ErrUnsatisfiable) {
		code = fwk.UnschedulableAndUnresolvable
	}
	var e *rdma.Error
	if errors.As(err, &e) {
		return fwk.NewStatus(code, string(e.Reason), e.Message)
	}
	return fwk.NewStatus(code, err.Error())
}

// Filter reports whether the pod's request fits on the node given what bound and
// reserved (assumed) pods hold there.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	d, err := readCycle(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := ni.Node().Name
	if d.draOnly {
		if err := p.state.draConflict(node); err != nil {
			return statusFor(err)
		}
		return nil
	}
	if added := d.nominated[node]; len(added) > 0 {
		if err := p.state.filterWhatIf(node, ni, added, d.req); err != nil {
			return statusFor(err)
		}
		return nil
	}
	if err := p.state.filter(node, ni, d.key, d.req); err != nil {
		return statusFor(err)
	}
	return nil
}

// PreScore skips Score for pods PreFilter skipped (pods without an RDMA request).
func (p *Plugin) PreScore(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if d, err := readCycle(state); err != nil || d.draOnly {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score rates the node by rdma.Score (free units after the allocation, and topology).
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	d, err := readCycle(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	s, err := p.state.score(ni.Node().Name, ni, d.key, d.req, p.score)
	if err != nil {
		return 0, nil // Filter passed; the node changed since. Reserve will tell.
	}
	return s, nil
}

// ScoreExtensions returns nil: scores are already 0..100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve allocates the devices on the chosen node and holds them for the pod until
// its annotation is seen on the bound pod, or Unreserve.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.draOnly {
		return nil // PreFilter skipped this pod, or it asks for no RDMA devices
	}
	a, err := p.state.reserve(pod.UID, node, p.snapshot(node), d.req)
	if err != nil {
		return statusFor(err)
	}
	d.alloc = &a
	return nil
}

// Unreserve releases what Reserve held for the pod.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.state.unreserve(pod.UID)
}

// PreBindPreFlight skips PreBind for pods without an RDMA request, and when the
// plugin's Bind writes the annotation.
func (p *Plugin) PreBindPreFlight(_ context.Context, state fwk.CycleState, _ *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if d, err := readCycle(state); err != nil || d.alloc == nil || p.bindsFirst() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// PreBind writes the allocation into the pod's device-allocated annotation, when the
// plugin does not bind the pod itself (see Bind).
func (p *Plugin) PreBind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.alloc == nil || p.bindsFirst() {
		return nil
	}
	value, err := p.annotation(d, pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{rdma.AnnotationDeviceAllocated: value}}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("pod %s: write %s: %w", rdma.PodName(pod), rdma.AnnotationDeviceAllocated, err))
	}
	klog.FromContext(ctx).V(4).Info("allocated RDMA devices", "pod", klog.KObj(pod), "node", node, "annotation", value)
	return nil
}

// Bind binds a pod holding an allocation with a Binding that carries the
// device-allocated annotation; the API server writes it onto the pod together with
// the node name. That is one write per pod instead of PreBind's patch and the
// binding, and a pod never carries the annotation of an attempt whose binding failed.
// The plugin binds only when it is the profile's first bind plugin (as in the
// checked-in configuration); otherwise, and for pods without an allocation, it
// returns Skip and the next binder (DefaultBinder) binds, after PreBind wrote the
// annotation.
func (p *Plugin) Bind(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node string) *fwk.Status {
	d, err := readCycle(state)
	if err != nil || d.alloc == nil || !p.bindsFirst() {
		return fwk.NewStatus(fwk.Skip)
	}
	value, err := p.annotation(d, pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{rdma.AnnotationDeviceAllocated: value}},
		Target: corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("pod %s: bind to %s with %s: %w", rdma.PodName(pod), node, rdma.AnnotationDeviceAllocated, err))
	}
	klog.FromContext(ctx).V(4).Info("bound with RDMA devices", "pod", klog.KObj(pod), "node", node, "annotation", value)
	return nil
}

// annotation is the pod's device-allocated annotation with the cycle's allocation.
func (p *Plugin) annotation(d *cycleData, pod *corev1.Pod) (string, error) {
	existing := pod.Annotations[rdma.AnnotationDeviceAllocated]
	if d.req.GPUs > 0 {
		// The plugin chose the GPUs, so a gpu list already there is its own, from an
		// attempt whose binding failed after PreBind's patch: replace it rather than
		// fail because the GPUs differ this time.
		var err error
		if existing, err = withoutGPUs(existing); err != nil {
			return "", fmt.Errorf("pod %s: %w", rdma.PodName(pod), err)
		}
	}
	value, err := rdma.EncodeAllocated(existing, *d.alloc, p.model)
	if err != nil {
		return "", fmt.Errorf("pod %s: %w", rdma.PodName(pod), err)
	}
	return value, nil
}

// withoutGPUs is a device-allocated annotation value without its gpu list.
func withoutGPUs(value string) (string, error) {
	a, err := rdma.DecodeAllocated(value)
	if err != nil {
		return "", err
	}
	if _, ok := a.Other[rdma.GPU]; !ok {
		return value, nil
	}
	delete(a.Other, rdma.GPU)
	if len(a.RDMA) == 0 && len(a.Other) == 0 {
		return "", nil
	}
	return a.Encode()
}

// signKey names the plugin's fragment of a pod's scheduling signature.
const signKey = "kplan.dev/rdma.Request"

// SignPod signs a pod with its RDMA request (canonical: the same request gives the
// same signature), so pods asking the same may be batched: the scheduler then offers
// a pod the next node of the previous pod's ranking, and only when the node the
// previous pod took cannot take this one (pods that fill a node); Filter still runs on
// the node offered. Pods without a request sign with nothing; a pod whose request does
// not decode is not signed.
func (p *Plugin) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if req.IsZero() {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: signKey, Value: req}}, nil
}

// EventsToRegister requeues pods the plugin rejected on the events that can make
// them fit: a pod holding devices deleted or finished (the
// scheduler's pod informer drops finished pods, so that is a delete too), a bound
// pod's device-allocated or allocate-hint annotation changed (a fix of an annotation
// that made its node's holdings unknown), the waiting pod's own request changed, a
// node added or its capacity changed, a Device object added, changed or deleted, a
// ResourceSlice changed or deleted (devices no longer published twice). A pod that
// fits no node's inventory even when idle is not requeued by pod deletions.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: p.hintPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: p.hintPodUpdated},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
		{Event: fwk.ClusterEvent{Resource: deviceEvent, ActionType: fwk.Add | fwk.Update | fwk.Delete}, QueueingHintFn: p.hintDevice},
	}
	if p.watchSlices {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: p.hintSlice})
	}
	return events, nil
}

func (p *Plugin) hintPodDeleted(_ klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if t, ok := oldObj.(cache.DeletedFinalStateUnknown); ok {
		oldObj = t.Obj
	}
	if gone, ok := oldObj.(*corev1.Pod); ok && !mayHold(gone) {
		return fwk.QueueSkip, nil
	}
	if !p.couldEverFit(pod) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// couldEverFit reports whether the pod's request fits some known node when every
// device there is free.
func (p *Plugin) couldEverFit(pod *corev1.Pod) bool {
	req, err := rdma.RequestFromPod(pod, p.model)
	if err != nil || req.Validate() != nil {
		return false
	}
	for _, n := range p.state.nodes() {
		inv, err := p.state.inventory(n)
		if err != nil {
			continue
		}
		if rdma.Fits(inv, nil, req) == nil {
			return true
		}
	}
	return false
}
