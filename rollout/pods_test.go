package rollout_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/google/go-cmp/cmp"

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
			podfixture.Labels(revLabel, rev, "gang", gang, "column", "c"+name[len(name)-1:], "index", "4"),
			podfixture.Annotation(rollout.DeletionCostAnnotation, "7"))
	}
	opts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang", Column: "column", Index: "index"},
		Columns: []string{"c0", "c1", "c2"}, MissingSince: map[string]time.Time{"g": since}}
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
	t.Run("members are in column order with their columns, and the index and deletion cost are read", func(t *testing.T) {
		m := rs[0].Members
		if m[0].Name != "g-0" || m[0].Column != "c0" || m[2].Column != "c2" || rs[0].DeletionCost != 7 || rs[0].Index != 4 {
			t.Fatalf("got %+v", rs[0])
		}
	})
	t.Run("members follow the order of the columns, not their names", func(t *testing.T) {
		opts := opts
		opts.Columns = []string{"c2", "c0", "c1"}
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-1", "g", "2-b"), pod("g-0", "g", "1-a"), pod("g-2", "g", "2-b")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m := rs[0].Members; m[0].Name != "g-2" || m[1].Name != "g-0" || m[2].Name != "g-1" {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("a member missing in a column is added there, unnamed, with the caller's missing time", func(t *testing.T) {
		opts := opts
		opts.Columns = []string{"c0", "c1", "c2", "c3"}
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-0", "g", "1-a"), pod("g-2", "g", "1-a")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := rs[0].Members
		want := []rollout.Member{{Column: "c1", Missing: true, State: rollout.State{UnreadySince: since}},
			{Column: "c3", Missing: true, State: rollout.State{UnreadySince: since}}}
		if len(m) != 4 || !cmp.Equal(m[1], want[0], strictTime) || !cmp.Equal(m[3], want[1], strictTime) || rs[0].Effective().Ready {
			t.Fatalf("got %+v", m)
		}
	})
	t.Run("without columns a gang has the members it has pods for, in name order", func(t *testing.T) {
		opts := opts
		opts.Columns = nil
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-2", "g", "1-a"), pod("g-0", "g", "1-a")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m := rs[0].Members; len(m) != 2 || m[0].Name != "g-0" || m[1].Name != "g-2" || m[1].Column != "c2" {
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
	t.Run("a column holds a terminating pod beside the one that replaces it", func(t *testing.T) {
		going := podfixture.Pod("default", "g-0-old", podfixture.Ready(), podfixture.Deleting(since),
			podfixture.Labels(revLabel, "1-a", "gang", "g", "column", "c0", "index", "4"))
		rs, err := rollout.FromPods([]*corev1.Pod{going, pod("g-0", "g", "2-b"), pod("g-1", "g", "2-b"), pod("g-2", "g", "2-b")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m := rs[0].Members; len(m) != 4 || m[0].Name != "g-0" || m[1].Name != "g-0-old" || m[2].Name != "g-1" {
			t.Fatalf("got %+v, want the terminating pod after the live one in its column", m)
		}
	})
	t.Run("Plan repairs the missing members by column, at the gang's index", func(t *testing.T) {
		rs, err := rollout.FromPods([]*corev1.Pod{pod("g-0", "g", "2-b"), pod("g-1", "g", "2-b")}, opts)
		if err != nil {
			t.Fatal(err)
		}
		step, err := rollout.Plan(rs, rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 1, Columns: opts.Columns})
		if err != nil {
			t.Fatal(err)
		}
		want := []rollout.Repair{{Replica: "g", Revision: "2-b", Index: 4, Missing: []string{"c2"}}}
		if diff := cmp.Diff(want, step.Repair); diff != "" {
			t.Fatalf("repair (-want +got):\n%s", diff)
		}
	})
}

// FromPods reads the recovery annotations PlanRecover needs: a replacement's
// ReplacementFor (a gang's from any member, since a member created later to
// repair it may lack it) and a swapped-out replica's SwappedAt (a gang's
// earliest), under the default keys or the caller's.
func TestFromPodsRecoveryAnnotations(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name, gang string, annotations ...string) *corev1.Pod {
		opts := []podfixture.Option{podfixture.Ready(), podfixture.Labels(revLabel, "1-a", "gang", gang)}
		for i := 0; i+1 < len(annotations); i += 2 {
			opts = append(opts, podfixture.Annotation(annotations[i], annotations[i+1]))
		}
		return podfixture.Pod("default", name, opts...)
	}
	def := rollout.DefaultAnnotations
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		annotations rollout.PodAnnotations
		gang        bool
		want        []rollout.Replica // only Name, ReplacementFor and SwappedAt are compared
	}{
		{
			name: "single pods under the default keys",
			pods: []*corev1.Pod{pod("web-2", "", def.ReplacementFor, "web-1"),
				pod("web-1", "", def.SwappedAt, "2026-01-01T12:00:00Z"), pod("web-0", "")},
			want: []rollout.Replica{{Name: "web-0"}, {Name: "web-1", SwappedAt: at}, {Name: "web-2", ReplacementFor: "web-1"}},
		},
		{
			name: "a gang's replacement-for from the member that has it, and its earliest swap",
			pods: []*corev1.Pod{pod("g-1-0", "g-1", def.ReplacementFor, "g-0"), pod("g-1-1", "g-1"),
				pod("g-0-0", "g-0", def.SwappedAt, "2026-01-01T12:05:00Z"), pod("g-0-1", "g-0", def.SwappedAt, "2026-01-01T13:00:00+01:00")},
			gang: true,
			want: []rollout.Replica{{Name: "g-0", SwappedAt: at}, {Name: "g-1", ReplacementFor: "g-0"}},
		},
		{
			name: "the caller's keys, and not the default ones",
			pods: []*corev1.Pod{pod("web-1", "", "example.com/for", "web-0", def.ReplacementFor, "web-9"),
				pod("web-0", "", "example.com/out", "2026-01-01T12:00:00Z", def.SwappedAt, "2026-01-01T00:00:00Z")},
			annotations: rollout.PodAnnotations{ReplacementFor: "example.com/for", SwappedAt: "example.com/out"},
			want:        []rollout.Replica{{Name: "web-0", SwappedAt: at}, {Name: "web-1", ReplacementFor: "web-0"}},
		},
		{
			name:        "an empty key is not read",
			pods:        []*corev1.Pod{pod("web-1", "", "example.com/for", "web-0", def.SwappedAt, "2026-01-01T00:00:00Z")},
			annotations: rollout.PodAnnotations{ReplacementFor: "example.com/for"},
			want:        []rollout.Replica{{Name: "web-1", ReplacementFor: "web-0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel}, Annotations: tt.annotations}
			if tt.gang {
				opts.Labels.Gang = "gang"
			}
			rs, err := rollout.FromPods(tt.pods, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []rollout.Replica
			for _, r := range rs {
				got = append(got, rollout.Replica{Name: r.Name, ReplacementFor: r.ReplacementFor, SwappedAt: r.SwappedAt})
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromPodsRejectsBadInput(t *testing.T) {
	good := podfixture.Pod("default", "web-0", podfixture.Labels(revLabel, "1-a"))
	gangPod := func(name, gang, column string) *corev1.Pod {
		return podfixture.Pod("default", name, podfixture.Labels(revLabel, "1", "gang", gang, "column", column))
	}
	colOpts := rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang", Column: "column"}, Columns: []string{"c0", "c1"}}
	manyColumns := make([]string, rollout.MaxReplicas)
	for i := range manyColumns {
		manyColumns[i] = fmt.Sprintf("c%d", i)
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
		{"a negative minReadySeconds is rejected", []*corev1.Pod{good}, rollout.PodOptions{MinReadySeconds: -5, Now: time.Unix(1, 0)},
			"options: minReadySeconds: -5 is negative"},
		{"a pod in a column the gangs do not have is named", []*corev1.Pod{gangPod("a", "g", "c9")}, colOpts,
			`pod default/a: label column: "c9" is not one of the columns [c0 c1]`},
		{"two live pods of a gang in one column are named", []*corev1.Pod{gangPod("b", "g", "c0"), gangPod("a", "g", "c0")}, colOpts,
			`gang g: pods default/a and default/b: label column: both in column "c0"`},
		{"columns without a gang label are rejected", []*corev1.Pod{good},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Column: "column"}, Columns: []string{"c0"}},
			"options: columns: set, but labels.gang is empty"},
		{"columns without a column label are rejected", []*corev1.Pod{good},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}, Columns: []string{"c0"}},
			"options: columns: set, but labels.column is empty"},
		{"a repeated column is rejected", []*corev1.Pod{good},
			rollout.PodOptions{Labels: colOpts.Labels, Columns: []string{"c0", "c0"}}, `options: columns[1]: "c0" is empty or repeated`},
		{"an index that is not a number is named", []*corev1.Pod{podfixture.Pod("default", "web-3", podfixture.Labels(revLabel, "1-a", "index", "three"))},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Index: "index"}},
			`pod default/web-3: label index: "three" is not a non-negative 32-bit integer`},
		{"a negative index is named", []*corev1.Pod{podfixture.Pod("default", "web-3", podfixture.Labels(revLabel, "1-a", "index", "-1"))},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Index: "index"}},
			`pod default/web-3: label index: "-1" is not a non-negative 32-bit integer`},
		{"a missing index is named", []*corev1.Pod{good}, rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Index: "index"}},
			`pod default/web-0: label index: "" is not a non-negative 32-bit integer`},
		{"pods of a gang with two indexes are named", []*corev1.Pod{
			podfixture.Pod("default", "b", podfixture.Labels(revLabel, "1", "gang", "g", "index", "2")),
			podfixture.Pod("default", "a", podfixture.Labels(revLabel, "1", "gang", "g", "index", "1"))},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang", Index: "index"}},
			"gang g: pods default/a and default/b: label index: 1 and 2 differ"},
		{"pods of a gang replacing two replicas are named", []*corev1.Pod{
			podfixture.Pod("default", "b", podfixture.Labels(revLabel, "1", "gang", "g"),
				podfixture.Annotation(rollout.DefaultAnnotations.ReplacementFor, "x")),
			podfixture.Pod("default", "a", podfixture.Labels(revLabel, "1", "gang", "g"),
				podfixture.Annotation(rollout.DefaultAnnotations.ReplacementFor, "y"))},
			rollout.PodOptions{Labels: rollout.PodLabels{Revision: revLabel, Gang: "gang"}},
			`gang g: pods default/a and default/b: annotation rollout.kplan.dev/replacement-for: "y" and "x" differ`},
		{"a swap time that is not RFC 3339 is named", []*corev1.Pod{podfixture.Pod("default", "web-4", podfixture.Labels(revLabel, "1-a"),
			podfixture.Annotation(rollout.DefaultAnnotations.SwappedAt, "yesterday"))}, rollout.PodOptions{},
			`pod default/web-4: annotation rollout.kplan.dev/swapped-at: "yesterday" is not an RFC 3339 time`},
		// 1<<21 columns allocated about 5 GB of members for one pod before.
		{"more columns than MaxReplicas are rejected before allocating", []*corev1.Pod{gangPod("a", "g", "c0")},
			rollout.PodOptions{Labels: colOpts.Labels, Columns: make([]string, 1<<21)},
			"options: columns: 2097152, more than MaxReplicas 1048576"},
		{"gangs times columns above MaxReplicas are rejected before allocating", []*corev1.Pod{gangPod("a", "g", "c0"), gangPod("b", "h", "c0")},
			rollout.PodOptions{Labels: colOpts.Labels, Columns: manyColumns},
			"options: columns: 2 gangs of 1048576 members are 2097152 members, more than MaxReplicas 1048576"},
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
