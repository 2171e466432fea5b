package operator_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// fault is one thing the world does to a ModelServing during a rollout.
type fault struct {
	// after is how long after the previous fault (or the spec change) it
	// happens.
	after time.Duration
	// kind: "delete" a pod (gracefully), "fail" a pod (its process exits; only
	// with a recovery policy, without one a failed pod stays failed), or
	// "restart" the operator (a new process: empty cache and expectations).
	kind string
	// pod picks the victim among the live pods, in name order (modulo their
	// number).
	pod int
}

func (f fault) String() string {
	if f.kind == "restart" {
		return fmt.Sprintf("%v: restart the operator", f.after)
	}
	return fmt.Sprintf("%v: %s pod #%d", f.after, f.kind, f.pod)
}

// faultCase is a generated scenario (msCaseOf) with faults during its rollout.
type faultCase struct {
	msCase
	recovery bool
	faults   []fault
}

func faultCaseOf() *rapid.Generator[faultCase] {
	return rapid.Custom(func(t *rapid.T) faultCase {
		c := faultCase{msCase: msCaseOf().Draw(t, "case"), recovery: rapid.Bool().Draw(t, "recovery")}
		kinds := []string{"delete", "restart"}
		if c.recovery {
			kinds = append(kinds, "fail")
		}
		for i := range rapid.IntRange(1, 4).Draw(t, "faults") {
			c.faults = append(c.faults, fault{
				after: time.Duration(rapid.IntRange(0, 15).Draw(t, fmt.Sprint("after", i))) * 100 * time.Millisecond,
				kind:  rapid.SampledFrom(kinds).Draw(t, fmt.Sprint("kind", i)),
				pod:   rapid.IntRange(0, 100).Draw(t, fmt.Sprint("pod", i)),
			})
		}
		return c
	})
}

// TestModelServingRandomFaults runs generated rollouts (mode, budgets,
// partition, groups) on the test kubelet while the world interferes: pods
// deleted by hand, pods failing (with a recovery policy), the operator
// restarted, at random points. Every pod event is checked (rollouttest.Monitor,
// with the world's own deletions and failures set aside, and the readiness gate
// check), and every rollout must converge, as must the scale that follows it.
// CI runs 4 cases;
// KPLAN_FAULT_CASES=<n> runs n.
func TestModelServingRandomFaults(t *testing.T) {
	cases := 4
	if v := os.Getenv("KPLAN_FAULT_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KPLAN_FAULT_CASES=%q: want a number", v)
		}
		cases = n
	}
	gen := faultCaseOf()
	for seed := range cases {
		c := gen.Example(seed)
		c.startSeed = seed
		c.revertAt = 0 // the faults are the interference here
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("%s, recovery %v, faults %v", c.msCase, c.recovery, c.faults)
			ctx := context.Background()
			ns := newNamespace(t)
			ms, pw, k := deployFaultCase(t, ns, c)
			pw.checkGates(true)
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImageAndEnv("engine:v2")(m); pw.expect(m.Spec) })
			for _, f := range c.faults {
				time.Sleep(f.after)
				if f.kind == "restart" {
					restartManager(t, nil)
					continue
				}
				var pods corev1.PodList
				if err := admin.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
					t.Fatal(err)
				}
				pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
					return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed
				})
				if len(pods.Items) == 0 {
					continue
				}
				slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
				victim := &pods.Items[f.pod%len(pods.Items)]
				pw.worldFault(victim, f.kind == "delete")
				switch f.kind {
				case "delete":
					if err := admin.Delete(ctx, victim); err != nil && !apierrors.IsNotFound(err) {
						t.Fatal(err)
					}
				case "fail":
					k.fail(t, victim.Name)
				}
			}
			waitRolledOut(t, ms, pw, 180*time.Second)
			editModelServing(t, ms, func(m *servingv1.ModelServing) { m.Spec.Replicas = &c.scaleTo; pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			pw.finish()
		})
	}
}

// deployFaultCase creates the case's ModelServing at engine:v1 (with a recovery
// policy when the case has one) and waits for it.
func deployFaultCase(t *testing.T, ns string, c faultCase) (*servingv1.ModelServing, *podWatch, *msKubelet) {
	t.Helper()
	k := startMSKubelet(t, ns, c.delay)
	pw := watchPods(t, ns, "flt")
	ms := &servingv1.ModelServing{}
	ms.Namespace, ms.Name = ns, "flt"
	ms.Spec = servingv1.ModelServingSpec{Replicas: &c.groups, Roles: msRoles("engine:v1"), RolloutStrategy: c.strategy}
	if c.recovery {
		ms.Spec.RecoveryPolicy = &servingv1.RecoveryPolicy{Strategy: servingv1.CreateThenDelete}
	}
	pw.expect(ms.Spec)
	if err := admin.Create(t.Context(), ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 90*time.Second)
	return ms, pw, k
}
