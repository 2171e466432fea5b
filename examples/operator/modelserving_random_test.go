package operator_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// msCase is one generated ModelServing scenario: a strategy drawn by
// rollouttest.StrategyOf, mapped onto the spec, and what the test does to it.
type msCase struct {
	mode      servingv1.RolloutMode
	groups    int32
	strategy  servingv1.RolloutStrategy
	delay     time.Duration
	revertAt  int // revert the new image once this many pods run it (0: never)
	scaleTo   int32
	startSeed int
}

func (c msCase) String() string {
	return fmt.Sprintf("seed %d: %s, %d groups, maxUnavailable %v, maxSurge %v, partition %v, kubelet delay %v, revert after %d pods, then scale to %d",
		c.startSeed, c.mode, c.groups, c.strategy.MaxUnavailable, c.strategy.MaxSurge, c.strategy.Partition, c.delay, c.revertAt, c.scaleTo)
}

// msCaseOf draws a scenario: the budgets and ratio come from rollouttest's
// strategy generator; a LatestRatio becomes the partition that keeps the rest.
func msCaseOf() *rapid.Generator[msCase] {
	return rapid.Custom(func(t *rapid.T) msCase {
		modes := []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode, servingv1.LockstepMode}
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		rm := map[servingv1.RolloutMode]rollout.Mode{servingv1.RollingMode: rollout.Rolling, servingv1.LockstepMode: rollout.Rolling,
			servingv1.GangMode: rollout.Gang, servingv1.GroupMode: rollout.Group}[mode]
		st := rollouttest.StrategyOf(rm, 4).Draw(t, "strategy")
		c := msCase{mode: mode, groups: int32(st.Replicas),
			strategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: st.MaxUnavailable, MaxSurge: st.MaxSurge},
			delay:    time.Duration(rapid.IntRange(0, 4).Draw(t, "delay")) * 50 * time.Millisecond,
			scaleTo:  int32(rapid.IntRange(1, 4).Draw(t, "scaleTo")),
		}
		if r := st.LatestRatio; r != nil {
			if r.Type == intstr.Int {
				c.strategy.Partition = intOrStr(intstr.FromInt(max(st.Replicas-r.IntValue(), 0)))
			} else {
				pct, _ := strconv.Atoi(r.StrVal[:len(r.StrVal)-1])
				c.strategy.Partition = intOrStr(intstr.FromString(fmt.Sprintf("%d%%", 100-pct)))
			}
		}
		if rapid.Bool().Draw(t, "revert") {
			c.revertAt = rapid.IntRange(1, 3).Draw(t, "revertAt")
		}
		return c
	})
}

// TestModelServingRandomRollouts runs generated scenarios on envtest: deploy, a
// new image (reverted part-way in some), then a scale, each waited for, with
// every pod event checked by rollouttest.Monitor and the end states by
// rollouttest.Converged. CI runs 4 scenarios; KPLAN_MS_CASES=<n> runs n.
func TestModelServingRandomRollouts(t *testing.T) {
	cases := 4
	if v := os.Getenv("KPLAN_MS_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KPLAN_MS_CASES=%q: want a number", v)
		}
		cases = n
	}
	gen := msCaseOf()
	for seed := range cases {
		c := gen.Example(seed)
		c.startSeed = seed
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Log(c)
			ns := newNamespace(t)
			ms, pw, _ := deployCase(t, ns, c)
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); pw.expect(m.Spec) })
			if c.revertAt > 0 {
				eventually(t, "pods on the new image", func() error {
					cur := getMS(t, ms)
					if n := len(msPods(t, ms)[cur.Status.UpdateRevision]); cur.Status.ObservedGeneration != cur.Generation || n < c.revertAt {
						if cur.Status.ObservedGeneration == cur.Generation && cur.Status.UpdateRevision != "" && isComplete(cur) {
							return nil // the partition keeps them back, or it finished first
						}
						return fmt.Errorf("%d pods on the new revision", n)
					}
					return nil
				})
				editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v1")(m); pw.expect(m.Spec) })
			}
			waitRolledOut(t, ms, pw, 90*time.Second)
			editModelServing(t, ms, func(m *servingv1.ModelServing) { m.Spec.Replicas = &c.scaleTo; pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			pw.finish()
		})
	}
}

func isComplete(ms *servingv1.ModelServing) bool {
	for _, c := range ms.Status.Conditions {
		if c.Type == servingv1.ConditionProgressing {
			return c.Reason == servingv1.ReasonRolloutComplete
		}
	}
	return false
}

// deployCase creates the case's ModelServing at engine:v1 and waits for it.
func deployCase(t *testing.T, ns string, c msCase) (*servingv1.ModelServing, *podWatch, *msKubelet) {
	t.Helper()
	k := startMSKubelet(t, ns, c.delay)
	pw := watchPods(t, ns, "rnd")
	ms := &servingv1.ModelServing{}
	ms.Namespace, ms.Name = ns, "rnd"
	ms.Spec = servingv1.ModelServingSpec{Replicas: &c.groups, Roles: msRoles("engine:v1"), RolloutStrategy: c.strategy}
	pw.expect(ms.Spec)
	if err := admin.Create(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 90*time.Second)
	return ms, pw, k
}
