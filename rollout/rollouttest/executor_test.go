package rollouttest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/exact"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

var modes = []rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}

// apiLike is an executor that behaves like a controller on an API server, over
// a Simulator: its cache catches up with the cluster only at some Advances (so
// Observe lags), and Execute does only a prefix of a step's actions and then
// fails, as a conflict would stop it. With honest set it does neither.
type apiLike struct {
	sim     *rollouttest.Simulator
	cache   []rollout.Replica
	honest  bool
	t       *rapid.T
	partial int
}

func (a *apiLike) Observe(context.Context) ([]rollout.Replica, error) {
	return rollouttest.Clone(a.cache), nil
}

func (a *apiLike) Execute(ctx context.Context, replicas []rollout.Replica, s rollout.Strategy, step rollout.Step) error {
	if a.honest {
		return a.sim.Execute(ctx, replicas, s, step)
	}
	// Keep a prefix of the actions: updates, then deletes, then creates.
	n := len(step.Update) + len(step.Delete) + len(step.Create)
	keep := rapid.IntRange(0, n).Draw(a.t, "keep")
	var part rollout.Step
	for _, u := range step.Update {
		if keep > 0 {
			part.Update, keep = append(part.Update, u), keep-1
		}
	}
	for _, d := range step.Delete {
		if keep > 0 {
			part.Delete, keep = append(part.Delete, d), keep-1
		}
	}
	for _, c := range step.Create {
		if keep > 0 {
			part.Create, keep = append(part.Create, c), keep-1
		}
	}
	err := a.sim.Execute(ctx, replicas, s, part)
	if len(part.Update)+len(part.Delete)+len(part.Create) < n {
		a.partial++
		return errors.Join(err, errors.New("conflict: the object has been modified"))
	}
	return err
}

func (a *apiLike) Advance(ctx context.Context, now time.Time, t *rapid.T) error {
	if err := a.sim.Advance(ctx, now, t); err != nil {
		return err
	}
	if a.honest || rapid.Bool().Draw(a.t, "cacheCatchesUp") {
		a.cache = rollouttest.Clone(a.sim.Replicas)
	}
	return nil
}

