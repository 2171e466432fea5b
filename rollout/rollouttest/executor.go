package rollouttest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
)

// Executor is the cluster side of a rollout under test: it carries out the
// steps a [Planner] plans, reports what the replicas look like, and lets time
// pass. [Simulator] is one; a controller running against a real or test API
// server is another, so the same scenarios and checks run against both.
//
// A [Driver] calls it in a loop: Observe, plan, [Check], Execute, Advance.
// An implementation talking to an API server may behave like one:
//
//   - Observe may lag behind Execute (an informer cache): the driver plans only
//     from what Observe returns and never assumes a step took effect. An
//     executor that acts on a stale plan twice (creating again what it created
//     a reconcile ago) is the controller's bug, caught by its own expectations
//     and by checks on the real state, not by the driver.
//   - Execute may do part of a step and return an error (a conflict, a refused
//     create). The driver counts the error and plans anew from the next
//     observation, as a controller's next reconcile would; it never replays an
//     old step.
//   - Time comes in as a parameter: the driver passes the clock to Advance,
//     which is where pods become ready (after minReadySeconds, measured against
//     that clock), stay pending, fail or recover.
type Executor interface {
	// Observe returns the replicas as the controller sees them now: the input of
	// the next plan. The caller owns the result and may keep it.
	Observe(ctx context.Context) ([]rollout.Replica, error)
	// Execute carries out step, planned under strategy from replicas (what
	// Observe returned), so an executor need not observe again to map the
	// step's names onto its pods. Created replicas run the Create's revision and
	// serve strategy.TargetDataRevision. It returns an error when some actions
	// were not done; what was done stays done. It must not modify replicas or
	// step.
	Execute(ctx context.Context, replicas []rollout.Replica, strategy rollout.Strategy, step rollout.Step) error
	// Advance lets the world move on to now: pending replicas become ready or
	// fail, available ones may become unready, failed ones may recover. t draws
	// the faults, so rapid can shrink them; with a nil t nothing random happens.
	Advance(ctx context.Context, now time.Time, t *rapid.T) error
}

// Observe returns a copy of the replicas.
func (s *Simulator) Observe(context.Context) ([]rollout.Replica, error) {
	return Clone(s.Replicas), nil
}

// Execute applies step like [Simulator.Apply], creating replicas that serve
// strategy.TargetDataRevision; it reads no more of replicas than the step
// does. Updates, deletes and repairs of replicas or pods that do not exist (a
// step planned from a stale observation) are skipped and reported in the
// error, as an API server would answer NotFound, and so are creates of members
// whose column has a pod (AlreadyExists); the rest is applied.
func (s *Simulator) Execute(_ context.Context, _ []rollout.Replica, strategy rollout.Strategy, step rollout.Step) error {
	notFound, present := s.apply(step, strategy)
	var errs []error
	if len(notFound) > 0 {
		errs = append(errs, fmt.Errorf("not found: %s", strings.Join(notFound, ", ")))
	}
	if len(present) > 0 {
		errs = append(errs, fmt.Errorf("members already exist: %s", strings.Join(present, ", ")))
	}
	return errors.Join(errs...)
}

// Advance settles the replicas once ([Simulator.Settle]); the simulator has no
// clock, so now is not read.
func (s *Simulator) Advance(_ context.Context, _ time.Time, t *rapid.T) error {
	s.Settle(t)
	return nil
}

// DefaultTick is how far a [Driver] moves its clock per Advance when Tick is 0.
const DefaultTick = 10 * time.Second

// Driver runs a controller's reconcile loop against an [Executor]: each
// Reconcile observes the replicas, plans with Planner, checks the step with
// [Check] against the replicas it was planned from, and executes it; Advance
// moves the clock by Tick and lets the executor's world move on. Run repeats
// both until the plan reports Complete and checks [Converged].
//
// Set Strategy between reconciles to change course (roll back, scale, change
// the ratio), as an operator editing the spec would.
type Driver struct {
	// Executor is the cluster side.
	Executor Executor
	// Planner plans each reconcile; nil means [DefaultPlanner].
	Planner Planner
	// Strategy is planned with and passed to Execute.
	Strategy rollout.Strategy
	// Now is the clock passed to Advance.
	Now time.Time
	// Tick is how far Advance moves Now; 0 means [DefaultTick].
	Tick time.Duration
	// T draws the executor's faults in Advance; nil draws none.
	T *rapid.T
	// Reconciles counts calls to Reconcile.
	Reconciles int
	// ExecuteErrors counts the errors Execute returned; LastExecuteError is the
	// latest of them.
	ExecuteErrors    int
	LastExecuteError error
}

