package rdmaplugin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

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
	err error
}

// cluster is the plugin's view of what every node has and holds. It is fed by
// informers (Device objects, pods) and by Reserve/Unreserve, and is safe for
// concurrent use.
//
// A node's Used is rebuilt from the annotations of the bound pods on it plus the
// reservations of pods still being bound, and cached until one of those changes.
// Rebuilding from annotations after every restart is what keeps a restarted scheduler
// from handing out a device twice: PreBind writes the annotation before the pod is
// bound, so every bound pod carries its devices.
type cluster struct {
	mu       sync.RWMutex
	devices  map[string]nodeDevices               // node -> inventory
	pods     map[string]map[types.UID]*corev1.Pod // node -> bound pods with an allocation
	podNode  map[types.UID]string                 // pod -> node it is counted on
	reserved map[types.UID]reservation            // pod -> allocation not yet seen bound
	used     map[string]usedEntry                 // node -> cached Used
	// results caches Filter and Score per node and request (see filter): the
	// scheduler tries every pod on hundreds of nodes, and pods of one workload ask the
	// same, while a binding changes one node.
	results map[string]map[string]*result // node -> request key -> result
}

// result is a cached Fits (and, once Score asked, Score) of one request on one node.
type result struct {
	fit      error
	scored   bool
	score    int64
	scoreErr error
}

// maxResults bounds the requests cached per node; past it the node's cache is reset.
const maxResults = 16

type usedEntry struct {
	used rdma.Used
	err  error
}

func newCluster() *cluster {
	return &cluster{
		devices:  map[string]nodeDevices{},
		pods:     map[string]map[types.UID]*corev1.Pod{},
		podNode:  map[types.UID]string{},
		reserved: map[types.UID]reservation{},
		used:     map[string]usedEntry{},
		results:  map[string]map[string]*result{},
	}
}

// invalidate drops what is cached for a node after its inventory or holders changed.
func (c *cluster) invalidate(node string) {
	delete(c.used, node)
	delete(c.results, node)
}

