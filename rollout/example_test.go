// Every example of the package is in this one file, as the project requires (they
// compile with no other test file and show only the exported API); it runs past 400
// lines because each entry point has its own example, each copyable as shown.

package rollout_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// A whole rollout, one reconcile at a time: six replicas move from 1-a to 2-b with
// maxUnavailable 2 and maxSurge 0. The controller's side (applying each step, the
// pods becoming available by the next reconcile) is played by rollouttest's
// Simulator; a controller does the same with pods. After three batches of two, the
// fourth reconcile finds every replica at 2-b and available: Complete.
func Example() {
	two, zero := intstr.FromInt32(2), intstr.FromInt32(0)
	strategy := rollout.Strategy{
		Mode:           rollout.Rolling,
		TargetRevision: "2-b",
		Replicas:       6,
		MaxUnavailable: &two,
		MaxSurge:       &zero,
	}
	var replicas []rollout.Replica
	for i := range 6 {
		replicas = append(replicas, rollout.Replica{Name: fmt.Sprintf("web-%d", i), Revision: "1-a",
			State: rollout.State{Ready: true, Available: true, Healthy: true}})
	}
	cluster := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: strategy, Replicas: replicas}, rollouttest.NoFaults)
	for reconcile := 1; reconcile <= 10; reconcile++ {
		// Observe, plan, act.
		step, err := rollout.Plan(cluster.Replicas, strategy)
		if err != nil {
			fmt.Println(err)
			return
		}
		if step.Complete {
			fmt.Printf("reconcile %d: complete\n", reconcile)
			break
		}
		var moves []string
		for _, u := range step.Update {
			moves = append(moves, u.Replica+" "+u.From+" -> "+u.To)
		}
		fmt.Printf("reconcile %d: update %s; %d waiting\n", reconcile, strings.Join(moves, ", "), len(step.Waiting))
		cluster.Apply(step) // the controller updates the pods
		cluster.Settle(nil) // they become available before the next reconcile
	}
	// Output:
	// reconcile 1: update web-0 1-a -> 2-b, web-1 1-a -> 2-b; 4 waiting
	// reconcile 2: update web-2 1-a -> 2-b, web-3 1-a -> 2-b; 2 waiting
	// reconcile 3: update web-4 1-a -> 2-b, web-5 1-a -> 2-b; 0 waiting
	// reconcile 4: complete
}

// Four replicas, one of them unready. The unready one already uses up
// maxUnavailable 1, so it is updated (for free) and the others wait: 3 available
// replicas is the floor, 4 - 1.
func ExamplePlan() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "1-a", State: available},
		{Name: "web-2", Revision: "1-a", State: rollout.State{Healthy: true}},
		{Name: "web-3", Revision: "1-a", State: available},
	}
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Rolling,
		TargetRevision: "2-b",
		Replicas:       4,
		MaxUnavailable: &one,
		MaxSurge:       &zero,
	})
	if err != nil {
		panic(err)
	}
	for _, u := range step.Update {
		fmt.Printf("update %s %s -> %s\n", u.Replica, u.From, u.To)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s (%s)\n", w.Replica, w.Reason, w.Message)
	}
	fmt.Println("complete:", step.Complete)
	fmt.Printf("%s: %s\n", step.Reason, step.Message)
	// Output:
	// update web-2 1-a -> 2-b
	// wait web-0: MaxUnavailableReached (maxUnavailable budget exhausted)
	// wait web-1: MaxUnavailableReached (maxUnavailable budget exhausted)
	// wait web-3: MaxUnavailableReached (maxUnavailable budget exhausted)
	// complete: false
	// Updating: update web-2; maxUnavailable budget exhausted: web-0, web-1, web-3
}

// Gangs move whole; a gang with a missing member is unavailable, so it goes first
// and costs no budget; it also uses up maxUnavailable 1, so the others wait. The
// update names the gang's pod to update and the column of the member to create.
func ExamplePlan_gang() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	gang := func(name string, missing bool) rollout.Replica {
		second := rollout.Member{Name: name + "-1", Column: "1", State: available}
		if missing {
			second = rollout.Member{Column: "1", Missing: true}
		}
		return rollout.Replica{Name: name, Revision: "1-a", Members: []rollout.Member{
			{Name: name + "-0", Column: "0", State: available}, second,
		}}
	}
	step, err := rollout.Plan([]rollout.Replica{gang("row-0", false), gang("row-1", true), gang("row-2", false)},
		rollout.Strategy{
			Mode:           rollout.Gang,
			TargetRevision: "2-b",
			Replicas:       3,
			MaxUnavailable: &one,
			MaxSurge:       &zero,
		})
	if err != nil {
		panic(err)
	}
	for _, u := range step.Update {
		fmt.Printf("update %s %s -> %s: pods %v, create in columns %v\n", u.Replica, u.From, u.To, u.Pods, u.Missing)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// update row-1 1-a -> 2-b: pods [row-1-0], create in columns [1]
	// wait row-0: MaxUnavailableReached
	// wait row-2: MaxUnavailableReached
	// complete: false
}

