package testenv

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultNode is the node a Kubelet binds pods to when KubeletOptions.Node is empty.
const DefaultNode = "kplan-test-node"

// DefaultKubeletPoll is how often a Kubelet lists pods when KubeletOptions.Poll is 0.
const DefaultKubeletPoll = 25 * time.Millisecond

// KubeletOptions configure StartKubelet. Every delay is measured on the kubelet's
// clock from the moment it observes the event (it polls, see Poll), and scaled by
// a factor in [1, 1+Jitter) drawn from Seed; zero means at the next poll.
type KubeletOptions struct {
	// Namespace limits the kubelet to the pods of one namespace ("" = all).
	Namespace string
	// Node is the node the pods are bound to and run on (default DefaultNode). The
	// Node object is created, Ready, when missing.
	Node string
	// BindDelay is the scheduling latency: an unbound pod is bound to Node (through
	// the pods/binding subresource, as the scheduler does) this long after the
	// kubelet first saw it.
	BindDelay time.Duration
	// NoBind leaves unbound pods to a scheduler: the kubelet runs only the pods
	// bound to Node (one kubelet per node of a real scheduler's cluster).
	NoBind bool
	// StartDelay: a bound pod's containers start (running, ready) this long after
	// the binding.
	StartDelay time.Duration
	// RestartDelay: a container whose image in the spec changed (or that is not
	// running in a running pod) is stopped at once and runs the spec's image this
	// long later.
	RestartDelay time.Duration
	// TerminateDelay: a pod being deleted stops serving at once (not ready) and is
	// removed min(TerminateDelay, its deletion grace period) after the kubelet saw
	// its deletionTimestamp.
	TerminateDelay time.Duration
	// Jitter scales each delay by a factor in [1, 1+Jitter).
	Jitter float64
	// Seed makes the factors deterministic: each is drawn from Seed and the pod's
	// namespace, name and event, so a rerun with the same seed waits as long.
	Seed uint64
	// Allow decides whether a pod's containers may start or restart; a pod it
	// refuses stays pending (or its restarting containers stay down). nil allows
	// every pod. SetAllow replaces it.
	Allow func(*corev1.Pod) bool
	// ResizeInfeasible decides whether the node refuses a running pod's
	// in-place resize (its containers' spec resources changed through the
	// pod's resize subresource): such a pod reports PodResizePending with
	// reason Infeasible and keeps running with the resources it had. nil
	// accepts every resize. SetResizeInfeasible replaces it.
	ResizeInfeasible func(*corev1.Pod) bool
	// Poll is how often pods are listed (default DefaultKubeletPoll).
	Poll time.Duration
}