// TestDriverRunsTheSimulatorThroughTheInterface: every generated scenario, in
// every mode, driven through the Executor interface without faults, updating
// in place or by deleting and creating pods again, completes within
// ProgressBound and converges; the driver's clock moves by Tick.
func TestDriverRunsTheSimulatorThroughTheInterface(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		sim := rollouttest.NewSimulator(sc, rollouttest.NoFaults)
		sim.Recreate = rapid.Bool().Draw(t, "recreate")
		var ex rollouttest.Executor = sim
		d := &rollouttest.Driver{Executor: ex, Strategy: sc.Strategy, Now: rollouttest.Epoch, Tick: time.Minute}
		n, err := d.Run(context.Background(), 0)
		if err != nil {
			t.Fatalf("%v\n%s", err, sc)
		}
		if n > rollouttest.ProgressBound(sc.Strategy) || n != d.Reconciles {
			t.Fatalf("%d reconciles (driver counted %d), bound %d", n, d.Reconciles, rollouttest.ProgressBound(sc.Strategy))
		}
		if want := rollouttest.Epoch.Add(time.Duration(n-1) * time.Minute); !d.Now.Equal(want) {
			t.Fatalf("clock at %s after %d reconciles, want %s", d.Now, n, want)
		}
		replicas, _ := ex.Observe(context.Background())
		if err := rollouttest.Converged(replicas, sc.Strategy); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDriverUnderLagAndPartialFailure: with an executor whose observations lag
// and whose Execute does only part of a step, every step the driver plans still
// passes Check against what it observed; once the executor behaves, the
// rollout completes within ProgressBound and converges.
func TestDriverUnderLagAndPartialFailure(t *testing.T) {
	for _, mode := range modes {
		t.Run(fmt.Sprintf("mode %s", mode), func(t *testing.T) {
			partial := 0
			rapid.Check(t, func(t *rapid.T) {
				sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
				ex := &apiLike{sim: rollouttest.NewSimulator(sc, rollouttest.Faults{
					UpdateFails: rapid.IntRange(0, 30).Draw(t, "updateFails"),
					Unready:     rapid.IntRange(0, 20).Draw(t, "unready"),
					Recovers:    rapid.IntRange(0, 50).Draw(t, "recovers"),
					Slow:        rapid.IntRange(0, 60).Draw(t, "slow"),
				}), cache: rollouttest.Clone(sc.Replicas), t: t}
				d := &rollouttest.Driver{Executor: ex, Strategy: sc.Strategy, T: t}
				ctx := context.Background()
				for range 8 {
					if _, err := d.Reconcile(ctx); err != nil {
						t.Fatalf("%v\n%s", err, sc)
					}
					if err := d.Advance(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if d.ExecuteErrors < ex.partial {
					t.Fatalf("%d partial executes, %d counted", ex.partial, d.ExecuteErrors)
				}
				partial += ex.partial
				// The cluster heals and the executor behaves: a fault-free rollout from here.
				ex.honest, ex.sim.Faults, d.T = true, rollouttest.NoFaults, nil
				if err := d.Advance(ctx); err != nil {
					t.Fatal(err)
				}
				d.Reconciles = 0
				if _, err := d.Run(ctx, 0); err != nil {
					t.Fatalf("after the faults: %v\nstarted from:\n%s", err, sc)
				}
			})
			if partial == 0 {
				t.Fatal("no Execute was ever partial: the test exercised nothing")
			}
		})
	}
}

// brokenExecutor is a simulator with one method broken.
type brokenExecutor struct {
	*rollouttest.Simulator
	observe, execute, advance error
}

func (b brokenExecutor) Observe(ctx context.Context) ([]rollout.Replica, error) {
	if b.observe != nil {
		return nil, b.observe
	}
	return b.Simulator.Observe(ctx)
}

func (b brokenExecutor) Execute(ctx context.Context, replicas []rollout.Replica, s rollout.Strategy, step rollout.Step) error {
	if b.execute != nil {
		return b.execute
	}
	return b.Simulator.Execute(ctx, replicas, s, step)
}

func (b brokenExecutor) Advance(ctx context.Context, now time.Time, t *rapid.T) error {
	if b.advance != nil {
		return b.advance
	}
	return b.Simulator.Advance(ctx, now, t)
}

// TestDriverReportsBrokenExecutors: a stuck rollout fails at the progress bound
// with the executor's last error; observe and advance errors stop the run at
// once, naming the reconcile.
func TestDriverReportsBrokenExecutors(t *testing.T) {
	// 4 replicas, one at a time: ProgressBound 2 * 4/1 + 2 = 10.
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	tests := []struct {
		name           string
		ex             brokenExecutor
		wantReconciles int
		want           string
	}{
		{"an executor that never executes is stuck at the bound", brokenExecutor{execute: errors.New("forbidden")}, 10,
			"reconcile 10: not complete after 10 reconciles (the bound); 10 execute errors, the last: forbidden"},
		{"an observe error stops the first reconcile", brokenExecutor{observe: errors.New("cache not synced")}, 1,
			"reconcile 1: observe: cache not synced"},
		{"an advance error stops after the first reconcile", brokenExecutor{advance: errors.New("kubelet gone")}, 1,
			"reconcile 1: advance to 2026-01-01T00:00:10Z: kubelet gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ex.Simulator = rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 4, "1-a", "", 0)},
				rollouttest.NoFaults)
			d := &rollouttest.Driver{Executor: tt.ex, Strategy: s, Now: rollouttest.Epoch}
			n, err := d.Run(context.Background(), 0)
			if err == nil || err.Error() != tt.want || n != tt.wantReconciles {
				t.Fatalf("after %d reconciles: %v\nwant after %d: %s", n, err, tt.wantReconciles, tt.want)
			}
		})
	}
	// Without faults it takes 5: one update per reconcile, and a fifth that finds
	// all four available and reports Complete. A limit of 4 is not enough.
	for limit, want := range map[int]string{0: "5 <nil>", 4: "4 reconcile 4: not complete after 4 reconciles (the bound)"} {
		sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 4, "1-a", "", 0)}, rollouttest.NoFaults)
		d := &rollouttest.Driver{Executor: sim, Strategy: s}
		if n, err := d.Run(context.Background(), limit); fmt.Sprint(n, " ", err) != want {
			t.Fatalf("limit %d: got %d %v, want %s", limit, n, err, want)
		}
	}
}

