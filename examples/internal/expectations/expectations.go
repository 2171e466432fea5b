package expectations

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// Expectations remembers, per owner, the pods the controller created, deleted or
// updated in place that its cache has not shown yet. It is safe for concurrent use.
type Expectations struct {
	mu      sync.Mutex
	pending map[types.UID]*pendingWrites
	// timeout drops expectations the cache never met (the object was created and
	// deleted by someone else before the cache saw it).
	timeout time.Duration
}

type pendingWrites struct {
	creates map[types.UID]bool // created pods, until the cache lists them
	deletes map[types.UID]bool // deleted pods, until the cache drops or marks them
	// updates maps pods updated in place to their new revision, until the cache
	// shows the pod with that revision label (or drops it).
	updates map[types.UID]string
	// annotations maps pods whose annotation the controller set to the key and
	// value, until the cache shows the pod with it (or drops it).
	annotations map[types.UID][2]string
	since       time.Time
}

// New returns empty expectations that are dropped after timeout.
func New(timeout time.Duration) *Expectations {
	return &Expectations{pending: map[types.UID]*pendingWrites{}, timeout: timeout}
}

func (e *Expectations) entry(owner types.UID, now time.Time) *pendingWrites {
	p := e.pending[owner]
	if p == nil {
		p = &pendingWrites{creates: map[types.UID]bool{}, deletes: map[types.UID]bool{}, updates: map[types.UID]string{}, annotations: map[types.UID][2]string{}}
		e.pending[owner] = p
	}
	if p.empty() {
		p.since = now
	}
	return p
}

// Created records a pod the controller created.
func (e *Expectations) Created(owner, pod types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner, now).creates[pod] = true
}

// Deleted records a pod the controller deleted.
func (e *Expectations) Deleted(owner, pod types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner, now).deletes[pod] = true
}

// Updated records a pod the controller moved to revision rev in place (its
// servingv1.LabelRevision).
func (e *Expectations) Updated(owner, pod types.UID, rev string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner, now).updates[pod] = rev
}

// Annotated records a pod whose annotation key the controller set to value.
func (e *Expectations) Annotated(owner, pod types.UID, key, value string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner, now).annotations[pod] = [2]string{key, value}
}

func (p *pendingWrites) empty() bool {
	return len(p.creates) == 0 && len(p.deletes) == 0 && len(p.updates) == 0 && len(p.annotations) == 0
}

// Satisfied reports whether the cache's pods of owner show every write the
// controller made, forgetting those it shows; expectations older than the
// timeout are dropped.
func (e *Expectations) Satisfied(owner types.UID, pods []*corev1.Pod, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pending[owner]
	if p == nil {
		return true
	}
	live := make(map[types.UID]bool, len(pods))
	revs := make(map[types.UID]string, len(pods))
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, pod := range pods {
		live[pod.UID] = pod.DeletionTimestamp == nil
		revs[pod.UID] = pod.Labels[servingv1.LabelRevision]
		byUID[pod.UID] = pod
	}
	for uid, kv := range p.annotations {
		if pod, ok := byUID[uid]; !ok || !live[uid] || pod.Annotations[kv[0]] == kv[1] {
			delete(p.annotations, uid)
		}
	}
	for uid := range p.creates {
		if _, ok := live[uid]; ok {
			delete(p.creates, uid)
		}
	}
	for uid := range p.deletes {
		if alive := live[uid]; !alive {
			delete(p.deletes, uid)
		}
	}
	for uid, rev := range p.updates {
		if got, ok := revs[uid]; !ok || !live[uid] || got == rev {
			delete(p.updates, uid)
		}
	}
	if p.empty() {
		delete(e.pending, owner)
		return true
	}
	if now.Sub(p.since) > e.timeout {
		delete(e.pending, owner)
		return true
	}
	return false
}