// Kubelet plays a node's kubelet (and the scheduler for the pods nobody binds) on a
// real API server, so that pods live as they do in a cluster:
//
//   - An unbound pod is bound to the node BindDelay after it appears (unless
//     NoBind, or while it has scheduling gates); the binding sets PodScheduled.
//     Pods bound to another node are left alone.
//   - A bound pod reports phase Pending, its containers waiting, until StartDelay
//     after the binding (and while Allow refuses it); then its init containers have
//     completed (native sidecars, restartPolicy Always, run beside the containers),
//     every container runs and is ready, and the phase is Running.
//   - A container whose spec image changes is stopped (not ready, waiting, still
//     reporting the image it ran) and runs the new image RestartDelay later, with
//     an image ID derived from the image and its restart count raised.
//   - A running container whose spec resources change (through the pod's resize
//     subresource) is resized in place, as a kubelet since Kubernetes 1.33
//     does: the pod reports PodResizeInProgress and the container's
//     allocatedResources at once, and RestartDelay later the container's
//     status resources are the spec's and the condition is gone. A container
//     whose resizePolicy is RestartContainer for a changed resource is stopped
//     when the resize begins and restarted as for a new image (restart count
//     raised). A resize ResizeInfeasible refuses reports PodResizePending with
//     reason Infeasible instead, and nothing changes. Running containers
//     always report status resources (the API server refuses a resize of a
//     pod whose running containers report none).
//   - Conditions: PodScheduled, Initialized, ContainersReady, and Ready = every
//     container ready and every spec.readinessGates condition True. Conditions
//     other writers own (a readiness gate's) are kept: status is written with an
//     update that the API server refuses when the pod changed since it was read
//     (retried at the next poll). LastTransitionTime changes only on transitions.
//   - A pod being deleted stops serving at once (containers and pod not ready) and
//     after min(TerminateDelay, grace period) its containers have exited (code 0),
//     its phase is Succeeded, and the kubelet deletes it with grace period 0 and a
//     UID precondition, as a kubelet does. Until then the pod exists: creating
//     another pod of its name fails with AlreadyExists.
//   - Fail makes a pod's processes exit (phase Failed); a pod in a terminal phase is
//     never restarted. LoseNode stops the kubelet and marks its pods NodeLost.
//
// Delays are deadlines on the wall clock, not counts of polls: on a slow machine
// things happen later, never earlier. Run one Kubelet per node and namespace.
type Kubelet struct {
	c    client.Client
	opts KubeletOptions

	mu         sync.Mutex
	allow      func(*corev1.Pod) bool
	infeasible func(*corev1.Pod) bool

	// pods holds what the kubelet saw of each pod (by UID); only its goroutine
	// touches it.
	pods map[types.UID]*podTimes

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// podTimes is what the kubelet remembers of a pod: when it saw each event, from
// which the deadlines follow.
type podTimes struct {
	seen     time.Time            // first listed
	bound    time.Time            // bound by the kubelet, or first seen bound
	deleting time.Time            // first seen with a deletionTimestamp
	restarts map[string]time.Time // container "name@image" -> when its restart began
	// resizing: when the resize to the spec's resources resizeTo began (zero
	// when none is under way).
	resizing time.Time
	resizeTo string
	// resizeRestarts: the restart counts, when the resize began, of the
	// containers it changes.
	resizeRestarts map[string]int32
	removed        bool // deleted with grace period 0
}

// StartKubelet creates the node if missing and starts the kubelet's goroutine; it
// runs until Stop is called or ctx is done. c should read from the API server, not
// from a cache.
func StartKubelet(ctx context.Context, c client.Client, opts KubeletOptions) (*Kubelet, error) {
	if opts.Node == "" {
		opts.Node = DefaultNode
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultKubeletPoll
	}
	if opts.Jitter < 0 {
		return nil, fmt.Errorf("testenv: kubelet jitter %v is negative", opts.Jitter)
	}
	if err := ensureNode(ctx, c, opts.Node); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kubelet{c: c, opts: opts, allow: opts.Allow, infeasible: opts.ResizeInfeasible, pods: map[types.UID]*podTimes{}, cancel: cancel, done: make(chan struct{})}
	go k.run(ctx)
	return k, nil
}

// Stop stops the kubelet and waits for its goroutine. Pods keep the status they
// have; pods deleted later stay terminating. Stop may be called more than once.
func (k *Kubelet) Stop() {
	k.once.Do(k.cancel)
	<-k.done
}

// Node is the name of the kubelet's node.
func (k *Kubelet) Node() string { return k.opts.Node }

// SetAllow replaces the rule that lets pods' containers start (nil: every pod).
// It does not stop containers already running.
func (k *Kubelet) SetAllow(f func(*corev1.Pod) bool) {
	k.mu.Lock()
	k.allow = f
	k.mu.Unlock()
}

func (k *Kubelet) allowed(p *corev1.Pod) bool {
	k.mu.Lock()
	f := k.allow
	k.mu.Unlock()
	return f == nil || f(p)
}

// failBackoff retries a status write that conflicts with other writers.
var failBackoff = wait.Backoff{Steps: 30, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Cap: time.Second}

// Fail makes the processes of a pod exit with an error, as when a container dies
// or its node kills it: phase Failed, every running container terminated with exit
// code 1, the pod not ready. The kubelet never restarts it. The pod must be on the
// kubelet's node or unbound.
func (k *Kubelet) Fail(ctx context.Context, namespace, name string) error {
	err := retry.RetryOnConflict(failBackoff, func() error {
		var p corev1.Pod
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			return err
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != k.opts.Node {
			return fmt.Errorf("pod runs on node %s, not %s", p.Spec.NodeName, k.opts.Node)
		}
		p.Status = exitedStatus(&p, time.Now(), corev1.PodFailed, 1, "Error")
		return k.c.Status().Update(ctx, &p)
	})
	if err != nil {
		return fmt.Errorf("testenv: kubelet: failing pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// LoseNode plays the node going away: the kubelet stops (as Stop) and each pod
// it ran (of its namespace, on its node, not already terminal) is marked as the
// node lifecycle controller marks a lost node's pods: phase Failed, reason
// NodeLost, nothing ready. Being Failed, such a pod is deleted at once. The Node
// object is left as it is: other kubelets may share it.
func (k *Kubelet) LoseNode(ctx context.Context) error {
	k.Stop()
	var list corev1.PodList
	var opts []client.ListOption
	if k.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(k.opts.Namespace))
	}
	if err := k.c.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("testenv: kubelet: losing node %s: %w", k.opts.Node, err)
	}
	for _, p := range list.Items {
		if p.Spec.NodeName != k.opts.Node || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		err := retry.RetryOnConflict(failBackoff, func() error {
			if err := k.c.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
				return err
			}
			p.Status = exitedStatus(&p, time.Now(), corev1.PodFailed, 137, "NodeLost")
			p.Status.Reason = "NodeLost"
			p.Status.Message = fmt.Sprintf("Node %s which was running pod %s is unresponsive", k.opts.Node, p.Name)
			return k.c.Status().Update(ctx, &p)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("testenv: kubelet: losing node %s: pod %s/%s: %w", k.opts.Node, p.Namespace, p.Name, err)
		}
	}
	return nil
}

func (k *Kubelet) run(ctx context.Context) {
	defer close(k.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.syncAll(ctx)
		t.Reset(k.opts.Poll)
	}
}

// syncAll lists the pods and moves each one step towards what the kubelet wants
// of it. Errors (a conflict, a pod deleted meanwhile) are left to the next poll.
func (k *Kubelet) syncAll(ctx context.Context) {
	var list corev1.PodList
	var opts []client.ListOption
	if k.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(k.opts.Namespace))
	}
	if err := k.c.List(ctx, &list, opts...); err != nil {
		return
	}
	listed := map[types.UID]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != "" && p.Spec.NodeName != k.opts.Node {
			continue
		}
		listed[p.UID] = true
		if ctx.Err() != nil {
			return
		}
		k.syncPod(ctx, p, time.Now())
	}
	for uid := range k.pods {
		if !listed[uid] {
			delete(k.pods, uid)
		}
	}
}

