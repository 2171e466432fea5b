package rdmaplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// nominated caches the requests of pods AddPod counts on nodes.
	nominated requestCache
	// keys interns the requests' canonical encodings (the per-node cache's keys).
	keys keyInterner
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
	reg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(handler(p.onPod, p.onPodDelete))
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
	dreg, err := inf.AddEventHandler(handler(p.onDevice, p.onDeviceDelete))
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
	reg, err := h.SharedInformerFactory().Resource().V1().ResourceSlices().Informer().AddEventHandler(handler(p.onSlice, p.onSliceDelete))
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
	// The per-node cache keeps only the scheduler's own view of a node (the one in its
	// snapshot); the copies its simulations change are answered without replacing it.
	p.state.isView = func(node string, ni fwk.NodeInfo) bool {
		s := p.snapshot(node)
		return s == nil || s.GetGeneration() == ni.GetGeneration()
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

// handler calls set with an object added or updated and del with one deleted (its
// last known state when the informer missed the deletion).
func handler(set, del func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(o any) { del(deletedObject(o)) },
	}
}

// deletedObject is the object a delete notification is about: the last known state
// the informer had when it missed the deletion itself.
func deletedObject(o any) any {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func (p *Plugin) onPod(o any) {
	if pod, ok := o.(*corev1.Pod); ok {
		if pod.Spec.NodeName != "" {
			p.nominated.forget(pod.UID)
		}
		p.emit(p.state.setPod(pod))
	}
}

func (p *Plugin) onPodDelete(o any) {
	if pod, ok := o.(*corev1.Pod); ok {
		p.nominated.forget(pod.UID)
		p.state.deletePod(pod.UID)
	}
}

func (p *Plugin) onDevice(o any) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		p.emit(p.state.setDevice(u))
	}
}

func (p *Plugin) onDeviceDelete(o any) {
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
	if s, ok := o.(*resourcev1.ResourceSlice); ok {
		p.state.deleteSlice(s.Name)
	}
}
