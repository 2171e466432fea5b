package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// kubeletDelays are the test kubelet's latencies: binding 20 ms, containers start
// 300 ms after binding, a deleted pod is gone 300 ms later, each scaled by up to
// 1.5.
var kubeletDelays = testenv.KubeletOptions{
	BindDelay:      20 * time.Millisecond,
	StartDelay:     300 * time.Millisecond,
	RestartDelay:   300 * time.Millisecond,
	TerminateDelay: 300 * time.Millisecond,
	Jitter:         0.5,
}

// kubelets are the namespaces' kubelets, by namespace.
var kubelets sync.Map

// newNamespace creates a namespace with a kubelet for its pods, both gone at the
// end of the test.
func newNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	ns, err := cluster.CreateNamespace(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	opts := kubeletDelays
	opts.Namespace = ns
	opts.Seed = uint64(len(t.Name()))
	k, err := testenv.StartKubelet(ctx, cluster.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	kubelets.Store(ns, k)
	return ns
}

// lwsObject is a LeaderWorkerSet of replicas groups of size pods running image,
// with the rolling update configuration ru (nil: LWS's defaults).
func lwsObject(ns, name string, replicas, size int, image string, ru map[string]any) *unstructured.Unstructured {
	spec := map[string]any{
		"replicas": int64(replicas),
		"leaderWorkerTemplate": map[string]any{
			"size":           int64(size),
			"workerTemplate": podTemplate(image),
		},
	}
	if ru != nil {
		spec["rolloutStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdateConfiguration": ru}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	u.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK)
	return u
}

// podTemplate is a pod template of one container running image, stopped at once
// when deleted.
func podTemplate(image string) map[string]any {
	return map[string]any{"spec": map[string]any{
		"terminationGracePeriodSeconds": int64(1),
		"containers":                    []any{map[string]any{"name": "main", "image": image}},
	}}
}

// listPods returns the pods of a namespace matching labels, sorted by name.
func listPods(ctx context.Context, ns string, labels client.MatchingLabels) ([]corev1.Pod, error) {
	var l corev1.PodList
	if err := cluster.Client.List(ctx, &l, client.InNamespace(ns), labels); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

// listStatefulSets returns the StatefulSets of a namespace, sorted by name.
func listStatefulSets(ctx context.Context, ns string) ([]appsv1.StatefulSet, error) {
	var l appsv1.StatefulSetList
	if err := cluster.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b appsv1.StatefulSet) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

// podReady reports whether a pod is Running, Ready and not being deleted.
func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// eventually polls cond every 50 ms until it reports done, failing the test with
// its last message after timeout.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var msg string
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		done, m, err := cond(ctx)
		msg = m
		return done, err
	})
	if err != nil {
		t.Fatalf("%s: %v; last: %s", what, err, msg)
	}
}

// waitPodsReady waits until the pods the labels select in ns are n, every one of
// them Ready, and returns them; a timeout's message lists them with the given
// labels.
func waitPodsReady(t *testing.T, ctx context.Context, ns string, sel client.MatchingLabels, n int, describe ...string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, ctx, 60*time.Second, fmt.Sprintf("%d pods Running and Ready", n), func(ctx context.Context) (bool, string, error) {
		var err error
		if pods, err = listPods(ctx, ns, sel); err != nil {
			return false, "", err
		}
		ready := 0
		for i := range pods {
			if podReady(&pods[i]) {
				ready++
			}
		}
		return len(pods) == n && ready == n, describePods(pods, describe...), nil
	})
	return pods
}

// describePods is one line per pod: name, phase, ready, and the given labels.
func describePods(pods []corev1.Pod, labels ...string) string {
	var b strings.Builder
	for i := range pods {
		p := &pods[i]
		fmt.Fprintf(&b, "\n  %s %s ready=%t", p.Name, p.Status.Phase, podReady(p))
		for _, l := range labels {
			fmt.Fprintf(&b, " %s=%s", l[strings.LastIndex(l, "/")+1:], p.Labels[l])
		}
	}
	return b.String()
}