// Group rolling: column b is behind (only one new replica available), so the
// latest version's window is min over columns (1) plus one step (1) = 2 per
// column; column a already has 2 and waits for b, and so do b's other old
// replicas once b-1 is updated.
func ExamplePlan_group() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	quarter, zero := intstr.FromString("25%"), intstr.FromInt32(0)
	var replicas []rollout.Replica
	add := func(col string, revs ...string) {
		for i, rev := range revs {
			replicas = append(replicas, rollout.Replica{Name: fmt.Sprintf("%s-%d", col, i), Column: col, Revision: rev, State: available})
		}
	}
	add("a", "2-b", "2-b", "1-a", "1-a")
	add("b", "2-b", "1-a", "1-a", "1-a")
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Group,
		TargetRevision: "2-b",
		Replicas:       4,
		MaxUnavailable: &quarter,
		MaxSurge:       &zero,
	})
	if err != nil {
		panic(err)
	}
	for _, u := range step.Update {
		fmt.Printf("update %s %s -> %s\n", u.Replica, u.From, u.To)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	fmt.Println("window:", step.Latest)
	// Output:
	// update b-1 1-a -> 2-b
	// wait a-2: GroupWindow
	// wait a-3: GroupWindow
	// wait b-2: GroupWindow
	// wait b-3: GroupWindow
	// complete: false
	// window: 2
}

// A row serves only when all its columns run one revision. Here the second row
// mixes 1-a (column a) and 2-b (column b): Step.Rows shows no whole row for
// either, the plan is not complete, and a's 1-a moves to 2-b, the revision the
// replicas LatestRatio holds back run.
func ExamplePlan_groupRows() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	replicas := []rollout.Replica{
		{Name: "a-0", Column: "a", Revision: "3-c", State: available},
		{Name: "a-1", Column: "a", Revision: "1-a", State: available},
		{Name: "b-0", Column: "b", Revision: "3-c", State: available},
		{Name: "b-1", Column: "b", Revision: "2-b", State: available},
	}
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Group,
		TargetRevision: "3-c",
		Replicas:       2,
		LatestRatio:    &one,
		History:        []string{"1-a", "2-b", "3-c"},
		MaxUnavailable: &one,
		MaxSurge:       &zero,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range step.Rows {
		fmt.Printf("%s: %d whole rows, %d available\n", r.Revision, r.Rows, r.AvailableRows)
	}
	for _, u := range step.Update {
		fmt.Printf("update %s %s -> %s\n", u.Replica, u.From, u.To)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// 1-a: 0 whole rows, 0 available
	// 2-b: 0 whole rows, 0 available
	// 3-c: 1 whole rows, 1 available
	// update a-1 1-a -> 2-b
	// complete: false
}

// Lowering LatestRatio rolls back: with 50% of 4 = 2 wanted at the target and 4
// there, two go back to the previous revision, one at a time (maxUnavailable 1).
func ExamplePlan_rollback() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero, half := intstr.FromInt32(1), intstr.FromInt32(0), intstr.FromString("50%")
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "2-b", State: available},
		{Name: "web-1", Revision: "2-b", State: available},
		{Name: "web-2", Revision: "2-b", State: available},
		{Name: "web-3", Revision: "2-b", State: available},
	}
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Rolling,
		TargetRevision: "2-b",
		Replicas:       4,
		MaxUnavailable: &one,
		MaxSurge:       &zero,
		LatestRatio:    &half,
		History:        []string{"1-a", "2-b"},
	})
	if err != nil {
		panic(err)
	}
	for _, u := range step.Update {
		fmt.Printf("update %s %s -> %s\n", u.Replica, u.From, u.To)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// update web-0 2-b -> 1-a
	// wait web-1: MaxUnavailableReached
	// complete: false
}

