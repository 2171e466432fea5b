package rdmaplugin

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// reservation is an allocation made at Reserve for a pod whose device-allocated
// annotation the plugin has not yet seen on a bound pod.
type reservation struct {
	node  string
	alloc rdma.Allocation
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
	// reservedOn indexes reserved by node, so that building a node's Used reads only
	// that node's reservations.
	reservedOn map[string]map[types.UID]rdma.Allocation
	// cache holds each node's Used and its Filter and Score answers per request:
	// the scheduler tries every pod on hundreds of nodes, and pods of one workload
	// ask the same, while a binding changes one node.
	cache map[string]*nodeCache
	// isView reports whether ni is the scheduler's own view of the node in the current
	// cycle, not a copy its simulations changed (nominated pods added, preemption
	// victims removed): only the node's own view is cached, so that what-if copies do
	// not replace it. Nil: every view is the node's own. Called without c.mu held.
	isView func(node string, ni fwk.NodeInfo) bool
}

func newCluster() *cluster {
	return &cluster{
		model:    rdma.CountModel,
		devices:  map[string]nodeDevices{},
		pods:     map[string]map[types.UID]*holding{},
		podNode:  map[types.UID]string{},
		reserved: map[types.UID]reservation{},
		slices:   map[string]map[string]publishedDRA{},
		cache:    map[string]*nodeCache{},

		reservedOn: map[string]map[types.UID]rdma.Allocation{},
	}
}

// addReservation records what Reserve allocated for a pod on a node.
func (c *cluster) addReservation(uid types.UID, r reservation) {
	c.dropReservation(uid)
	c.reserved[uid] = r
	if c.reservedOn[r.node] == nil {
		c.reservedOn[r.node] = map[types.UID]rdma.Allocation{}
	}
	c.reservedOn[r.node][uid] = r.alloc
	c.invalidate(r.node)
}

// dropReservation forgets a pod's reservation, if it has one.
func (c *cluster) dropReservation(uid types.UID) {
	r, ok := c.reserved[uid]
	if !ok {
		return
	}
	delete(c.reserved, uid)
	delete(c.reservedOn[r.node], uid)
	if len(c.reservedOn[r.node]) == 0 {
		delete(c.reservedOn, r.node)
	}
	c.invalidate(r.node)
}

// holdsOn reports whether the plugin counts the pod as holding devices on node.
func (c *cluster) holdsOn(uid types.UID, node string) bool {
	if r, ok := c.reserved[uid]; ok {
		return r.node == node
	}
	_, ok := c.pods[node][uid]
	return ok
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
	keep := c.own(node, ni)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked(node, ni, keep)
}

// stateLocked is state with c.mu held; keep is c.own(node, ni).
func (c *cluster) stateLocked(node string, ni fwk.NodeInfo, keep bool) (*rdma.Inventory, *rdma.Used, error) {
	inv, e, err := c.entryLocked(node, ni, keep)
	if err != nil {
		return nil, nil, err
	}
	return inv, e.used, e.err
}

// usedLocked is what the node's pods that ni has (nil: every pod the plugin knows
// there) hold: what was recorded for the bound ones, and the reservations of those
// still binding. A pod whose holdings are unknown makes them an error; of several,
// the error names the one with the smallest UID, so it names the same pod every time.
func (c *cluster) usedLocked(node string, ni fwk.NodeInfo) (*rdma.Used, error) {
	used := new(rdma.Used)
	var unknown *holding
	var unknownUID types.UID
	count := func(uid types.UID, h *holding) {
		switch {
		case h.recorded:
			used.Add(h.alloc)
		case h.trusted && h.err != nil && (unknown == nil || uid < unknownUID):
			unknown, unknownUID = h, uid
		}
	}
	bound, held := c.pods[node], c.reservedOn[node]
	if ni == nil {
		for uid, h := range bound {
			count(uid, h)
		}
		for _, a := range held {
			used.Add(a)
		}
	} else {
		for _, pi := range ni.GetPods() {
			uid := pi.GetPod().UID
			if h, ok := bound[uid]; ok {
				count(uid, h)
			} else if a, ok := held[uid]; ok {
				used.Add(a)
			}
		}
	}
	if unknown != nil {
		return used, unknownHoldings(node, unknown)
	}
	return used, nil
}

// reserve allocates req for a pod on node (as ni shows it) against the current state
// and records it.
func (c *cluster) reserve(uid types.UID, node string, ni fwk.NodeInfo, req rdma.Request) (rdma.Allocation, error) {
	keep := c.own(node, ni)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropReservation(uid) // a retry: release the previous attempt first
	inv, used, err := c.stateLocked(node, ni, keep)
	if err != nil {
		return rdma.Allocation{}, err
	}
	a, err := rdma.Allocate(inv, used, req)
	if err != nil {
		return rdma.Allocation{}, err
	}
	c.addReservation(uid, reservation{node: node, alloc: a})
	return a, nil
}

// unreserve releases a pod's reservation.
func (c *cluster) unreserve(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropReservation(uid)
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
