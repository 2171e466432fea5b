package testenv

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ensureNode creates the kubelet's Node when it is missing and makes it Ready and
// schedulable, as the kubelet and the node lifecycle controller would: the API
// server's admission taints a new node not-ready, and no controller runs on envtest
// to lift the taint. Several kubelets may ensure one node concurrently.
func ensureNode(ctx context.Context, c client.Client, name string) error {
	ip := nodeIP(name)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testenv: kubelet: creating node %s: %w", name, err)
	}
	err := retry.RetryOnConflict(failBackoff, func() error {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		notReady := func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
		}
		if slices.ContainsFunc(n.Spec.Taints, notReady) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, notReady)
			if err := c.Update(ctx, &n); err != nil {
				return err
			}
		}
		if i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }); i >= 0 && n.Status.Conditions[i].Status == corev1.ConditionTrue {
			return nil
		}
		now := metav1.NewTime(time.Now())
		n.Status.Conditions = append(slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }),
			corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now})
		if n.Status.Capacity == nil {
			n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		}
		if len(n.Status.Addresses) == 0 {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
		}
		return c.Status().Update(ctx, &n)
	})
	if err != nil {
		return fmt.Errorf("testenv: kubelet: making node %s ready: %w", name, err)
	}
	return nil
}

// nodeIP is the node's address: 10.255.x.y from a hash of its name.
func nodeIP(node string) string {
	h := fnv.New32a()
	h.Write([]byte(node))
	v := h.Sum32()
	return fmt.Sprintf("10.255.%d.%d", v>>8%256, v%254+1)
}
