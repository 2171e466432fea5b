package rdmaplugin

import (
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kplan-dev/kplan/rdma"
)

// nodeCache is what is cached for one node, valid for one NodeInfo generation (the
// scheduler's view of the node's pods) until the plugin's own state of the node
// changes.
type nodeCache struct {
	gen  int64
	used *rdma.Used
	err  error
	// results are the answers per request key, searched in order: a node is asked
	// few different requests, and keys are interned (see Plugin.keys), so comparing
	// one is comparing two pointers. A slice of values keeps them in one block of
	// memory, which matters when the scheduler reads thousands of nodes per pod.
	results []keyedResult
}

// keyedResult is a result with its request's key.
type keyedResult struct {
	key string
	result
}

// lookup returns the entry's result for key, or nil.
func (e *nodeCache) lookup(key string) *result {
	for i := range e.results {
		if e.results[i].key == key {
			return &e.results[i].result
		}
	}
	return nil
}

// result is a cached Fits (and, once Score asked, Score) of one request on one node.
// A pointer to one is valid only while c.mu is held.
type result struct {
	fit      error
	scored   bool
	score    int64
	scoreErr error
}

// maxResults bounds the requests cached per node; past it the node's results are
// reset.
const maxResults = 16

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

// own reports whether ni is the node's own view (see isView); nil is.
func (c *cluster) own(node string, ni fwk.NodeInfo) bool {
	return ni == nil || c.isView == nil || c.isView(node, ni)
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
		if r := e.lookup(key); r != nil {
			fit := r.fit
			c.mu.RUnlock()
			return fit
		}
	}
	c.mu.RUnlock()
	keep := c.own(node, ni)
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.resultLocked(node, ni, keep, key, req)
	if err != nil {
		return err
	}
	return r.fit
}

// score is rdma.Score of req on node, cached like filter.
func (c *cluster) score(node string, ni fwk.NodeInfo, key string, req rdma.Request, opts rdma.ScoreOptions) (int64, error) {
	c.mu.RLock()
	if e := c.cached(node, ni); e != nil {
		if r := e.lookup(key); r != nil && r.scored {
			score, err := r.score, r.scoreErr
			c.mu.RUnlock()
			return score, err
		}
	}
	c.mu.RUnlock()
	keep := c.own(node, ni)
	c.mu.Lock()
	defer c.mu.Unlock()
	inv, e, err := c.entryLocked(node, ni, keep)
	if err != nil {
		return 0, err
	}
	r := e.result(inv, key, req)
	if !r.scored && e.err == nil {
		r.score, r.scoreErr = rdma.Score(inv, e.used, req, opts)
		r.scored = true
	}
	return r.score, r.scoreErr
}

func (c *cluster) resultLocked(node string, ni fwk.NodeInfo, keep bool, key string, req rdma.Request) (*result, error) {
	inv, e, err := c.entryLocked(node, ni, keep)
	if err != nil {
		return nil, err
	}
	return e.result(inv, key, req), nil
}

// result is the entry's answer for req (whose canonical encoding is key), computed
// when missing.
func (e *nodeCache) result(inv *rdma.Inventory, key string, req rdma.Request) *result {
	if e.err != nil {
		return &result{fit: e.err, scored: true, scoreErr: e.err}
	}
	if r := e.lookup(key); r != nil {
		return r
	}
	if len(e.results) >= maxResults {
		e.results = e.results[:0]
	}
	e.results = append(e.results, keyedResult{key: key, result: result{fit: rdma.Fits(inv, e.used, req)}})
	return &e.results[len(e.results)-1].result
}

// entryLocked returns the node's inventory and its cache entry for the view ni: the
// cached entry when it is valid for ni, else a new one, which replaces the node's
// entry only when keep (ni is the scheduler's own view of the node, see isView): a
// what-if copy gets an entry that is not kept.
func (c *cluster) entryLocked(node string, ni fwk.NodeInfo, keep bool) (*rdma.Inventory, *nodeCache, error) {
	inv, err := c.inventoryLocked(node)
	if err != nil {
		return nil, nil, err
	}
	if e := c.cached(node, ni); e != nil {
		return inv, e, nil
	}
	e := &nodeCache{gen: generation(ni)}
	e.used, e.err = c.usedLocked(node, ni)
	if keep {
		c.cache[node] = e
	}
	return inv, e, nil
}

// filterWhatIf is rdma.Fits of req on node as ni shows it, with the pods the
// scheduler's simulation added (nominated pods) each taking what rdma.Allocate gives
// it, in the order added (one that does not fit takes nothing). Uncached.
func (c *cluster) filterWhatIf(node string, ni fwk.NodeInfo, added []nominatedPod, req rdma.Request) error {
	keep := c.own(node, ni)
	c.mu.Lock()
	defer c.mu.Unlock()
	inv, used, err := c.stateLocked(node, ni, keep)
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
