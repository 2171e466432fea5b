package rollout_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/rollout"
)

const revLabel = "controller-revision-hash"

func TestFromPodsState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	base := func(opts ...podfixture.Option) *corev1.Pod {
		return podfixture.Pod("default", "web-0", append([]podfixture.Option{podfixture.Labels(revLabel, "1-a")}, opts...)...)
	}
	withStatus := func(f func(*corev1.Pod)) podfixture.Option { return podfixture.Option(f) }
	tests := []struct {
		name string
		pod  *corev1.Pod
		opts rollout.PodOptions
		want func(rollout.State) bool
	}{
		{"a ready pod is ready, available and healthy", base(podfixture.Ready()), rollout.PodOptions{},
			func(s rollout.State) bool { return s.Ready && s.Available && s.Healthy && !s.Failed }},
		// ready 10s ago, minReadySeconds 30: 10 < 30, not yet available.
		{"a pod ready for less than minReadySeconds is not available", base(podfixture.ReadySince(now.Add(-10 * time.Second))),
			rollout.PodOptions{MinReadySeconds: 30, Now: now},
			func(s rollout.State) bool { return s.Ready && !s.Available }},
		// ready 40s ago, minReadySeconds 30: 40 >= 30, available.
		{"a pod ready for longer than minReadySeconds is available", base(podfixture.ReadySince(now.Add(-40 * time.Second))),
			rollout.PodOptions{MinReadySeconds: 30, Now: now},
			func(s rollout.State) bool {
				return s.Ready && s.Available && s.ReadySince.Equal(now.Add(-40*time.Second))
			}},
		{"a pod in CrashLoopBackOff is not healthy", base(withStatus(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		})), rollout.PodOptions{}, func(s rollout.State) bool { return !s.Healthy }},
		{"a pod whose process exited has failed", base(withStatus(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })),
			rollout.PodOptions{}, func(s rollout.State) bool { return s.Failed }},
		{"a pod on a lost node is lost", base(withStatus(func(p *corev1.Pod) { p.Status.Reason = "NodeLost" })),
			rollout.PodOptions{}, func(s rollout.State) bool { return s.Lost }},
		{"a deleted pod is terminating", base(podfixture.Deleting(now)), rollout.PodOptions{},
			func(s rollout.State) bool { return s.Terminating }},
		{"an unready pod is unready since its creation", base(podfixture.Created(now), podfixture.NotReady()), rollout.PodOptions{},
			func(s rollout.State) bool { return !s.Ready && !s.UnreadySince.IsZero() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			rs, err := rollout.FromPods([]*corev1.Pod{tt.pod}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Name != "web-0" || rs[0].Revision != "1-a" || !tt.want(rs[0].State) {
				t.Fatalf("got %+v", rs)
			}
			if !equality.Semantic.DeepEqual(before, tt.pod) {
				t.Fatal("FromPods modified the pod")
			}
		})
	}
}

