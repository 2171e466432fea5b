package rollout_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// reasons is every reason constant of the package, by name.
var reasons = map[string]kplan.Reason{
	"ReasonBudget":          rollout.ReasonBudget,
	"ReasonWindow":          rollout.ReasonWindow,
	"ReasonNotAvailable":    rollout.ReasonNotAvailable,
	"ReasonRecovering":      rollout.ReasonRecovering,
	"ReasonScaleDown":       rollout.ReasonScaleDown,
	"ReasonComplete":        rollout.ReasonComplete,
	"ReasonUpdating":        rollout.ReasonUpdating,
	"ReasonLockstep":        rollout.ReasonLockstep,
	"ReasonFailed":          rollout.ReasonFailed,
	"ReasonLost":            rollout.ReasonLost,
	"ReasonStartTimeout":    rollout.ReasonStartTimeout,
	"ReasonGangMember":      rollout.ReasonGangMember,
	"ReasonQuota":           rollout.ReasonQuota,
	"ReasonNoRecover":       rollout.ReasonNoRecover,
	"ReasonReplacementWait": rollout.ReasonReplacementWait,
	"ReasonReleaseDelay":    rollout.ReasonReleaseDelay,
}

// validCondition returns what apimachinery finds wrong with a condition of
// reason and message.
func validCondition(reason kplan.Reason, message string) field.ErrorList {
	c := metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: string(reason), Message: message,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	return metav1validation.ValidateConditions([]metav1.Condition{c}, field.NewPath("status", "conditions"))
}

// TestReasonsAreValidConditionReasons: a metav1.Condition set from each reason
// constant passes apimachinery's validation, so a reconciler uses the reasons
// as they are. The constants are found by reading the package's source, so a
// reason added without being listed here fails, and no type of the package's
// own is named Reason.
func TestReasonsAreValidConditionReasons(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(reasons)) {
		t.Run(name, func(t *testing.T) {
			if errs := validCondition(reasons[name], "a message"); len(errs) > 0 {
				t.Fatalf("%s = %q: %v", name, reasons[name], errs.ToAggregate())
			}
		})
	}
	t.Run("every kplan.Reason constant of the package is listed", func(t *testing.T) {
		fset := token.NewFileSet()
		declared := map[string]bool{}
		entries, err := os.ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, e.Name(), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range g.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						if sp.Name.Name == "Reason" {
							t.Errorf("%s declares a type Reason of the package's own", e.Name())
						}
					case *ast.ValueSpec:
						if sel, ok := sp.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Reason" {
							for _, n := range sp.Names {
								declared[n.Name] = true
							}
						}
					}
				}
			}
		}
		if got, want := slices.Sorted(maps.Keys(declared)), slices.Sorted(maps.Keys(reasons)); !slices.Equal(got, want) {
			t.Fatalf("declared %v, listed %v", got, want)
		}
	})
	t.Run("the values are distinct", func(t *testing.T) {
		seen := map[kplan.Reason]string{}
		for name, r := range reasons {
			if other, dup := seen[r]; dup {
				t.Fatalf("%s and %s are both %q", name, other, r)
			}
			seen[r] = name
		}
	})
}

// TestStepReasonAndMessage: the step's own Reason and Message follow their rule
// (ReasonComplete and no message when Complete, ReasonUpdating when the step
// acts, else the first wait reason in order Budget, Window, ScaleDown,
// Recovering, NotAvailable), a condition set from them passes apimachinery's
// validation, and every Wait carries one of Plan's reasons and a message that
// the step's message repeats. Every step of each scenario's rollout in the
// simulator is checked, and the reasons met are counted, so the property
// cannot pass on steps that never wait or never complete.
func TestStepReasonAndMessage(t *testing.T) {
	order := []kplan.Reason{rollout.ReasonBudget, rollout.ReasonWindow, rollout.ReasonScaleDown, rollout.ReasonRecovering,
		rollout.ReasonNotAvailable}
	seen := map[kplan.Reason]int{}
	check := func(t *rapid.T, step rollout.Step, sc rollouttest.Scenario) {
		if errs := validCondition(step.Reason, step.Message); len(errs) > 0 {
			t.Fatalf("condition from the step: %v", errs.ToAggregate())
		}
		first := rollout.ReasonNotAvailable
		for _, r := range order {
			if slices.ContainsFunc(step.Waiting, func(w rollout.Wait) bool { return w.Reason == r }) {
				first = r
				break
			}
		}
		want := first
		switch {
		case step.Complete:
			want = rollout.ReasonComplete
		case !step.Empty():
			want = rollout.ReasonUpdating
		}
		if step.Reason != want || (step.Complete != (step.Message == "")) {
			t.Fatalf("reason %q, message %q; want %q\n%s", step.Reason, step.Message, want, sc)
		}
		for _, w := range step.Waiting {
			if !slices.Contains(order, w.Reason) || w.Message == "" {
				t.Fatalf("wait %+v: not one of Plan's reasons, or no message", w)
			}
			if !strings.Contains(step.Message, w.Message) {
				t.Fatalf("step message %q does not say %q", step.Message, w.Message)
			}
			seen[w.Reason]++
		}
		seen[step.Reason]++
	}
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		if n := len(sc.Replicas); n >= 2 && rapid.IntRange(0, 3).Draw(t, "recovering") == 0 {
			// One replica replaces another: recovery owns both.
			i := rapid.IntRange(0, n-1).Draw(t, "replacement")
			sc.Replicas[i].ReplacementFor = sc.Replicas[(i+1)%n].Name
		}
		sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
		for range rollouttest.ProgressBound(sc.Strategy) {
			step, err := rollout.Plan(sim.Replicas, sc.Strategy)
			if err != nil {
				t.Fatal(err)
			}
			check(t, step, sc)
			if step.Complete {
				break
			}
			sim.Apply(step)
			sim.Settle(nil)
		}
	})
	for _, r := range append(order, rollout.ReasonComplete, rollout.ReasonUpdating) {
		if seen[r] == 0 {
			t.Errorf("no step met reason %s", r)
		}
	}
}

