package rdmaplugin

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// reservation is an allocation made at Reserve for a pod whose device-allocated
// annotation the plugin has not yet seen on a bound pod.
type reservation struct {
	node  string
	alloc rdma.Allocation
}

// nodeDevices is one node's inventory, or why it could not be built.
type nodeDevices struct {
	inv *rdma.Inventory
	err error // an *rdma.Error
	// gpus are the GPU minors of the Device object, bdfs the PCI addresses of its
	// GPUs, PFs and VFs (what a ResourceSlice publishing the same devices would
	// name); both sorted.
	gpus []int32
	bdfs []rdma.BDF
	// version is the Device object's resourceVersion: an older object is not applied
	// over a newer one.
	version string
	// problems is what was reported about this Device object (its fatal error or the
	// VFs left out), so that each change is reported once.
	problems string
}

// cluster is the plugin's view of what every node has and holds. It is fed by
// informers (Device objects, pods, ResourceSlices) and by Reserve/Unreserve, and is
// safe for concurrent use.
//
// A node's Used is the sum of what its bound pods hold (see holding: what the plugin
// reserved for them, else their first usable device-allocated annotation) plus the
// reservations of pods still being bound, and cached until one of those changes.
// Rebuilding from annotations after every restart is what keeps a restarted scheduler
// from handing out a device twice: the binding (or PreBind, before it) writes the
// annotation, so every bound pod carries its devices.
//
// Only pods the scheduler's own view of the node (its NodeInfo) has are counted. The
// plugin's informer and the scheduler's cache see a deletion at slightly different
// times, and the scheduler retries a waiting pod on its own cache's events: a pod
// retried because its preemption victim is gone must not find the victim's devices
// still held here, or it waits for the next event. The scheduler's simulations
// (preemption removing victims) change the NodeInfo the same way.
type cluster struct {
	mu       sync.RWMutex
	model    rdma.CapacityModel                 // how pods' requests are read
	devices  map[string]nodeDevices             // node -> inventory
	pods     map[string]map[types.UID]*holding  // node -> bound pods with an allocation
	podNode  map[types.UID]string               // pod -> node it is counted on
	reserved map[types.UID]reservation          // pod -> allocation not yet seen bound
	slices   map[string]map[string]publishedDRA // node -> ResourceSlice name -> its devices
	// cache holds each node's Used and its Filter and Score answers per request:
	// the scheduler tries every pod on hundreds of nodes, and pods of one workload
	// ask the same, while a binding changes one node.
	cache map[string]*nodeCache
}

// nodeCache is what is cached for one node, valid for one NodeInfo generation (the
// scheduler's view of the node's pods) until the plugin's own state of the node
// changes.
type nodeCache struct {
	gen     int64
	used    *rdma.Used
	err     error
	results map[string]*result // request key -> result
}

// result is a cached Fits (and, once Score asked, Score) of one request on one node.
type result struct {
	fit      error
	scored   bool
	score    int64
	scoreErr error
}

// maxResults bounds the requests cached per node; past it the node's results are
// reset.
const maxResults = 16

func newCluster() *cluster {
	return &cluster{
		model:    rdma.CountModel,
		devices:  map[string]nodeDevices{},
		pods:     map[string]map[types.UID]*holding{},
		podNode:  map[types.UID]string{},
		reserved: map[types.UID]reservation{},
		slices:   map[string]map[string]publishedDRA{},
		cache:    map[string]*nodeCache{},
	}
}

// invalidate drops what is cached for a node after its inventory or holders changed.
func (c *cluster) invalidate(node string) {
	delete(c.cache, node)
}

// generation identifies the scheduler's view of a node; nil (no view: every pod the
// plugin knows counts) is -1, which no NodeInfo has.
func generation(ni fwk.NodeInfo) int64 {
	if ni == nil {
		return -1
	}
	return ni.GetGeneration()
}

// cached returns the node's cache entry when it is valid for ni.
func (c *cluster) cached(node string, ni fwk.NodeInfo) *nodeCache {
	if e := c.cache[node]; e != nil && e.gen == generation(ni) {
		return e
	}
	return nil
}