func TestFromPodsGangs(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name, gang, rev string) *corev1.Pod {
		return podfixture.Pod("default", name, podfixture.Ready(),
			podfixture.Labels(revLabel, rev, "gang", gang),
			podfixture.Annotation(rollout.DeletionCostAnnotation, "7"))
	}
	opts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}, GangSize: 3,
		MissingSince: map[string]time.Time{"g": since}}
	rs, err := rollout.FromPods([]*corev1.Pod{pod("g-1", "g", "2-b"), pod("g-0", "g", "1-a"), pod("g-2", "g", "2-b")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the gang runs its majority revision", func(t *testing.T) {
		if rs[0].Revision != "2-b" || rs[0].Members[0].Revision != "1-a" {
			t.Fatalf("got gang %s, members %+v", rs[0].Revision, rs[0].Members)
		}
		if rs[0].Effective().Available {
			t.Fatal("a gang whose members run two revisions is available")
		}
	})
	t.Run("members are in natural order and deletion cost is read", func(t *testing.T) {
		if rs[0].Members[0].Name != "g-0" || rs[0].DeletionCost != 7 {
			t.Fatalf("got %+v", rs[0])
		}
	})
	t.Run("a missing fourth member is added with the caller's missing time", func(t *testing.T) {
		opts := opts
		opts.GangSize = 4
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-0", "g", "1-a")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := rs[0].Members
		if len(m) != 4 || !m[3].Missing || !m[3].State.UnreadySince.Equal(since) || rs[0].Effective().Ready {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("a tie between revisions goes to the newer one", func(t *testing.T) {
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-0", "g", "1-a"), pod("g-1", "g", "2-b")}, opts)
		if err != nil || rs[0].Revision != "2-b" {
			t.Fatalf("got %+v, %v", rs, err)
		}
	})
	t.Run("a gang being recreated runs the revision of its pods that are not terminating", func(t *testing.T) {
		// Two old pods are still going away; the one recreated runs 2-b. Counting
		// the old pods would make the gang a half-updated 1-a gang, which Plan
		// would finish at 1-a.
		going := func(p *corev1.Pod) *corev1.Pod { podfixture.Deleting(since)(p); return p }
		rs, err := rollout.FromPods([]*corev1.Pod{going(pod("g-0", "g", "1-a")), going(pod("g-1", "g", "1-a")), pod("g-2", "g", "2-b")}, opts)
		if err != nil || rs[0].Revision != "2-b" {
			t.Fatalf("got %+v, %v", rs, err)
		}
		if s := rs[0].Effective(); s.Available || s.Terminating {
			t.Fatalf("a gang with terminating members: %+v, want neither available nor terminating", s)
		}
		rs, err = rollout.FromPods([]*corev1.Pod{going(pod("g-0", "g", "1-a")), going(pod("g-1", "g", "1-a")), going(pod("g-2", "g", "2-b"))}, opts)
		if err != nil || rs[0].Revision != "1-a" || !rs[0].Effective().Terminating {
			t.Fatalf("a gang whose pods are all terminating: got %+v, %v; want 1-a and terminating", rs, err)
		}
	})
	t.Run("Plan repairs the missing placeholders by name", func(t *testing.T) {
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-0", "g", "2-b"), pod("g-1", "g", "2-b")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := []rollout.Repair{{Replica: "g", Revision: "2-b", Members: []string{"g-missing-2"}}}
		if !equality.Semantic.DeepEqual(step.Repair, want) {
			t.Fatalf("repair %+v, want %+v", step.Repair, want)
		}
	})
}

func TestFromPodsRejectsBadInput(t *testing.T) {
	good := podfixture.Pod("default", "web-0", podfixture.Labels(revLabel, "1-a"))
	gangPod := func(name, gang string) *corev1.Pod {
		return podfixture.Pod("default", name, podfixture.Labels(revLabel, "1", "gang", gang))
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		opts rollout.PodOptions
		want string
	}{
		{"nil pods are counted", []*corev1.Pod{nil}, rollout.PodOptions{}, "pods: 1 are nil"},
		{"a pod without a revision label is named", []*corev1.Pod{podfixture.Pod("default", "web-1")}, rollout.PodOptions{},
			"pod default/web-1: label controller-revision-hash"},
		{"a bad deletion cost is named", []*corev1.Pod{podfixture.Pod("default", "web-2", podfixture.Labels(revLabel, "1-a"),
			podfixture.Annotation(rollout.DeletionCostAnnotation, "lots"))}, rollout.PodOptions{},
			"pod default/web-2: annotation controller.kubernetes.io/pod-deletion-cost"},
		{"minReadySeconds without now is rejected", []*corev1.Pod{good}, rollout.PodOptions{MinReadySeconds: 5}, "options: now"},
		{"a pod without its gang label is named", []*corev1.Pod{good},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}}, "pod default/web-0: label gang"},
		{"a gang larger than gangSize is rejected", []*corev1.Pod{
			podfixture.Pod("default", "a", podfixture.Labels(revLabel, "1", "gang", "g")),
			podfixture.Pod("default", "b", podfixture.Labels(revLabel, "1", "gang", "g"))},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}, GangSize: 1}, "gang g: 2 members"},
		{"a negative minReadySeconds is rejected", []*corev1.Pod{good}, rollout.PodOptions{MinReadySeconds: -5, Now: time.Unix(1, 0)},
			"options: minReadySeconds: -5 is negative"},
		{"a negative gangSize is rejected", []*corev1.Pod{good}, rollout.PodOptions{GangSize: -1}, "options: gangSize: -1 is negative"},
		// 1<<21 members for one pod allocated about 5 GB before.
		{"a gangSize above MaxReplicas is rejected before allocating", []*corev1.Pod{gangPod("a", "g")},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}, GangSize: 1 << 21},
			"options: gangSize: 2097152, more than MaxReplicas 1048576"},
		{"gangs times gangSize above MaxReplicas is rejected before allocating", []*corev1.Pod{gangPod("a", "g"), gangPod("b", "h")},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}, GangSize: 1 << 20},
			"options: gangSize: 2 gangs of 1048576 members are 2097152 members, more than MaxReplicas 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := rollout.FromPods(tt.pods, tt.opts)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("allocated %d bytes to reject the input", grew)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
