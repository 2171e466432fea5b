package rdmaplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

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
	state.Write(stateKey, &cycleData{req: req, key: p.keys.intern(key)})
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
	req, ok := p.nominated.get(pod, p.model)
	if !ok {
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