// filter is rdma.Fits of req (whose canonical encoding is key) on node as ni shows
// it, cached until either changes.
func (c *cluster) filter(node string, ni fwk.NodeInfo, key string, req rdma.Request) error {
	// Hundreds of Filter calls run in parallel per pod; most find their answer cached.
	c.mu.RLock()
	if e := c.cached(node, ni); e != nil {
		if r, ok := e.results[key]; ok {
			c.mu.RUnlock()
			return r.fit
		}
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resultLocked(node, ni, key, req)
	if err != nil {
		return err
	}
	return r.fit
}

// score is rdma.Score of req on node, cached like filter.
func (c *cluster) score(node string, ni fwk.NodeInfo, key string, req rdma.Request, opts rdma.ScoreOptions) (int64, error) {
	c.mu.RLock()
	if e := c.cached(node, ni); e != nil {
		if r, ok := e.results[key]; ok && r.scored {
			c.mu.RUnlock()
			return r.score, r.scoreErr
		}
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resultLocked(node, ni, key, req)
	if err != nil {
		return 0, err
	}
	if !r.scored {
		inv, used, _ := c.stateLocked(node, ni)
		r.score, r.scoreErr = rdma.Score(inv, used, req, opts)
		r.scored = true
	}
	return r.score, r.scoreErr
}

func (c *cluster) resultLocked(node string, ni fwk.NodeInfo, key string, req rdma.Request) (*result, error) {
	inv, used, err := c.stateLocked(node, ni)
	if err != nil {
		return nil, err
	}
	e := c.cache[node]
	if r, ok := e.results[key]; ok {
		return r, nil
	}
	if len(e.results) >= maxResults {
		e.results = map[string]*result{}
	}
	r := &result{fit: rdma.Fits(inv, used, req)}
	e.results[key] = r
	return r, nil
}

// filterWhatIf is rdma.Fits of req on node as ni shows it, with the pods the
// scheduler's simulation added (nominated pods) each taking what rdma.Allocate gives
// it, in the order added (one that does not fit takes nothing). Uncached.
func (c *cluster) filterWhatIf(node string, ni fwk.NodeInfo, added []nominatedPod, req rdma.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inv, used, err := c.stateLocked(node, ni)
	if err != nil {
		return err
	}
	used = used.Clone()
	for _, n := range added {
		if c.holdsOn(n.uid, node) {
			continue // bound or reserved meanwhile: already counted
		}
		if a, err := rdma.Allocate(inv, used, n.req); err == nil {
			used.Add(a)
		}
	}
	return rdma.Fits(inv, used, req)
}

// holdsOn reports whether the plugin counts the pod as holding devices on node.
func (c *cluster) holdsOn(uid types.UID, node string) bool {
	if r, ok := c.reserved[uid]; ok {
		return r.node == node
	}
	_, ok := c.pods[node][uid]
	return ok
}

// setDevice records the inventory of a Device object (named like its node) and
// assesses again the pods on the node whose holdings are not recorded yet. It returns
// what to report: the object's problems when they changed, and the pods' (see
// setPod). An object no newer than the one recorded (by resourceVersion) is ignored.
func (c *cluster) setDevice(obj *unstructured.Unstructured) []notice {
	name, version := obj.GetName(), obj.GetResourceVersion()
	stale := func(prev nodeDevices) bool {
		return olderVersion(version, prev.version) || (version != "" && version == prev.version)
	}
	c.mu.RLock()
	prev, had := c.devices[name]
	c.mu.RUnlock()
	if had && stale(prev) {
		return nil // seen already
	}
	d := buildDevices(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, had = c.devices[name]
	if had && stale(prev) {
		return nil
	}
	d.problems = deviceProblems(d)
	c.devices[name] = d
	c.invalidate(name)
	var out []notice
	if d.problems != prev.problems { // prev is the zero value when !had
		out = append(out, deviceNotice(obj, d))
	}
	for _, uid := range sortedUIDs(c.pods[name]) {
		if h := c.pods[name][uid]; !h.recorded {
			out = append(out, c.assessLocked(name, h)...)
		}
	}
	return out
}

// buildDevices is the inventory of a Device object, or why there is none.
func buildDevices(obj *unstructured.Unstructured) nodeDevices {
	d := nodeDevices{version: obj.GetResourceVersion()}
	n, err := rdma.NodeFromDevice(obj)
	if err == nil {
		d.inv, err = rdma.NewInventory(n)
	}
	if err != nil {
		return nodeDevices{version: d.version, err: err} // an *rdma.Error naming the Device object or node
	}
	for _, dev := range n.Devices {
		if dev.Type == rdma.GPU && dev.Minor != nil {
			d.gpus = append(d.gpus, *dev.Minor)
		}
		if dev.Topology != nil {
			if b, err := rdma.ParseBDF(dev.Topology.BusID); err == nil {
				d.bdfs = append(d.bdfs, b)
			}
		}
		if b, err := rdma.ParseBDF(dev.UUID); err == nil && dev.Type == rdma.RDMA {
			d.bdfs = append(d.bdfs, b)
		}
		for _, g := range dev.VFGroups {
			for _, vf := range g.VFs {
				if b, err := rdma.ParseBDF(vf.BusID); err == nil {
					d.bdfs = append(d.bdfs, b)
				}
			}
		}
	}
	slices.Sort(d.gpus)
	slices.SortFunc(d.bdfs, rdma.BDF.Compare)
	d.bdfs = slices.Compact(d.bdfs)
	return d
}

// hasGPU reports whether the Device object lists a GPU of that minor.
func (d nodeDevices) hasGPU(minor int32) bool {
	_, ok := slices.BinarySearch(d.gpus, minor)
	return ok
}

// hasBDF reports whether the Device object lists a device at that PCI address.
func (d nodeDevices) hasBDF(b rdma.BDF) bool {
	_, ok := slices.BinarySearchFunc(d.bdfs, b, rdma.BDF.Compare)
	return ok
}

// olderVersion reports whether resourceVersion a is older than b; false when either
// is not comparable.
func olderVersion(a, b string) bool {
	n, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && n < 0
}

// deleteDevice forgets a node's inventory.
func (c *cluster) deleteDevice(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, name)
	c.invalidate(name)
}

// bound reports whether a pod is bound and not finished: only such pods hold devices.
func bound(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// setPod records a pod's current state (add or update) and returns what to report
// about its annotation (see assess). A bound pod is counted once it carries a
// device-allocated annotation; from then on it holds what the plugin recorded first
// (what the plugin reserved for it, else its first usable annotation), whatever
// later edits say. An object older than the one recorded is ignored.
func (c *cluster) setPod(pod *corev1.Pod) []notice {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, node := pod.UID, pod.Spec.NodeName
	var h *holding
	if n, ok := c.podNode[uid]; ok {
		h = c.pods[n][uid]
		if olderVersion(pod.ResourceVersion, h.pod.ResourceVersion) {
			return nil
		}
		if n != node || !bound(pod) {
			c.dropPod(uid)
			h = nil
		}
	}
	if !bound(pod) {
		return nil
	}
	if h == nil {
		if _, ok := pod.Annotations[rdma.AnnotationDeviceAllocated]; !ok {
			return nil // holds nothing yet
		}
		h = &holding{}
		if c.pods[node] == nil {
			c.pods[node] = map[types.UID]*holding{}
		}
		c.pods[node][uid] = h
		c.podNode[uid] = node
	} else if h.pod.ResourceVersion == pod.ResourceVersion && pod.ResourceVersion != "" {
		return nil // seen already
	}
	h.pod = pod
	// The bound pod's annotation now carries what Reserve allocated: that is what it
	// holds.
	if r, ok := c.reserved[uid]; ok {
		delete(c.reserved, uid)
		c.invalidate(r.node)
		if r.node == node && !h.recorded {
			h.record(r.alloc, true)
		}
	}
	c.invalidate(node)
	return c.assessLocked(node, h)
}

// deletePod forgets a pod and any reservation it had.
func (c *cluster) deletePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropPod(uid)
	if r, ok := c.reserved[uid]; ok {
		delete(c.reserved, uid)
		c.invalidate(r.node)
	}
}

func (c *cluster) dropPod(uid types.UID) {
	node, ok := c.podNode[uid]
	if !ok {
		return
	}
	delete(c.pods[node], uid)
	if len(c.pods[node]) == 0 {
		delete(c.pods, node)
	}
	delete(c.podNode, uid)
	c.invalidate(node)
}

// sortedUIDs are a node's pods' UIDs in order, so that an error names the same pod
// every time.
func sortedUIDs(pods map[types.UID]*holding) []types.UID {
	out := make([]types.UID, 0, len(pods))
	for uid := range pods {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// inventory returns a node's inventory; an error when the node has no valid Device
// object.
func (c *cluster) inventory(node string) (*rdma.Inventory, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inventoryLocked(node)
}

func (c *cluster) inventoryLocked(node string) (*rdma.Inventory, error) {
	d, ok := c.devices[node]
	if !ok {
		return nil, &rdma.Error{Reason: rdma.ReasonInvalidInventory, Message: fmt.Sprintf("node %s has no Device object", node)}
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := c.overlapLocked(node); err != nil {
		return nil, err
	}
	return d.inv, nil
}

// state returns a node's inventory and what its pods (those ni has; nil: all) hold.
// The Used must not be changed: it is shared until the node's state changes.
func (c *cluster) state(node string, ni fwk.NodeInfo) (*rdma.Inventory, *rdma.Used, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked(node, ni)
}

func (c *cluster) stateLocked(node string, ni fwk.NodeInfo) (*rdma.Inventory, *rdma.Used, error) {
	inv, err := c.inventoryLocked(node)
	if err != nil {
		return nil, nil, err
	}
	if e := c.cached(node, ni); e != nil {
		return inv, e.used, e.err
	}
	present := func(types.UID) bool { return true }
	if ni != nil {
		uids := make(map[types.UID]bool, len(ni.GetPods()))
		for _, p := range ni.GetPods() {
			uids[p.GetPod().UID] = true
		}
		present = func(uid types.UID) bool { return uids[uid] }
	}
	used := new(rdma.Used)
	for _, uid := range sortedUIDs(c.pods[node]) {
		h := c.pods[node][uid]
		if !present(uid) {
			continue
		}
		if h.recorded {
			used.Add(h.alloc)
		} else if h.trusted && h.err != nil {
			err = unknownHoldings(node, h)
			break
		}
	}
	if err == nil {
		for uid, r := range c.reserved {
			if r.node == node && present(uid) {
				used.Add(r.alloc)
			}
		}
	}
	c.cache[node] = &nodeCache{gen: generation(ni), used: used, err: err, results: map[string]*result{}}
	return inv, used, err
}

// reserve allocates req for a pod on node (as ni shows it) against the current state
// and records it.
func (c *cluster) reserve(uid types.UID, node string, ni fwk.NodeInfo, req rdma.Request) (rdma.Allocation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.reserved[uid]; ok { // a retry: release the previous attempt first
		delete(c.reserved, uid)
		c.invalidate(r.node)
	}
	inv, used, err := c.stateLocked(node, ni)
	if err != nil {
		return rdma.Allocation{}, err
	}
	a, err := rdma.Allocate(inv, used, req)
	if err != nil {
		return rdma.Allocation{}, err
	}
	c.reserved[uid] = reservation{node: node, alloc: a}
	c.invalidate(node)
	return a, nil
}

// unreserve releases a pod's reservation.
func (c *cluster) unreserve(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.reserved[uid]; ok {
		delete(c.reserved, uid)
		c.invalidate(r.node)
	}
}

// nodes returns the names of the nodes with an inventory, sorted.
func (c *cluster) nodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.devices))
	for n := range c.devices {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
