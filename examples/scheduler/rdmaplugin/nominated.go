package rdmaplugin

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

// requestCache holds the requests of pods nominated to nodes, by UID and
// resourceVersion: the scheduler adds every nominated pod (AddPod) for every pod it
// filters on the pod's node, so a pod's request is decoded once, not on every call.
// A pod is forgotten once bound or deleted. Safe for concurrent use.
type requestCache struct {
	mu   sync.RWMutex
	pods map[types.UID]cachedRequest
}

type cachedRequest struct {
	version string
	req     rdma.Request
	ok      bool // false: the pod asks for nothing the plugin can give
}

// get returns the pod's request, and false when it asks for nothing the plugin can
// give (none, or one that does not decode or validate). A pod without a
// resourceVersion is decoded every time.
func (c *requestCache) get(pod *corev1.Pod, model rdma.CapacityModel) (rdma.Request, bool) {
	v := pod.ResourceVersion
	c.mu.RLock()
	e, hit := c.pods[pod.UID]
	c.mu.RUnlock()
	if hit && v != "" && e.version == v {
		return e.req, e.ok
	}
	req, err := rdma.RequestFromPod(pod, model)
	e = cachedRequest{version: v, req: req, ok: err == nil && !req.IsZero() && req.Validate() == nil}
	if v != "" {
		c.mu.Lock()
		if c.pods == nil {
			c.pods = map[types.UID]cachedRequest{}
		}
		c.pods[pod.UID] = e
		c.mu.Unlock()
	}
	return e.req, e.ok
}

// forget drops a pod's entry.
func (c *requestCache) forget(uid types.UID) {
	c.mu.RLock()
	_, hit := c.pods[uid]
	c.mu.RUnlock()
	if !hit {
		return
	}
	c.mu.Lock()
	delete(c.pods, uid)
	c.mu.Unlock()
}

// keyInterner gives one string per distinct request encoding, so that the per-node
// cache compares keys by pointer. It keeps at most maxKeys encodings; past that it
// returns new strings, which compare by content. Safe for concurrent use.
type keyInterner struct {
	mu   sync.RWMutex
	keys map[string]string
}

// maxKeys bounds the interned encodings (distinct requests in a cluster are few).
const maxKeys = 4096

func (k *keyInterner) intern(b []byte) string {
	k.mu.RLock()
	s, ok := k.keys[string(b)] // no allocation for the lookup
	k.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	k.mu.Lock()
	defer k.mu.Unlock()
	if prev, ok := k.keys[s]; ok {
		return prev
	}
	if len(k.keys) < maxKeys {
		if k.keys == nil {
			k.keys = map[string]string{}
		}
		k.keys[s] = s
	}
	return s
}