// maxUnavailable 0 with surge 1 and a single replica: create the new one first,
// delete the old one once the new one is available.
func ExamplePlan_surge() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	strategy := rollout.Strategy{
		Mode:           rollout.Rolling,
		TargetRevision: "2-b",
		Replicas:       1,
		MaxUnavailable: &zero,
		MaxSurge:       &one,
	}
	step, _ := rollout.Plan([]rollout.Replica{{Name: "web-0", Revision: "1-a", State: available}}, strategy)
	for _, c := range step.Create {
		fmt.Printf("create index %d at %s\n", c.Index, c.Revision)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Once the new replica (web-1, index 1) is available, the old one goes.
	step, _ = rollout.Plan([]rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Index: 1, Revision: "2-b", State: available},
	}, strategy)
	for _, d := range step.Delete {
		fmt.Printf("delete %s: pods %v\n", d.Replica, d.Pods)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// create index 1 at 2-b
	// wait web-0: MaxUnavailableReached
	// complete: false
	// delete web-0: pods [web-0]
	// complete: false
}

// A failed replica gets a replacement; the replacement is swapped in once ready;
// the failed one is released after the delay.
func ExamplePlanRecover() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	policy := rollout.RecoverPolicy{ReleaseDelay: time.Minute, MaxParallel: 1}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	replicas := []rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Index: 1, Revision: "1-a", State: rollout.State{Failed: true}},
	}
	step, _ := rollout.PlanRecover(replicas, policy, now)
	fmt.Printf("replace %s at %s, index %d\n", step.Replace[0].For, step.Replace[0].Revision, step.Replace[0].Index)

	replicas = append(replicas, rollout.Replica{Name: "web-2", Index: 2, Revision: "1-a", ReplacementFor: "web-1", State: available})
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(time.Minute))
	fmt.Printf("swap %s for %s\n", step.Swap[0].New, step.Swap[0].Old)

	replicas[1].SwappedAt = now.Add(time.Minute)
	replicas[2].ReplacementFor = ""
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(90*time.Second))
	fmt.Printf("waiting: %+v\n", step.Waiting)
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(2*time.Minute))
	fmt.Println("release:", step.Release)
	// Output:
	// replace web-1 at 1-a, index 2
	// swap web-2 for web-1
	// waiting: [{Replica:web-1 Reason:WaitingForReleaseDelay Message:swapped out, waiting for ReleaseDelay}]
	// release: [web-1]
}

// A gang whose member has been missing longer than GangMemberTimeout is lost and
// gets a whole new gang.
func ExamplePlanRecover_gangLost() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	policy := rollout.RecoverPolicy{GangMemberTimeout: 5 * time.Minute}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gang := rollout.Replica{Name: "row-0", Revision: "1-a", Members: []rollout.Member{
		{Name: "row-0-0", Column: "0", State: available},
		{Column: "1", Missing: true, State: rollout.State{UnreadySince: since}},
	}}
	for _, after := range []time.Duration{4 * time.Minute, 5 * time.Minute} {
		step, _ := rollout.PlanRecover([]rollout.Replica{gang}, policy, since.Add(after))
		fmt.Printf("after %s: failed %+v, replace %+v\n", after, step.Failed, step.Replace)
	}
	// Output:
	// after 4m0s: failed [], replace []
	// after 5m0s: failed [{Replica:row-0 Reason:GangMemberTimeoutExceeded Message:gang member missing or not ready for longer than GangMemberTimeout}], replace [{For:row-0 Revision:1-a Column: Index:1 Members:[0 1]}]
}