func (k *Kubelet) syncPod(ctx context.Context, p *corev1.Pod, now time.Time) {
	st := k.pods[p.UID]
	if st == nil {
		st = &podTimes{seen: now, restarts: map[string]time.Time{}}
		k.pods[p.UID] = st
	}
	if p.Spec.NodeName == "" {
		if !k.opts.NoBind && p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0 && !now.Before(st.seen.Add(k.delay(p, "bind", k.opts.BindDelay))) {
			if err := k.bind(ctx, p); err == nil {
				st.bound = time.Now()
			}
		}
		return
	}
	if st.bound.IsZero() {
		st.bound = now
	}
	if p.DeletionTimestamp != nil {
		k.terminate(ctx, p, st, now)
		return
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return
	}
	want := k.liveStatus(p, st, now)
	if !equality.Semantic.DeepEqual(&p.Status, want) {
		p.Status = *want
		_ = k.c.Status().Update(ctx, p)
	}
}

// bind binds the pod to the node as the scheduler does.
func (k *Kubelet) bind(ctx context.Context, p *corev1.Pod) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.opts.Node},
	}
	return k.c.SubResource("binding").Create(ctx, p, b)
}

// terminate stops a pod being deleted and removes it once its time is up.
func (k *Kubelet) terminate(ctx context.Context, p *corev1.Pod, st *podTimes, now time.Time) {
	if st.removed {
		return
	}
	if st.deleting.IsZero() {
		st.deleting = now
	}
	grace := time.Duration(0)
	if s := p.DeletionGracePeriodSeconds; s != nil {
		grace = time.Duration(*s) * time.Second
	}
	var want *corev1.PodStatus
	done := !now.Before(st.deleting.Add(min(k.delay(p, "terminate", k.opts.TerminateDelay), grace)))
	switch {
	case !done:
		want = stoppingStatus(p, now)
	case p.Status.Phase == corev1.PodRunning:
		s := exitedStatus(p, now, corev1.PodSucceeded, 0, "Completed")
		want = &s
	}
	if want != nil && !equality.Semantic.DeepEqual(&p.Status, want) {
		p.Status = *want
		if err := k.c.Status().Update(ctx, p); err != nil || !done {
			return
		}
	}
	if !done {
		return
	}
	// A conflict is the UID precondition failing: the name holds another pod.
	err := k.c.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
	st.removed = err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// delay is d scaled by the jitter factor of the pod's event.
func (k *Kubelet) delay(p *corev1.Pod, event string, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if k.opts.Jitter == 0 {
		return d
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%s", p.Namespace, p.Name, event)
	r := rand.New(rand.NewPCG(k.opts.Seed, h.Sum64()))
	return time.Duration(float64(d) * (1 + k.opts.Jitter*r.Float64()))
}
