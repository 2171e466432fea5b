package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/manifest"
	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// lockstepOut is a DisaggregatedSet's next step as printed: every role's step, the
// roles moving together toward step Step of Steps.
type lockstepOut struct {
	Mode           string    `json:"mode"`
	TargetRevision string    `json:"targetRevision"`
	Step           int       `json:"step"`
	Steps          int       `json:"steps"`
	Complete       bool      `json:"complete"`
	Reason         string    `json:"reason"`
	Message        string    `json:"message,omitempty"`
	Roles          []roleOut `json:"roles"`
}

// roleOut is one role's step.
type roleOut struct {
	Role string `json:"role"`
	stepOut
}

// runLockstep plans a DisaggregatedSet's update: its roles in Lockstep mode, each
// role's groups in Gang mode (owners.DSRollout; flags given explicitly win, for
// every role). The target revision is --target, else the revision label of the
// set's newest LeaderWorkerSet in the input (by creation time).
func runLockstep(obj *manifest.Object, objs []manifest.Object, o *options, base rollout.Strategy, baseOpts rollout.PodOptions, pods []*corev1.Pod, podObjs []*manifest.Object) (any, error) {
	ds := &owners.DSObject{}
	if err := obj.Decode(ds); err != nil {
		return nil, err
	}
	ds.Namespace = namespaceOf(obj)
	target := o.target
	if target == "" {
		newest, err := newestLWS(objs, ds)
		if err != nil {
			return nil, err
		}
		target = newest
	}
	if target == "" {
		return nil, obj.Errorf("the revision to roll out is unknown: give --target, or the set's LeaderWorkerSets (kubectl get lws -l %s=%s -o yaml), whose label %s holds it",
			owners.DSNameLabel, ds.Name, owners.DSRevisionLabel)
	}
	pools, err := owners.DSRollout(ds, target, pods)
	if err != nil {
		return nil, obj.Errorf("%v", err)
	}
	roles := make([]rollout.Role, len(pools))
	for i, pool := range pools {
		s, opts := base, baseOpts
		fromPool(o, &s, &opts, pool.Strategy, pool.Options)
		if opts.MinReadySeconds > 0 {
			opts.Now = o.now.Time()
		}
		replicas, err := rollout.FromPods(pool.Pods, opts)
		if err != nil {
			return nil, blame(fmt.Errorf("role %s: %w", pool.Role, err), nil, objectsOf(pool.Pods, pods, podObjs))
		}
		roles[i] = rollout.Role{Name: pool.Role, Replicas: replicas, Strategy: s}
	}
	if !slices.ContainsFunc(pools, func(p owners.Pool) bool { return len(p.Pods) > 0 }) {
		return nil, fmt.Errorf("no pods of %s in %s", obj.ID(), inputs(o))
	}
	if o.simulate {
		return simulateLockstep(target, roles, o.maxSteps)
	}
	step, err := rollout.PlanLockstep(roles)
	if err != nil {
		return nil, blame(err, obj, podObjs)
	}
	out := lockstepOut{
		Mode: "lockstep", TargetRevision: target, Step: step.Index, Steps: step.Steps, Complete: step.Complete,
		Reason: string(step.Reason), Message: step.Message,
	}
	for i, rs := range step.Roles {
		out.Roles = append(out.Roles, roleOut{Role: rs.Name, stepOut: toStepOut(roles[i].Strategy, rs.Step)})
	}
	return out, nil
}

