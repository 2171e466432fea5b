// Every example of the package is in this one file, as the project requires (they
// compile with no other test file and show only the exported API); it runs past 400
// lines because each entry point has its own example, each copyable as shown.

package rollout_test

import (
	"fmt"
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
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// update web-2 1-a -> 2-b
	// wait web-0: maxUnavailable budget exhausted
	// wait web-1: maxUnavailable budget exhausted
	// wait web-3: maxUnavailable budget exhausted
	// complete: false
}

// Gangs move whole; a gang with a missing member is unavailable, so it goes first
// and costs no budget; it also uses up maxUnavailable 1, so the others wait.
func ExamplePlan_gang() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	gang := func(name string, missing bool) rollout.Replica {
		return rollout.Replica{Name: name, Revision: "1-a", Members: []rollout.Member{
			{Name: name + "-0", State: available},
			{Name: name + "-1", State: available, Missing: missing},
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
		fmt.Printf("update %s %s -> %s members %s\n", u.Replica, u.From, u.To, strings.Join(u.Members, ","))
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Output:
	// update row-1 1-a -> 2-b members row-1-0,row-1-1
	// wait row-0: maxUnavailable budget exhausted
	// wait row-2: maxUnavailable budget exhausted
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
	// wait a-2: group window: waiting for the slowest column
	// wait a-3: group window: waiting for the slowest column
	// wait b-2: group window: waiting for the slowest column
	// wait b-3: group window: waiting for the slowest column
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
	// wait web-1: maxUnavailable budget exhausted
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
		fmt.Printf("create %d at %s\n", c.Count, c.Revision)
	}
	for _, w := range step.Waiting {
		fmt.Printf("wait %s: %s\n", w.Replica, w.Reason)
	}
	fmt.Println("complete:", step.Complete)
	// Once the new replica is available, the old one goes.
	step, _ = rollout.Plan([]rollout.Replica{
		{Name: "web-0", Revision: "1-a", State: available},
		{Name: "web-1", Revision: "2-b", State: available},
	}, strategy)
	fmt.Println("delete:", step.Delete)
	fmt.Println("complete:", step.Complete)
	// Output:
	// create 1 at 2-b
	// wait web-0: maxUnavailable budget exhausted
	// complete: false
	// delete: [web-0]
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
		{Name: "web-1", Revision: "1-a", State: rollout.State{Failed: true}},
	}
	step, _ := rollout.PlanRecover(replicas, policy, now)
	fmt.Printf("replace %s at %s\n", step.Replace[0].For, step.Replace[0].Revision)

	replicas = append(replicas, rollout.Replica{Name: "web-2", Revision: "1-a", ReplacementFor: "web-1", State: available})
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(time.Minute))
	fmt.Printf("swap %s for %s\n", step.Swap[0].New, step.Swap[0].Old)

	replicas[1].SwappedAt = now.Add(time.Minute)
	replicas[2].ReplacementFor = ""
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(90*time.Second))
	fmt.Println("waiting:", step.Waiting)
	step, _ = rollout.PlanRecover(replicas, policy, now.Add(2*time.Minute))
	fmt.Println("release:", step.Release)
	// Output:
	// replace web-1 at 1-a
	// swap web-2 for web-1
	// waiting: [{web-1 swapped out, waiting for ReleaseDelay}]
	// release: [web-1]
}

// A gang whose member has been missing longer than GangMemberTimeout is lost and
// gets a whole new gang.
func ExamplePlanRecover_gangLost() {
	available := rollout.State{Ready: true, Available: true, Healthy: true}
	policy := rollout.RecoverPolicy{GangMemberTimeout: 5 * time.Minute}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gang := rollout.Replica{Name: "row-0", Revision: "1-a", Members: []rollout.Member{
		{Name: "row-0-0", State: available},
		{Name: "row-0-1", Missing: true, State: rollout.State{UnreadySince: since}},
	}}
	for _, after := range []time.Duration{4 * time.Minute, 5 * time.Minute} {
		step, _ := rollout.PlanRecover([]rollout.Replica{gang}, policy, since.Add(after))
		fmt.Printf("after %s: failed %v, replace %v\n", after, step.Failed, step.Replace)
	}
	// Output:
	// after 4m0s: failed [], replace []
	// after 5m0s: failed [{row-0 gang member missing or not ready for longer than GangMemberTimeout}], replace [{row-0 1-a  [row-0-0 row-0-1]}]
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

// FromPods groups kthena pods into gangs by their group-name label.
func ExampleFromPods() {
	pod := func(name, group, rev string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
				"modelserving.volcano.sh/group-name": group,
				"modelserving.volcano.sh/revision":   rev,
				"modelserving.volcano.sh/role":       "decode",
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	replicas, err := rollout.FromPods([]*corev1.Pod{
		pod("qwen-1-0", "qwen-1", "2-b"), pod("qwen-0-1", "qwen-0", "1-a"), pod("qwen-0-0", "qwen-0", "1-a"),
	}, rollout.PodOptions{Labels: rollout.KthenaLabels, GangSize: 2})
	if err != nil {
		panic(err)
	}
	for _, r := range replicas {
		var names []string
		for _, m := range r.Members {
			names = append(names, m.Name)
		}
		fmt.Printf("%s at %s: %v ready=%v\n", r.Name, r.Revision, names, r.Effective().Ready)
	}
	// Output:
	// qwen-0 at 1-a: [qwen-0-0 qwen-0-1] ready=true
	// qwen-1 at 2-b: [qwen-1-0 qwen-1-missing-1] ready=false
}

// Serving groups that lost a pod are made whole at their own revision: qwen-0
// runs the target, and qwen-2 stays at 1-a because LatestRatio asks for 2 of 3
// groups at 2-b, so neither is updated; each gets a Repair naming the pod it
// lacks (FromPods' placeholder), whatever the budget. The caller creates those
// pods in their groups.
func ExamplePlan_repair() {
	pod := func(name, group, rev string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
				"modelserving.volcano.sh/group-name": group,
				"modelserving.volcano.sh/revision":   rev,
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	replicas, err := rollout.FromPods([]*corev1.Pod{
		pod("qwen-0-0", "qwen-0", "2-b"),
		pod("qwen-1-0", "qwen-1", "2-b"), pod("qwen-1-1", "qwen-1", "2-b"),
		pod("qwen-2-0", "qwen-2", "1-a"),
	}, rollout.PodOptions{Labels: rollout.PodLabels{
		Revision: "modelserving.volcano.sh/revision",
		Gang:     "modelserving.volcano.sh/group-name",
	}, GangSize: 2})
	if err != nil {
		panic(err)
	}
	one, zero, two := intstr.FromInt32(1), intstr.FromInt32(0), intstr.FromInt32(2)
	step, err := rollout.Plan(replicas, rollout.Strategy{
		Mode:           rollout.Gang,
		TargetRevision: "2-b",
		Replicas:       3,
		LatestRatio:    &two,
		MaxUnavailable: &one,
		MaxSurge:       &zero,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range step.Repair {
		fmt.Printf("repair %s at %s: create %s\n", r.Replica, r.Revision, strings.Join(r.Members, ", "))
	}
	fmt.Println("updates:", len(step.Update), "waiting:", len(step.Waiting), "complete:", step.Complete)
	// Output:
	// repair qwen-2 at 1-a: create qwen-2-missing-1
	// repair qwen-0 at 2-b: create qwen-0-missing-1
	// updates: 0 waiting: 0 complete: false
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
	// "not ready for longer than StartTimeout" true
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