// TestDriverRejectsBadSteps: a step that breaks an invariant, a planner error
// and a planner that writes to its input stop the driver before anything is
// executed.
func TestDriverRejectsBadSteps(t *testing.T) {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 4,
		MaxUnavailable: ptr(intstr.FromInt32(1)), MaxSurge: ptr(intstr.FromInt32(0))}
	tests := []struct {
		name    string
		planner rollouttest.PlannerFunc
		want    string
	}{
		{"two updates with maxUnavailable 1", func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
			return rollout.Step{Update: []rollout.Update{{Replica: "r-0", From: "1-a", To: "2-b", Pods: []string{"r-0"}},
				{Replica: "r-1", From: "1-a", To: "2-b", Index: 1, Pods: []string{"r-1"}}}}, nil
		}, "reconcile 1: column \"\": availability 4 -> 2, below floor 3 (n=4, maxUnavailable=1)"},
		{"a planner error", func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
			return rollout.Step{}, errors.New("boom")
		}, "reconcile 1: boom"},
		{"a planner that writes to its input", func(rs []rollout.Replica, s rollout.Strategy) (rollout.Step, error) {
			rs[0].Revision = "2-b"
			return rollout.Step{}, nil
		}, "reconcile 1: the planner modified its input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 4, "1-a", "", 0)}, rollouttest.NoFaults)
			d := &rollouttest.Driver{Executor: sim, Planner: tt.planner, Strategy: s}
			if _, err := d.Reconcile(context.Background()); err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			for _, r := range sim.Replicas {
				if r.Revision != "1-a" {
					t.Fatalf("replica %s moved to %s: a rejected step was executed", r.Name, r.Revision)
				}
			}
		})
	}
}

// TestSimulatorExecuteReportsNotFound: a step planned from a stale observation
// names replicas that are gone; Execute does the rest and says which.
func TestSimulatorExecuteReportsNotFound(t *testing.T) {
	s := rollout.Strategy{TargetRevision: "2-b", Replicas: 2}
	sim := rollouttest.NewSimulator(rollouttest.Scenario{Strategy: s, Replicas: fleet("r", 2, "1-a", "", 0)}, rollouttest.NoFaults)
	err := sim.Execute(context.Background(), sim.Replicas, s, rollout.Step{
		Update: []rollout.Update{{Replica: "gone", From: "1-a", To: "2-b"}, {Replica: "r-1", From: "1-a", To: "2-b", Pods: []string{"r-1"}},
			{Replica: "r-0", From: "1-a", To: "2-b", Pods: []string{"r-9"}}},
		Delete: []rollout.Delete{{Replica: "also-gone"}}})
	if err == nil || err.Error() != "not found: gone, r-9, also-gone" {
		t.Fatalf("got %v", err)
	}
	if sim.Replicas[0].Revision != "1-a" || sim.Replicas[1].Revision != "2-b" {
		t.Fatalf("replicas %s", rollouttest.Scenario{Replicas: sim.Replicas})
	}
}

// renaming is a simulator whose observations name replicas pod-<name>, as a
// controller naming its own pods would; it maps the names back on Execute.
type renaming struct{ *rollouttest.Simulator }

func (r renaming) Observe(ctx context.Context) ([]rollout.Replica, error) {
	rs, err := r.Simulator.Observe(ctx)
	for i := range rs {
		rs[i].Name = "pod-" + rs[i].Name
	}
	return rs, err
}

func (r renaming) Execute(ctx context.Context, replicas []rollout.Replica, s rollout.Strategy, step rollout.Step) error {
	unname := func(names []string) []string {
		out := slices.Clone(names)
		for i := range out {
			out[i] = strings.TrimPrefix(out[i], "pod-")
		}
		return out
	}
	step.Update, step.Delete, step.Repair = slices.Clone(step.Update), slices.Clone(step.Delete), slices.Clone(step.Repair)
	for i := range step.Update {
		step.Update[i].Replica = strings.TrimPrefix(step.Update[i].Replica, "pod-")
		step.Update[i].Pods = unname(step.Update[i].Pods)
	}
	for i := range step.Delete {
		step.Delete[i].Replica = strings.TrimPrefix(step.Delete[i].Replica, "pod-")
		step.Delete[i].Pods = unname(step.Delete[i].Pods)
	}
	for i := range step.Repair {
		step.Repair[i].Replica = strings.TrimPrefix(step.Repair[i].Replica, "pod-")
	}
	return r.Simulator.Execute(ctx, replicas, s, step)
}