// newestLWS returns the revision label of the set's newest LeaderWorkerSet in the
// input (by creation time, then name), or "".
func newestLWS(objs []manifest.Object, ds *owners.DSObject) (string, error) {
	var newest *owners.LWSObject
	for _, obj := range byKind(objs, "LeaderWorkerSet") {
		if namespaceOf(obj) != ds.Namespace || !strings.HasPrefix(obj.APIVersion, owners.LeaderWorkerSet.GVK.Group+"/") {
			continue
		}
		lws := &owners.LWSObject{}
		if err := obj.Decode(lws); err != nil {
			return "", err
		}
		if lws.Labels[owners.DSNameLabel] != ds.Name || lws.Labels[owners.DSRevisionLabel] == "" {
			continue
		}
		if newest == nil || later(lws.ObjectMeta, newest.ObjectMeta) {
			newest = lws
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.Labels[owners.DSRevisionLabel], nil
}

// later reports whether a was created after b (by name when at the same time).
func later(a, b metav1.ObjectMeta) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// lockstepSimulation is a whole simulated lockstep rollout: a row per role and
// reconcile.
type lockstepSimulation struct {
	Mode           string            `json:"mode"`
	TargetRevision string            `json:"targetRevision"`
	Roles          []roleSummary     `json:"roles"`
	Reconciles     int               `json:"reconciles"`
	Steps          []lockstepSimStep `json:"steps"`
}

// roleSummary is a role's replicas and budget.
type roleSummary struct {
	Role     string    `json:"role"`
	Replicas int       `json:"replicas"`
	Budget   budgetOut `json:"budget"`
}

// lockstepSimStep is one role's share of a simulated reconcile, on its way to step
// Step of the lockstep rollout.
type lockstepSimStep struct {
	Role string `json:"role"`
	Step int    `json:"step"`
	simStep
}

// Table prints the simulation as a table.
func (s lockstepSimulation) Table() []byte {
	var b buffer
	fmt.Fprintf(&b, "%s rollout to %s:", s.Mode, s.TargetRevision)
	for i, r := range s.Roles {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %s %d replicas, maxUnavailable %d, maxSurge %d", r.Role, r.Replicas, r.Budget.MaxUnavailable, r.Budget.MaxSurge)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECONCILE\tROLE\tSTEP\tUPDATE\tCREATE\tDELETE\tREPAIR\tWAITING\tLATEST\tAVAILABLE\tAT TARGET")
	for _, st := range s.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", st.Reconcile, st.Role, st.Step, st.row())
	}
	_ = tw.Flush()
	return b.Bytes()
}

// simulateLockstep runs a lockstep rollout to completion: a rollouttest simulator per
// role, every reconcile planning the roles together with rollout.PlanLockstep,
// checking each role's step against the rollout invariants (rollouttest.Check) and
// applying it; replicas become available one reconcile later.
func simulateLockstep(target string, roles []rollout.Role, maxSteps int) (lockstepSimulation, error) {
	out := lockstepSimulation{Mode: "lockstep", TargetRevision: target}
	sims := make([]*rollouttest.Simulator, len(roles))
	total := 0
	for i, r := range roles {
		sim, pods, err := newSimulator(r.Strategy, r.Replicas)
		if err != nil {
			return out, fmt.Errorf("role %s: %w", r.Name, err)
		}
		if total += pods; total > MaxSimulatedPods {
			return out, fmt.Errorf("simulation: %d pods in all roles is more than the %d pods kplan simulates", total, MaxSimulatedPods)
		}
		sims[i] = sim
	}
	for n := 1; n <= maxSteps; n++ {
		now := make([]rollout.Role, len(roles))
		for i, r := range roles {
			now[i] = rollout.Role{Name: r.Name, Replicas: rollouttest.Clone(sims[i].Replicas), Strategy: r.Strategy}
		}
		step, err := rollout.PlanLockstep(now)
		if err != nil {
			return out, fmt.Errorf("simulation: reconcile %d: %v", n, err)
		}
		for i, rs := range step.Roles {
			if err := rollouttest.Check(now[i].Replicas, roles[i].Strategy, rs.Step); err != nil {
				return out, fmt.Errorf("simulation: reconcile %d: role %s: %v", n, rs.Name, err)
			}
			if !rs.Step.Complete {
				sims[i].Apply(rs.Step)
			}
			if n == 1 {
				out.Roles = append(out.Roles, roleSummary{Role: rs.Name, Replicas: roles[i].Strategy.Replicas, Budget: budgetOut(rs.Step.Budget)})
			}
			out.Steps = append(out.Steps, lockstepSimStep{Role: rs.Name, Step: step.Index, simStep: toSimStep(n, rs.Step, sims[i].Replicas, target)})
		}
		out.Reconciles = n
		if step.Complete {
			return out, nil
		}
		for _, sim := range sims {
			sim.Settle(nil)
		}
	}
	return out, fmt.Errorf("simulation: not complete after %d reconciles (--max-steps)", maxSteps)
}
