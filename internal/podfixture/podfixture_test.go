package podfixture

import (
	"slices"
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

func TestRecordChangesListsItemsThatDiffer(t *testing.T) {
	const key = "kplan.dev/injected"
	pod := func(record string) *corev1.Pod {
		p := &corev1.Pod{}
		if record != "" {
			p.Annotations = map[string]string{key: record}
		}
		return p
	}
	tests := []struct {
		name   string
		a, b   string
		want   []string
		broken bool
	}{
		{"no records differ in nothing", "", "", nil, false},
		{"an added item is listed", "", `{"x":{"volume/v":"1"}}`, []string{"volume/v"}, false},
		{"a removed item is listed", `{"x":{"volume/v":"1"}}`, `{"x":{}}`, []string{"volume/v"}, false},
		{"a changed hash is listed, equal ones are not", `{"x":{"a":"1","b":"2"}}`, `{"x":{"a":"1","b":"3"}}`, []string{"b"}, false},
		{"another injector's items are not listed", `{"y":{"a":"1"}}`, `{"y":{"a":"2"}}`, nil, false},
		{"a record that does not decode is an error", `{`, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RecordChanges(pod(tt.a), pod(tt.b), key, "x")
			if (err != nil) != tt.broken {
				t.Fatalf("error %v, want error %t", err, tt.broken)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