// recording is a simulator that keeps what each Observe returned and what
// Execute was given.
type recording struct {
	*rollouttest.Simulator
	observed, executed [][]rollout.Replica
}

func (r *recording) Observe(ctx context.Context) ([]rollout.Replica, error) {
	rs, err := r.Simulator.Observe(ctx)
	r.observed = append(r.observed, rollouttest.Clone(rs))
	return rs, err
}

func (r *recording) Execute(ctx context.Context, replicas []rollout.Replica, s rollout.Strategy, step rollout.Step) error {
	r.executed = append(r.executed, rollouttest.Clone(replicas))
	return r.Simulator.Execute(ctx, replicas, s, step)
}

// TestDriverGivesExecuteThePlannedReplicas: every Execute gets the replicas the
// step was planned from (what that reconcile observed), not a later view, so
// an executor maps the step's names onto what it planned from without
// observing again.
func TestDriverGivesExecuteThePlannedReplicas(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.DefaultLimits).Draw(t, "scenario")
		ex := &recording{Simulator: rollouttest.NewSimulator(sc, rollouttest.NoFaults)}
		d := &rollouttest.Driver{Executor: ex, Strategy: sc.Strategy, Now: rollouttest.Epoch}
		if _, err := d.Run(context.Background(), 0); err != nil {
			t.Fatalf("%v\n%s", err, sc)
		}
		// The last reconcile is Complete and not executed.
		if len(ex.executed) != len(ex.observed)-1 {
			t.Fatalf("%d observations, %d executes", len(ex.observed), len(ex.executed))
		}
		for i, rs := range ex.executed {
			if diff := cmp.Diff(ex.observed[i], rs, exact.Options); diff != "" {
				t.Fatalf("execute %d got other replicas than reconcile %d observed (-observed +executed):\n%s", i+1, i+1, diff)
			}
		}
	})
}

// TestExhaustiveDrivesItsExecutor: Exhaustive starts one executor per scenario
// and checks what it observes; an executor that does nothing is caught.
func TestExhaustiveDrivesItsExecutor(t *testing.T) {
	scope := rollouttest.Scope{Mode: rollout.Gang, Replicas: 2, Columns: 2, Revisions: 2, Missing: true,
		States: []rollout.State{good}, VersionOrders: []rollout.VersionOrder{rollout.LessFirst}}
	started := 0
	e := rollouttest.Exhaustive{Scope: scope, Executor: func(sc rollouttest.Scenario) (rollouttest.Executor, error) {
		started++
		return renaming{rollouttest.NewSimulator(sc, rollouttest.NoFaults)}, nil
	}}
	rep, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := (&rollouttest.Exhaustive{Scope: scope}).Run()
	if err != nil {
		t.Fatal(err)
	}
	if started != rep.Scenarios || rep != plain {
		t.Fatalf("%d executors started for %+v; the simulator alone gives %+v", started, rep, plain)
	}
	e.Executor = func(sc rollouttest.Scenario) (rollouttest.Executor, error) {
		return brokenExecutor{Simulator: rollouttest.NewSimulator(sc, rollouttest.NoFaults), execute: errors.New("forbidden")}, nil
	}
	_, err = e.Run()
	var v *rollouttest.Violation
	if !errors.As(err, &v) || !strings.Contains(v.Err.Error(), "not complete after") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("got %v, want a violation: not complete, forbidden", err)
	}
	e.Executor = func(rollouttest.Scenario) (rollouttest.Executor, error) { return nil, errors.New("no cluster") }
	if _, err = e.Run(); !errors.As(err, &v) || !strings.Contains(err.Error(), "starting the executor: no cluster") {
		t.Fatalf("got %v, want a violation starting the executor", err)
	}
}
