package operator_test

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// The tests whose pods a controller creates run testenv's kubelet in their
// namespace, so that pods live as on a node: bound BindDelay after creation,
// started (running, ready) a delay after the binding, a changed container
// restarted, and a deleted pod terminating for TerminateDelay before it is gone
// (its name taken meanwhile). These are the suite's delays; startMSKubelet sets the
// start and restart delay, and each delay is scaled by up to 1+Jitter.
var kubeletDefaults = testenv.KubeletOptions{
	BindDelay:      20 * time.Millisecond,
	StartDelay:     300 * time.Millisecond,
	RestartDelay:   300 * time.Millisecond,
	TerminateDelay: 500 * time.Millisecond,
	Jitter:         0.5,
}

// msKubelet is testenv's kubelet for one namespace.
type msKubelet struct {
	*testenv.Kubelet
	ns string
}

// startMSKubelet starts testenv's kubelet for namespace ns with the suite's delays,
// containers starting (and restarting) delay after their pod is bound (their image
// changed), jittered by a seed of the test's name; it stops when the test ends.
func startMSKubelet(t *testing.T, ns string, delay time.Duration) *msKubelet {
	t.Helper()
	opts := kubeletDefaults
	opts.Namespace = ns
	opts.StartDelay, opts.RestartDelay = delay, delay
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	opts.Seed = h.Sum64()
	k, err := testenv.StartKubelet(context.Background(), admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return &msKubelet{Kubelet: k, ns: ns}
}

// setReady replaces the rule that lets pods' containers start or restart: a pod
// f refuses stays pending, a refused restart keeps its container down.
func (k *msKubelet) setReady(f func(*corev1.Pod) bool) { k.SetAllow(f) }

// fail makes a pod's processes exit: phase Failed, not ready.
func (k *msKubelet) fail(t *testing.T, name string) {
	t.Helper()
	if err := k.Fail(context.Background(), k.ns, name); err != nil {
		t.Fatal(err)
	}
}