// Reconcile observes, plans, checks and executes one step, and returns it. An
// error from Observe or the planner, a planner that modifies its input, or a
// step that fails [Check] is returned (prefixed with the reconcile's number);
// an error from Execute is counted, not returned, since the next reconcile
// retries from a fresh observation. A Complete step is not executed.
func (d *Driver) Reconcile(ctx context.Context) (rollout.Step, error) {
	_, step, err := d.reconcile(ctx)
	return step, err
}

// reconcile is Reconcile, also returning the replicas the step was planned from.
func (d *Driver) reconcile(ctx context.Context) ([]rollout.Replica, rollout.Step, error) {
	d.Reconciles++
	replicas, err := d.Executor.Observe(ctx)
	if err != nil {
		return nil, rollout.Step{}, &reconcileError{n: d.Reconciles, err: fmt.Errorf("observe: %w", err)}
	}
	planner := d.Planner
	if planner == nil {
		planner = DefaultPlanner
	}
	in := Clone(replicas)
	step, err := planner.Plan(in, d.Strategy)
	if !reflect.DeepEqual(in, replicas) {
		return replicas, step, &reconcileError{n: d.Reconciles, err: errors.New("the planner modified its input")}
	}
	if err != nil {
		return replicas, step, &reconcileError{n: d.Reconciles, plan: true, err: err}
	}
	if err := Check(replicas, d.Strategy, step); err != nil {
		return replicas, step, &reconcileError{n: d.Reconciles, err: err}
	}
	if step.Complete {
		return replicas, step, nil
	}
	if err := d.Executor.Execute(ctx, Clone(replicas), d.Strategy, step); err != nil {
		d.ExecuteErrors++
		d.LastExecuteError = err
	}
	return replicas, step, nil
}

// Advance moves Now by Tick and calls the executor's Advance.
func (d *Driver) Advance(ctx context.Context) error {
	tick := d.Tick
	if tick == 0 {
		tick = DefaultTick
	}
	d.Now = d.Now.Add(tick)
	if err := d.Executor.Advance(ctx, d.Now, d.T); err != nil {
		return &reconcileError{n: d.Reconciles, err: fmt.Errorf("advance to %s: %w", d.Now.Format(time.RFC3339), err)}
	}
	return nil
}

// Run reconciles and advances until a step reports Complete, at most limit
// reconciles (0 or less means [ProgressBound] of Strategy, the bound for a world
// without faults: pass more when the executor injects faults, lags or fails).
// It returns how many reconciles the driver has made. The replicas a Complete
// step was planned from must pass [Converged]; a rollout still going at the
// limit is an error naming the last Execute error, if any.
func (d *Driver) Run(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		// At least one reconcile, so that a strategy the planner rejects says why.
		limit = max(ProgressBound(d.Strategy), 1)
	}
	for range limit {
		replicas, step, err := d.reconcile(ctx)
		if err != nil {
			return d.Reconciles, err
		}
		if step.Complete {
			if err := Converged(replicas, d.Strategy); err != nil {
				return d.Reconciles, &reconcileError{n: d.Reconciles, err: fmt.Errorf("complete but not converged: %w", err)}
			}
			return d.Reconciles, nil
		}
		if err := d.Advance(ctx); err != nil {
			return d.Reconciles, err
		}
	}
	err := fmt.Errorf("not complete after %d reconciles (the bound)", limit)
	if d.ExecuteErrors > 0 {
		err = fmt.Errorf("%w; %d execute errors, the last: %w", err, d.ExecuteErrors, d.LastExecuteError)
	}
	return d.Reconciles, &reconcileError{n: d.Reconciles, err: err}
}

// reconcileError is an error of one reconcile (n counts from 1); plan is set
// when the planner returned it.
type reconcileError struct {
	n    int
	plan bool
	err  error
}

func (e *reconcileError) Error() string { return fmt.Sprintf("reconcile %d: %v", e.n, e.err) }

func (e *reconcileError) Unwrap() error { return e.err }