// filter is rdma.Fits of req (whose canonical encoding is key) on node, cached until
// the node changes.
func (c *cluster) filter(node, key string, req rdma.Request) error {
	// Hundreds of Filter calls run in parallel per pod; most find their answer cached.
	c.mu.RLock()
	r, ok := c.results[node][key]
	c.mu.RUnlock()
	if ok {
		return r.fit
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resultLocked(node, key, req)
	if err != nil {
		return err
	}
	return r.fit
}

// score is rdma.Score of req on node, cached like filter.
func (c *cluster) score(node, key string, req rdma.Request, opts rdma.ScoreOptions) (int64, error) {
	c.mu.RLock()
	r, ok := c.results[node][key]
	if ok && r.scored {
		c.mu.RUnlock()
		return r.score, r.scoreErr
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resultLocked(node, key, req)
	if err != nil {
		return 0, err
	}
	if !r.scored {
		inv, used, _ := c.stateLocked(node)
		r.score, r.scoreErr = rdma.Score(inv, used, req, opts)
		r.scored = true
	}
	return r.score, r.scoreErr
}

func (c *cluster) resultLocked(node, key string, req rdma.Request) (*result, error) {
	inv, used, err := c.stateLocked(node)
	if err != nil {
		return nil, err
	}
	m := c.results[node]
	if r, ok := m[key]; ok {
		return r, nil
	}
	if m == nil || len(m) >= maxResults {
		m = map[string]*result{}
		c.results[node] = m
	}
	r := &result{fit: rdma.Fits(inv, used, req)}
	m[key] = r
	return r, nil
}

// filterWhatIf is rdma.Fits of req on node with the simulation's changes applied,
// uncached: what the removed pods hold is free, then each added pod that holds nothing
// yet takes what rdma.Allocate gives it (in the order added; one that does not fit
// takes nothing).
func (c *cluster) filterWhatIf(node string, w *whatIf, req rdma.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inv, used, err := c.stateLocked(node)
	if err != nil {
		return err
	}
	used = used.Clone()
	removed := slices.Sorted(maps.Keys(w.removed))
	for _, uid := range removed {
		if a, ok := c.heldLocked(inv, uid, node); ok {
			used.Remove(a)
		}
	}
	for _, n := range w.added {
		if _, ok := c.heldLocked(inv, n.uid, node); ok {
			continue // already counted
		}
		if a, err := rdma.Allocate(inv, used, n.req); err == nil {
			used.Add(a)
		}
	}
	return rdma.Fits(inv, used, req)
}

// heldLocked returns what a pod holds on node in the plugin's state: its reservation
// there, or the allocation of its bound annotation.
func (c *cluster) heldLocked(inv *rdma.Inventory, uid types.UID, node string) (rdma.Allocation, bool) {
	if r, ok := c.reserved[uid]; ok {
		return r.alloc, r.node == node
	}
	pod, ok := c.pods[node][uid]
	if !ok {
		return rdma.Allocation{}, false
	}
	// UsedByPods decoded the same annotation for the node's Used, so this succeeds.
	a, err := rdma.AllocationFromPod(inv, pod)
	return a, err == nil
}

// setDevice records the inventory of a Device object (named like its node).
func (c *cluster) setDevice(obj *unstructured.Unstructured) {
	name := obj.GetName()
	var d nodeDevices
	n, err := rdma.NodeFromDevice(obj)
	if err == nil {
		d.inv, err = rdma.NewInventory(n)
	}
	if err != nil {
		d = nodeDevices{err: fmt.Errorf("device %s: %w", name, err)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.devices[name] = d
	c.invalidate(name)
}

// deleteDevice forgets a node's inventory.
func (c *cluster) deleteDevice(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, name)
	c.invalidate(name)
}

// holds reports whether a pod counts as holding devices: bound, not finished, with
// a device-allocated annotation.
func holds(pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	_, ok := pod.Annotations[rdma.AnnotationDeviceAllocated]
	return ok
}

// setPod records a pod's current state (add or update).
func (c *cluster) setPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropPod(pod.UID)
	if !holds(pod) {
		return
	}
	node := pod.Spec.NodeName
	if c.pods[node] == nil {
		c.pods[node] = map[types.UID]*corev1.Pod{}
	}
	c.pods[node][pod.UID] = pod
	c.podNode[pod.UID] = node
	c.invalidate(node)
	// The bound pod's annotation now carries what Reserve allocated.
	if r, ok := c.reserved[pod.UID]; ok {
		delete(c.reserved, pod.UID)
		c.invalidate(r.node)
	}
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
		return nil, fmt.Errorf("node %s has no Device object", node)
	}
	return d.inv, d.err
}

// state returns a node's inventory and what its pods hold. The Used must not be
// changed: it is shared until the node's state changes.
func (c *cluster) state(node string) (*rdma.Inventory, rdma.Used, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked(node)
}

func (c *cluster) stateLocked(node string) (*rdma.Inventory, rdma.Used, error) {
	inv, err := c.inventoryLocked(node)
	if err != nil {
		return nil, rdma.Used{}, err
	}
	if e, ok := c.used[node]; ok {
		return inv, e.used, e.err
	}
	pods := make([]*corev1.Pod, 0, len(c.pods[node]))
	for _, p := range c.pods[node] {
		pods = append(pods, p)
	}
	// Sorted so that an error names the same pod every time.
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
	used, err := rdma.UsedByPods(inv, pods)
	if err == nil {
		for _, r := range c.reserved {
			if r.node == node {
				used.Add(r.alloc)
			}
		}
	}
	c.used[node] = usedEntry{used: used, err: err}
	return inv, used, err
}

// reserve allocates req for a pod on node against the current state and records it.
func (c *cluster) reserve(uid types.UID, node string, req rdma.Request) (rdma.Allocation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.reserved[uid]; ok { // a retry: release the previous attempt first
		delete(c.reserved, uid)
		c.invalidate(r.node)
	}
	inv, used, err := c.stateLocked(node)
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
