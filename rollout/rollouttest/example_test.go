package rollouttest_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// Check rejects a step that takes availability below the floor: 4 replicas with
// maxUnavailable 1 may lose one at a time, not two.
func ExampleCheck() {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	replicas := fleet("web", 4, "1-a", "", 0)
	bad := rollout.Step{Update: []rollout.Update{
		{Replica: "web-0", From: "1-a", To: "2-b"}, {Replica: "web-1", From: "1-a", To: "2-b"}}}
	fmt.Println(rollouttest.Check(replicas, s, bad))
	step, _ := rollout.Plan(replicas, s)
	fmt.Println(rollouttest.Check(replicas, s, step))
	// Output:
	// column "": availability 4 -> 2, below floor 3 (n=4, maxUnavailable=1)
	// <nil>
}

// The simulator runs a rollout to the end, checking every step: 6 replicas, 2 at
// a time, take ceil(6/2) = 3 reconciles that update and a 4th that finds all
// available and reports Complete.
func ExampleSimulator_Run() {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 6,
		MaxUnavailable: ptr(intstr.FromInt32(2)), MaxSurge: ptr(intstr.FromInt32(0))}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("web", 6, "1-a", "", 0)},
		rollouttest.NoFaults)
	n, err := sim.Run(10)
	fmt.Println(n, err, rollouttest.Converged(sim.Replicas, s))
	// Output:
	// 4 <nil> <nil>
}
