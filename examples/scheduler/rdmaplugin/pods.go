package rdmaplugin

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/rdma"
)

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
		c.dropReservation(uid)
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
	c.dropReservation(uid)
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