// Prefill (4 replicas) and decode (2) advance together: S = max(4/1, 2/1) = 4
// steps; at step 1 prefill should run ceil(1*4/4) = 1 new replica and decode
// ceil(1*2/4) = 1, so both roles run the new revision from the first step; decode
// then waits at 1 until step 3 (ceil(3*2/4) = 2).
func ExamplePlanLockstep() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	role := func(name string, n int) rollout.Role {
		var rs []rollout.Replica
		for i := range n {
			rs = append(rs, rollout.Replica{Name: fmt.Sprintf("%s-%d", name, i), Revision: "1-a", State: available})
		}
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		return rollout.Role{Name: name, Replicas: rs, Strategy: rollout.Strategy{
			TargetRevision: "2-b", Replicas: n, History: []string{"1-a", "2-b"},
			MaxUnavailable: &one, MaxSurge: &zero,
		}}
	}
	step, err := rollout.PlanLockstep([]rollout.Role{role("prefill", 4), role("decode", 2)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("step %d of %d\n", step.Index, step.Steps)
	for _, r := range step.Roles {
		fmt.Printf("%s: latest %d, updates %d\n", r.Name, r.Step.Latest, len(r.Step.Update))
	}
	// Output:
	// step 1 of 4
	// prefill: latest 1, updates 1
	// decode: latest 1, updates 1
}

// Old replicas drain in lockstep too. Prefill (2 gangs) and decode (1) each
// run one available gang at 2-b beside their old ones, with maxSurge 1 and
// maxUnavailable 0: S = 2 steps, step 1 reached. At step 1 each role keeps
// D - floor(1*F/2) old gangs: decode 1 - 0 = 1, prefill 2 - 1 = 1. Decode
// keeps its only old gang, so the old revision still runs in every role,
// while prefill drains one and surges its second new gang.
func ExamplePlanLockstep_drain() {
	gang := func(name, rev string) rollout.Replica {
		available := rollout.State{Ready: true, Available: true, Healthy: true}
		return rollout.Replica{Name: name, Revision: rev, Members: []rollout.Member{
			{Name: name + "-0", Column: "0", State: available}, {Name: name + "-1", Column: "1", State: available}}}
	}
	role := func(name string, n int, rs ...rollout.Replica) rollout.Role {
		zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
		for i := range rs {
			rs[i].Index = i
		}
		return rollout.Role{Name: name, Replicas: rs, Strategy: rollout.Strategy{
			Mode: rollout.Gang, TargetRevision: "2-b", Replicas: n, Columns: []string{"0", "1"},
			History: []string{"1-a", "2-b"}, MaxUnavailable: &zero, MaxSurge: &one,
		}}
	}
	step, err := rollout.PlanLockstep([]rollout.Role{
		role("prefill", 2, gang("prefill-a0", "1-a"), gang("prefill-a1", "1-a"), gang("prefill-b0", "2-b")),
		role("decode", 1, gang("decode-a0", "1-a"), gang("decode-b0", "2-b")),
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("step %d of %d\n", step.Index, step.Steps)
	for _, r := range step.Roles {
		fmt.Printf("%s: %s: %s\n", r.Name, r.Step.Reason, r.Step.Message)
	}
	// Output:
	// step 2 of 2
	// prefill: Updating: create 1; delete prefill-a0; maxUnavailable budget exhausted: prefill-a1
	// decode: WaitingForOtherRoles: old, kept while the other roles drain theirs: decode-a0
}

// FromPods groups kthena pods into gangs by their group-name label, each pod
// in the column its role label names. With the columns every group has, a
// group lacking a pod gets a missing member in that column.
func ExampleFromPods() {
	pod := func(name, group, role, rev string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
				"modelserving.volcano.sh/group-name": group,
				"modelserving.volcano.sh/revision":   rev,
				"modelserving.volcano.sh/role":       role,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	replicas, err := rollout.FromPods([]*corev1.Pod{
		pod("qwen-1-decode", "qwen-1", "decode", "2-b"),
		pod("qwen-0-decode", "qwen-0", "decode", "1-a"),
		pod("qwen-0-prefill", "qwen-0", "prefill", "1-a"),
	}, rollout.PodOptions{Labels: rollout.KthenaLabels, Columns: []string{"prefill", "decode"}})
	if err != nil {
		panic(err)
	}
	for _, r := range replicas {
		var members []string
		for _, m := range r.Members {
			if m.Missing {
				members = append(members, m.Column+": missing")
			} else {
				members = append(members, m.Column+": "+m.Name)
			}
		}
		fmt.Printf("%s at %s: %v ready=%v\n", r.Name, r.Revision, members, r.Effective().Ready)
	}
	// Output:
	// qwen-0 at 1-a: [prefill: qwen-0-prefill decode: qwen-0-decode] ready=true
	// qwen-1 at 2-b: [prefill: missing decode: qwen-1-decode] ready=false
}

// FromPods reads the recovery annotations too, so its replicas feed PlanRecover
// as well as Plan. web-1 failed: recovery starts a replacement in the lowest free
// index (2). The controller creates it as web-2, annotated as replacing web-1;
// once it is ready, recovery swaps it in, and the controller marks web-1 swapped
// out (and removes the annotation from web-2).
func ExampleFromPods_recover() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(index int, phase corev1.PodPhase, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", index), Labels: map[string]string{
				"controller-revision-hash":     "web-7c9f",
				"apps.kubernetes.io/pod-index": fmt.Sprint(index),
			}},
			Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: ready},
			}},
		}
	}
	opts := rollout.PodOptions{Labels: rollout.PodLabels{
		Revision: "controller-revision-hash",
		Index:    "apps.kubernetes.io/pod-index",
	}}
	policy := rollout.RecoverPolicy{ReleaseDelay: time.Minute}
	pods := []*corev1.Pod{
		pod(0, corev1.PodRunning, corev1.ConditionTrue),
		pod(1, corev1.PodFailed, corev1.ConditionFalse),
	}
	plan := func() rollout.RecoverStep {
		replicas, err := rollout.FromPods(pods, opts)
		if err != nil {
			panic(err)
		}
		step, err := rollout.PlanRecover(replicas, policy, now)
		if err != nil {
			panic(err)
		}
		return step
	}

	step := plan()
	for _, f := range step.Failed {
		fmt.Printf("%s: %s\n", f.Replica, f.Reason)
	}
	rep := step.Replace[0]
	fmt.Printf("replace %s: create web-%d at %s\n", rep.For, rep.Index, rep.Revision)
	replacement := pod(rep.Index, corev1.PodRunning, corev1.ConditionTrue)
	replacement.Annotations = map[string]string{rollout.DefaultAnnotations.ReplacementFor: rep.For}
	pods = append(pods, replacement)

	step = plan()
	sw := step.Swap[0]
	fmt.Printf("swap %s in for %s\n", sw.New, sw.Old)
	pods[1].Annotations = map[string]string{rollout.DefaultAnnotations.SwappedAt: now.Format(time.RFC3339)}
	replacement.Annotations = nil

	step = plan()
	fmt.Printf("%s: %s\n", step.Waiting[0].Replica, step.Waiting[0].Message)
	// Output:
	// web-1: ReplicaFailed
	// replace web-1: create web-2 at web-7c9f
	// swap web-2 in for web-1
	// web-1: swapped out, waiting for ReleaseDelay
}

