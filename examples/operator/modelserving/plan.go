package modelserving

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplan-dev/kplan"
	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/rollout"
)

// The pure half of the ModelServing controller: pods in, rollout input and plan
// out. How a ModelServing maps onto rollout's replicas, per mode:
//
//   - Rolling: every role is a pool of its own; a replica is one pod, the pool
//     wants spec.replicas x role.replicas of them.
//   - Lockstep: the same pools, planned together by rollout.PlanLockstep.
//   - Gang: one pool of serving groups; a replica is a group, its members every
//     pod of every role in it.
//   - Group: one pool whose columns are <role>-<member index>; a replica is one
//     pod, each column wants spec.replicas of them (the rows).

// msPool is one pool of a ModelServing's rollout: its replicas, strategy and step.
type msPool struct {
	// role is the role of a Rolling or Lockstep pool; empty for Gang and Group.
	role     string
	replicas []rollout.Replica
	strategy rollout.Strategy
	step     rollout.Step
	// recover is the pool's recovery step (with a recovery policy).
	recover rollout.RecoverStep
}

// msPlan is one reconcile's plan for a ModelServing.
type msPlan struct {
	mode  servingv1.RolloutMode
	pools []msPool
	// complete: every pool's step is Complete.
	complete bool
	// reason and message say where the rollout stands, as rollout's plans
	// say it: Lockstep's own, else the first pool's that is not complete, with
	// the message of every such pool (prefixed with its role).
	reason  kplan.Reason
	message string
	// recovering: some pool's recovery step has actions; they are carried out
	// instead of the rollout step this reconcile.
	recovering bool
	// data is the ConfigMapSet data the rollout releases; nil when
	// spec.configMapSet is unset.
	data *dataRelease
}

// planModelServing builds the rollout input from ms's pods and plans one step.
// The pools, budgets and labels are servingv1.RolloutPools' (what kplan rollout
// reads too); history lists the revision names oldest first, from the
// ControllerRevisions, and update is the target. With data (nil without), pods
// are read as dataView makes them and every pool releases data.target too.
func planModelServing(ms *servingv1.ModelServing, pods []*corev1.Pod, history []string, update string, data *dataRelease, now time.Time) (*msPlan, error) {
	pools, err := servingv1.RolloutPools(ms, pods)
	if err != nil {
		return nil, err
	}
	p := &msPlan{mode: cmp.Or(ms.Spec.RolloutStrategy.Mode, servingv1.RollingMode), data: data}
	for _, pool := range pools {
		st := pool.Strategy
		st.TargetRevision, st.History = update, history
		opts := pool.Options
		opts.Now = now
		if data != nil {
			st.TargetDataRevision, opts.Labels.DataRevision = data.target, dataRevisionLabel
		}
		reps, err := rollout.FromPods(pool.Pods, opts)
		if err != nil {
			return nil, inRole(pool.Role, err)
		}
		p.pools = append(p.pools, msPool{role: pool.Role, replicas: reps, strategy: st})
	}
	if err := planRecovery(ms, p, now); err != nil {
		return nil, err
	}
	if p.mode == servingv1.LockstepMode {
		roles := make([]rollout.Role, len(p.pools))
		for i, pl := range p.pools {
			roles[i] = rollout.Role{Name: pl.role, Replicas: pl.replicas, Strategy: pl.strategy}
		}
		ls, err := rollout.PlanLockstep(roles)
		if err != nil {
			return nil, err
		}
		p.complete, p.reason, p.message = ls.Complete, ls.Reason, ls.Message
		for i := range p.pools {
			p.pools[i].step = ls.Roles[i].Step
		}
		return p, nil
	}
	p.complete, p.reason = true, rollout.ReasonComplete
	var msgs []string
	for i := range p.pools {
		step, err := rollout.Plan(p.pools[i].replicas, p.pools[i].strategy)
		if err != nil {
			return nil, inRole(p.pools[i].role, err)
		}
		p.pools[i].step = step
		if !step.Complete {
			if p.complete {
				p.reason = step.Reason
			}
			p.complete = false
			msgs = append(msgs, rolePrefix(p.pools[i].role)+step.Message)
		}
	}
	p.message = strings.Join(msgs, "; ")
	return p, nil
}

// inRole names the role of a per-role pool in err.
func inRole(role string, err error) error {
	if role == "" {
		return err
	}
	return fmt.Errorf("role %s: %w", role, err)
}

// recoverPolicy turns the spec's recovery policy into rollout's; false without
// one.
func recoverPolicy(p *servingv1.RecoveryPolicy) (rollout.RecoverPolicy, bool, error) {
	if p == nil {
		return rollout.RecoverPolicy{}, false, nil
	}
	out := rollout.RecoverPolicy{
		StartTimeout: time.Duration(p.StartTimeoutSeconds) * time.Second,
		ReleaseDelay: time.Duration(p.ReleaseDelaySeconds) * time.Second,
		MaxParallel:  int(p.MaxParallel),
	}
	switch p.Strategy {
	case "", servingv1.CreateThenDelete:
		out.Strategy = rollout.CreateThenDelete
	case servingv1.DeleteThenCreate:
		out.Strategy = rollout.DeleteThenCreate
	case servingv1.NoRecovery:
		out.Strategy = rollout.NoRecover
	default:
		return out, false, fmt.Errorf("spec.recoveryPolicy.strategy: %q is not CreateThenDelete, DeleteThenCreate or None", p.Strategy)
	}
	return out, true, nil
}

// planRecovery plans every pool's recovery step when ms has a recovery policy.
func planRecovery(ms *servingv1.ModelServing, p *msPlan, now time.Time) error {
	policy, ok, err := recoverPolicy(ms.Spec.RecoveryPolicy)
	if err != nil || !ok {
		return err
	}
	for i := range p.pools {
		rs, err := rollout.PlanRecover(p.pools[i].replicas, policy, now)
		if err != nil {
			return fmt.Errorf("%srecovery: %w", rolePrefix(p.pools[i].role), err)
		}
		p.pools[i].recover = rs
		if len(rs.Replace)+len(rs.Swap)+len(rs.Release)+len(rs.Cancel) > 0 {
			p.recovering = true
		}
	}
	return nil
}