// TestStepMessageListsFiveNamesPerReason: a long list of waiting replicas is
// cut to its first five names and a count, so a message stays short.
func TestStepMessageListsFiveNamesPerReason(t *testing.T) {
	replicas := replicasAt("web", 9, "1-a", ready)
	step, err := rollout.Plan(replicas, rollout.Strategy{TargetRevision: "2-b", Replicas: 9,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))})
	if err != nil {
		t.Fatal(err)
	}
	want := "update web-0; maxUnavailable budget exhausted: web-1, web-2, web-3, web-4, web-5 and 3 more"
	if step.Reason != rollout.ReasonUpdating || step.Message != want {
		t.Fatalf("got %s: %s\nwant Updating: %s", step.Reason, step.Message, want)
	}
}

// TestLockstepReasonAndMessage: the lockstep step's reason is its first
// unfinished role's, its message every unfinished role's with the role's name,
// and a role that reached the step and waits for the others says so; the
// message is cut to what a condition holds.
func TestLockstepReasonAndMessage(t *testing.T) {
	role := func(name string, n int, prefix string) rollout.Role {
		return rollout.Role{Name: name, Replicas: replicasAt(prefix, n, "1-a", ready), Strategy: rollout.Strategy{
			TargetRevision: "2-b", Replicas: n, History: []string{"1-a", "2-b"}, MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}}
	}
	// S = max(4/1, 2/1) = 4 steps; both roles run one replica at 2-b, so step
	// 1 is reached. At step 2 prefill runs ceil(2*4/4) = 2 at the target and
	// updates one more; decode runs ceil(2*2/4) = 1, has it, and waits.
	prefill, decode := role("prefill", 4, "p"), role("decode", 2, "d")
	prefill.Replicas[0].Revision, decode.Replicas[0].Revision = "2-b", "2-b"
	out, err := rollout.PlanLockstep([]rollout.Role{prefill, decode})
	if err != nil {
		t.Fatal(err)
	}
	want := "role prefill: update p-1; role decode: at step 2 of 4, waiting for the other roles"
	if out.Reason != rollout.ReasonUpdating || out.Message != want || out.Roles[1].Step.Reason != rollout.ReasonLockstep {
		t.Fatalf("got %s: %s (decode %s)\nwant Updating: %s", out.Reason, out.Message, out.Roles[1].Step.Reason, want)
	}
	// Many roles with long names: the message is cut to 32 KiB.
	var roles []rollout.Role
	for i := range 200 {
		roles = append(roles, role(fmt.Sprintf("role-%03d", i), 6, strings.Repeat("x", 200)+fmt.Sprint(i)))
	}
	out, err = rollout.PlanLockstep(roles)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validCondition(out.Reason, out.Message); len(errs) > 0 || !strings.HasSuffix(out.Message, "...") {
		t.Fatalf("%d bytes: %v", len(out.Message), errs.ToAggregate())
	}
}

// TestRecoverReasons: every reason PlanRecover gives comes with its message.
func TestRecoverReasons(t *testing.T) {
	failed := []kplan.Reason{rollout.ReasonFailed, rollout.ReasonLost, rollout.ReasonStartTimeout, rollout.ReasonGangMember}
	waiting := []kplan.Reason{rollout.ReasonQuota, rollout.ReasonNoRecover, rollout.ReasonReplacementWait, rollout.ReasonReleaseDelay}
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom([]rollout.Mode{rollout.Rolling, rollout.Gang}).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.Limits{MaxReplicas: 6, MaxColumns: 3}).Draw(t, "scenario")
		sim := &rollouttest.RecoverSimulator{Policy: recoverPolicy(t), Replicas: sc.Replicas, Now: t0, Tick: time.Minute,
			Faults: rollouttest.Faults{UpdateFails: 20, Unready: 20, Recovers: 20, Slow: 30}}
		for range 4 {
			step, err := sim.Reconcile()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range step.Failed {
				if !slices.Contains(failed, w.Reason) || w.Message == "" {
					t.Fatalf("failed %+v", w)
				}
			}
			for _, w := range step.Waiting {
				if !slices.Contains(waiting, w.Reason) || w.Message == "" {
					t.Fatalf("waiting %+v", w)
				}
			}
			sim.Settle(t)
		}
	})
}