// Serving groups that lost a pod are made whole at their own revision: qwen-0
// runs the target, and qwen-2 stays at 1-a because LatestRatio asks for 2 of 3
// groups at 2-b, so neither is updated; each gets a Repair naming the column of
// the pod it lacks, whatever the budget. The caller creates those pods in their
// groups.
func ExamplePlan_repair() {
	pod := func(group, column, rev string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: group + "-" + column, Labels: map[string]string{
				"modelserving.volcano.sh/group-name": group,
				"modelserving.volcano.sh/revision":   rev,
				"modelserving.volcano.sh/role":       column,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	columns := []string{"prefill", "decode"}
	replicas, err := rollout.FromPods([]*corev1.Pod{
		pod("qwen-0", "prefill", "2-b"),
		pod("qwen-1", "prefill", "2-b"), pod("qwen-1", "decode", "2-b"),
		pod("qwen-2", "prefill", "1-a"),
	}, rollout.PodOptions{Labels: rollout.KthenaLabels, Columns: columns})
	if err != nil {
		panic(err)
	}
	one, zero, two := intstr.FromInt32(1), intstr.FromInt32(0), intstr.FromInt32(2)
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Gang,
		TargetRevision: "2-b",
		Replicas:       3,
		Columns:        columns,
		LatestRatio:    &two,
		MaxUnavailable: &one,
		MaxSurge:       &zero,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range step.Repair {
		for _, column := range r.Missing {
			fmt.Printf("repair %s at %s: create %s-%s\n", r.Replica, r.Revision, r.Replica, column)
		}
	}
	fmt.Println("updates:", len(step.Update), "waiting:", len(step.Waiting), "complete:", step.Complete)
	// Output:
	// repair qwen-2 at 1-a: create qwen-2-decode
	// repair qwen-0 at 2-b: create qwen-0-decode
	// updates: 0 waiting: 0 complete: false
}

// A controller carries out gang steps on pods from the step alone: it deletes
// and updates the pods a step names, and creates a pod in each slot it names
// (a gang's index and a member's column), naming it by its own rule. Serving
// group llm-0 runs 1-a and llm-2 lost its decode pod; the service wants three
// groups at 2-b. The first step updates llm-2 (down already, so free) and
// creates its decode pod, creates the missing group in the lowest free index
// (1), and leaves llm-0 to the budget; the pods here are ready at once. Scaled
// down to two groups at the end, the step names the pods of the group to delete.
func ExamplePlan_gangPods() {
	const (
		revisionLabel = "example.com/revision"
		groupLabel    = "example.com/group"
		indexLabel    = "example.com/group-index"
		columnLabel   = "example.com/member"
	)
	columns := []string{"prefill-0", "decode-0"}
	// The controller's naming rule: a group is llm-<index>, its pods
	// llm-<index>-<column>.
	cluster := map[string]*corev1.Pod{}
	create := func(index int, column, rev string) {
		group := fmt.Sprintf("llm-%d", index)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: group + "-" + column, Labels: map[string]string{
				revisionLabel: rev, groupLabel: group, indexLabel: fmt.Sprint(index), columnLabel: column,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
		cluster[p.Name] = p
		fmt.Printf("  create %s at %s\n", p.Name, rev)
	}
	fmt.Println("before:")
	create(0, "prefill-0", "1-a")
	create(0, "decode-0", "1-a")
	create(2, "prefill-0", "1-a")

	opts := rollout.PodOptions{
		Labels:  rollout.PodLabels{Revision: revisionLabel, Gang: groupLabel, Index: indexLabel, Column: columnLabel},
		Columns: columns,
	}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	strategy := rollout.Strategy{Mode: rollout.Gang, TargetRevision: "2-b", Replicas: 3, Columns: columns,
		MaxUnavailable: &one, MaxSurge: &zero}
	reconcile := func() bool {
		var pods []*corev1.Pod
		for _, name := range slices.Sorted(maps.Keys(cluster)) {
			pods = append(pods, cluster[name])
		}
		replicas, err := rollout.FromPods(pods, opts)
		if err != nil {
			panic(err)
		}
		step, err := rollout.Plan(replicas, strategy)
		if err != nil {
			panic(err)
		}
		fmt.Println(strings.TrimSpace(string(step.Reason) + " " + step.Message))
		for _, d := range step.Delete {
			for _, name := range d.Pods {
				delete(cluster, name)
				fmt.Printf("  delete %s\n", name)
			}
		}
		for _, u := range step.Update {
			for _, name := range u.Pods {
				cluster[name].Labels[revisionLabel] = u.To
				fmt.Printf("  update %s to %s\n", name, u.To)
			}
			for _, column := range u.Missing {
				create(u.Index, column, u.To)
			}
		}
		for _, c := range step.Create {
			for _, column := range c.Members {
				create(c.Index, column, c.Revision)
			}
		}
		for _, r := range step.Repair {
			for _, column := range r.Missing {
				create(r.Index, column, r.Revision)
			}
		}
		return step.Complete
	}
	for !reconcile() {
	}
	strategy.Replicas = 2
	for !reconcile() {
	}
	// Output:
	// before:
	//   create llm-0-prefill-0 at 1-a
	//   create llm-0-decode-0 at 1-a
	//   create llm-2-prefill-0 at 1-a
	// Updating update llm-2; create 1; maxUnavailable budget exhausted: llm-0
	//   update llm-2-prefill-0 to 2-b
	//   create llm-2-decode-0 at 2-b
	//   create llm-1-prefill-0 at 2-b
	//   create llm-1-decode-0 at 2-b
	// Updating update llm-0
	//   update llm-0-prefill-0 to 2-b
	//   update llm-0-decode-0 to 2-b
	// RolloutComplete
	// Updating delete llm-0
	//   delete llm-0-prefill-0
	//   delete llm-0-decode-0
	// RolloutComplete
}

// The rounding rules on 3 replicas.
func ExampleResolveBudget() {
	twenty := intstr.FromString("20%")
	b, _ := rollout.ResolveBudget(&twenty, &twenty, 3)
	fmt.Printf("%+v\n", b)
	zero, zeroPercent := intstr.FromInt32(0), intstr.FromString("0%")
	_, err := rollout.ResolveBudget(&zero, &zeroPercent, 3)
	fmt.Println(err)
	// Output:
	// {MaxUnavailable:1 MaxSurge:1}
	// maxUnavailable and maxSurge: both are 0, nothing could move
}

// CompareReplicas puts the least healthy first, then priority, deletion cost,
// and name in natural order.
func ExampleCompareReplicas() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	rs := []*rollout.Replica{
		{Name: "r-10", State: available},
		{Name: "r-9", State: available},
		{Name: "r-2", State: available, DeletionCost: 5},
		{Name: "r-3", State: rollout.State{Healthy: true}},
	}
	slices.SortFunc(rs, rollout.CompareReplicas)
	for _, r := range rs {
		fmt.Print(r.Name, " ")
	}
	fmt.Println()
	// Output:
	// r-3 r-9 r-10 r-2
}

// FailureReason says whether and why recovery would replace a replica.
func ExampleFailureReason() {
	now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	policy := rollout.RecoverPolicy{StartTimeout: 5 * time.Minute}
	starting := rollout.Replica{Name: "web-0", Revision: "1-a",
		State: rollout.State{Healthy: true, UnreadySince: now.Add(-6 * time.Minute)}}
	reason, failed := rollout.FailureReason(&starting, policy, now)
	fmt.Printf("%q %v\n", reason, failed)
	starting.State.UnreadySince = now.Add(-time.Minute)
	reason, failed = rollout.FailureReason(&starting, policy, now)
	fmt.Printf("%q %v\n", reason, failed)
	// Output:
	// "StartTimeoutExceeded" true
	// "" false
}

// History decides first, then the generation before "-", then natural order.
func ExampleCompareRevisions() {
	fmt.Println(rollout.CompareRevisions("9-a", "10-b", nil))
	fmt.Println(rollout.CompareRevisions("10-b", "canary", nil))
	fmt.Println(rollout.CompareRevisions("10-b", "canary", []string{"10-b", "canary"}))
	fmt.Println(rollout.CompareRevisions("hotfix", "10-b", []string{"hotfix"}))
	// Output:
	// -1
	// 1
	// -1
	// 1
}

// LatestRatio says how many replicas should run the target revision: percents round
// up, so a non-zero percent is never 0 replicas.
func ExampleResolveRatio() {
	half, one, twelve := intstr.FromString("50%"), intstr.FromString("1%"), intstr.FromInt32(12)
	for _, r := range []*intstr.IntOrString{nil, &half, &one, &twelve} {
		n, err := rollout.ResolveRatio(r, 10)
		fmt.Println(n, err)
	}
	bad := intstr.FromString("half")
	_, err := rollout.ResolveRatio(&bad, 10)
	fmt.Println(err != nil)
	// Output:
	// 10 <nil>
	// 5 <nil>
	// 1 <nil>
	// 10 <nil>
	// true
}

// A search service releases a new index (data "idx-7") while its pods move to
// 2-b, under one maxUnavailable of 1 out of 4. search-0 needs both changes and
// takes them in one update; once the pods are done, data moves alone (From ==
// To). Every reconcile takes exactly one replica down.
func ExamplePlan_data() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	replicas := []rollout.Replica{
		{Name: "search-0", Revision: "1-a", DataRevision: "idx-6", State: available},
		{Name: "search-1", Revision: "2-b", DataRevision: "idx-6", State: available},
		{Name: "search-2", Revision: "2-b", DataRevision: "idx-6", State: available},
		{Name: "search-3", Revision: "2-b", DataRevision: "idx-7", State: available},
	}
	s := rollout.Strategy{TargetRevision: "2-b", TargetDataRevision: "idx-7", Replicas: 4,
		MaxUnavailable: &one, MaxSurge: &zero}
	for range 4 {
		step, err := rollout.Plan(replicas, s)
		if err != nil {
			panic(err)
		}
		for _, u := range step.Update {
			fmt.Printf("update %s: pod %s -> %s, data %s -> %s\n", u.Replica, u.From, u.To, u.DataFrom, u.DataTo)
		}
		if step.Complete {
			fmt.Println("complete")
			break
		}
		// The controller applies the step; the replica is available by the next reconcile.
		for _, u := range step.Update {
			for i := range replicas {
				if replicas[i].Name == u.Replica {
					replicas[i].Revision, replicas[i].DataRevision = u.To, u.DataTo
				}
			}
		}
	}
	// Output:
	// update search-0: pod 1-a -> 2-b, data idx-6 -> idx-7
	// update search-1: pod 2-b -> 2-b, data idx-6 -> idx-7
	// update search-2: pod 2-b -> 2-b, data idx-6 -> idx-7
	// complete
}
