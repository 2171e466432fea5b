package revision

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchPods returns n pods in a fixed shuffled order, spread over revs: pod i wants
// and runs revs[i%len(revs)]; every tenth pod is not ready.
func benchPods(n int, revs []string) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		r := revs[i%len(revs)]
		pods[i] = revPod(fmt.Sprintf("pod-%05d", i), r, r, i%10 != 0)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(n, func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	return pods
}

// benchPlanInput is a rollout in progress: a hub of `revisions` revisions, the newest
// being spec.data, the one before it current; pods spread evenly over the old
// revisions; 20% partition, so most pods must move to the update revision.
func benchPlanInput(b testing.TB, pods, revisions int) Input {
	var datas []map[string]string
	for i := range revisions {
		datas = append(datas, data(fmt.Sprint(i)))
	}
	hub, names := hubOf(b, datas...)
	set := newSet(datas[revisions-1], partition(intstr.FromString("20%")))
	set.Status.CurrentRevision = names[revisions-2]
	set.Status.UpdateRevision = names[revisions-1]
	return Input{Set: set, Hub: hub, Pods: benchPods(pods, names[:revisions-1]), Now: now}
}

// BenchmarkPlan plans one reconcile of 10000 pods: read every pod's annotations, sort,
// pick 8000 pods for the update in priority order, build their patches, trim, count.
func BenchmarkPlan(b *testing.B) {
	for _, c := range []struct{ pods, revisions int }{{10000, 5}} {
		in := benchPlanInput(b, c.pods, c.revisions)
		b.Run(fmt.Sprintf("pods=%d,revisions=%d", c.pods, c.revisions), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Plan(in)
				if err != nil || len(res.Pods) == 0 {
					b.Fatal(err, len(res.Pods))
				}
			}
		})
	}
}

// BenchmarkSortFloor is the floor Plan is measured against: only sorting the same
// 10000 pods (same shuffled order) by namespace and name.
func BenchmarkSortFloor(b *testing.B) {
	for _, n := range []int{10000} {
		pods := benchPods(n, []string{"r"})
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]*corev1.Pod, n)
			for b.Loop() {
				copy(buf, pods)
				slices.SortFunc(buf, func(a, b *corev1.Pod) int {
					return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
				})
			}
		})
	}
}

// TestBenchmarkScenario checks the benchmark plans what its comment says.
func TestBenchmarkScenario(t *testing.T) {
	in := benchPlanInput(t, 1000, 5)
	res := mustPlan(t, in)
	if len(res.Pods) != 800 || len(res.Revisions) != 5 || res.Status.MatchedPods != 1000 {
		t.Errorf("%d patches, revisions %v, status %+v", len(res.Pods), res.Revisions, res.Status)
	}
}
