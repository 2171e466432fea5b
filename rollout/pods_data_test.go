package rollout_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/rollout"
)

func TestFromPodsReadsDataRevisions(t *testing.T) {
	pod := func(name, gang, data string) *corev1.Pod {
		labels := []string{revLabel, "1-a", "index", data}
		if gang != "" {
			labels = append(labels, "gang", gang)
		}
		return podfixture.Pod("default", name, podfixture.Ready(), podfixture.Labels(labels...))
	}
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		labels rollout.PodLabels
		want   []string // each replica's DataRevision, in name order
	}{
		{"single pods carry their label", []*corev1.Pod{pod("w-0", "", "d1"), pod("w-1", "", "d2")},
			rollout.PodLabels{Revision: revLabel, DataRevision: "index"}, []string{"d1", "d2"}},
		{"without the option no data revision is read", []*corev1.Pod{pod("w-0", "", "d1")},
			rollout.PodLabels{Revision: revLabel}, []string{""}},
		{"a gang whose pods agree serves their data", []*corev1.Pod{pod("g-0", "g", "d2"), pod("g-1", "g", "d2")},
			rollout.PodLabels{Revision: revLabel, Gang: "gang", DataRevision: "index"}, []string{"d2"}},
		{"a gang whose pods differ serves none, in any order", []*corev1.Pod{pod("g-1", "g", "d2"), pod("g-0", "g", "d1"), pod("g-2", "g", "d2")},
			rollout.PodLabels{Revision: revLabel, Gang: "gang", DataRevision: "index"}, []string{""}},
		{"a gang whose first pod differs serves none", []*corev1.Pod{pod("g-0", "g", "d1"), pod("g-1", "g", "d2"), pod("g-2", "g", "d2")},
			rollout.PodLabels{Revision: revLabel, Gang: "gang", DataRevision: "index"}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := rollout.FromPods(tt.pods, rollout.PodOptions{Labels: tt.labels})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != len(tt.want) {
				t.Fatalf("%d replicas, want %d", len(rs), len(tt.want))
			}
			for i, r := range rs {
				if r.DataRevision != tt.want[i] {
					t.Fatalf("replica %s serves %q, want %q", r.Name, r.DataRevision, tt.want[i])
				}
			}
		})
	}
}
