package podfixture

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPod(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := Pod("ns", "p-0",
		Labels("a", "1", "b", "2"),
		Annotation("k", "v"),
		Containers("main", "side"),
		InitContainers("init"),
		Node("n1"), IP("10.0.0.1"),
		Owner("apps/v1", "StatefulSet", "web", "uid-web"),
		NotReady(), ReadySince(at),
		Created(at), Deleting(at.Add(time.Minute)))

	if p.Namespace != "ns" || p.Name != "p-0" || p.UID != "uid-ns-p-0" {
		t.Errorf("identity: %s/%s %s", p.Namespace, p.Name, p.UID)
	}
	if p.Labels["a"] != "1" || p.Labels["b"] != "2" || p.Annotations["k"] != "v" {
		t.Errorf("metadata: %v %v", p.Labels, p.Annotations)
	}
	if len(p.Spec.Containers) != 2 || p.Spec.Containers[1].Name != "side" || p.Spec.InitContainers[0].Name != "init" {
		t.Errorf("containers: %+v", p.Spec)
	}
	if p.Spec.NodeName != "n1" || p.Status.PodIP != "10.0.0.1" || len(p.Status.PodIPs) != 1 {
		t.Errorf("placement: %q %q", p.Spec.NodeName, p.Status.PodIP)
	}
	if len(p.OwnerReferences) != 1 || !*p.OwnerReferences[0].Controller {
		t.Errorf("owner: %+v", p.OwnerReferences)
	}
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != corev1.ConditionTrue ||
		!p.Status.Conditions[0].LastTransitionTime.Time.Equal(at) {
		t.Errorf("the later readiness option must replace the earlier: %+v", p.Status.Conditions)
	}
	if !p.CreationTimestamp.Time.Equal(at) || p.DeletionTimestamp == nil {
		t.Errorf("timestamps: %v %v", p.CreationTimestamp, p.DeletionTimestamp)
	}
}
