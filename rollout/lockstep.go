package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Role is one role of a multi-role service (for example prefill and decode) that
// must roll out in lockstep with the others.
type Role struct {
	// Name identifies the role in errors and in the result.
	Name string
	// Replicas are the role's replicas.
	Replicas []Replica
	// Strategy is the role's own strategy; its LatestRatio is the role's final share.
	Strategy Strategy
}

// RoleStep is one role's share of a [LockstepStep].
type RoleStep struct {
	// Name is the role's name.
	Name string
	// Step is the role's actions this reconcile.
	Step Step
}

// LockstepStep is one reconcile's actions for all roles.
type LockstepStep struct {
	// Index is the step index the roles are moving to, out of Steps.
	Index, Steps int
	// Roles holds each role's step, in the order the roles were given.
	Roles []RoleStep
	// Complete is true when every role is complete.
	Complete bool
}

// PlanLockstep advances several roles by the same step fraction.
//
// Each role r has a final count F_r at its target revision (its LatestRatio
// resolved) and a step s_r ([Budget.Step]). The rollout has
// S = max_r ceil(F_r / s_r) steps (at least 1); at step k role r should run
// T_r(k) = floor(k * F_r / S) replicas at the target (F_r at k = S). The roles
// are at step k when every role has at least T_r(k) available target replicas;
// this call plans every role toward step k+1 with [Plan] and T_r(k+1) as its
// LatestRatio (never below what the role already runs, so nothing regresses).
//
// Consequences: one role never runs ahead of another by more than one step; each
// role's old+new stays within its desired count plus surge ([Plan]'s rule); and
// since T_r(k) < F_r for k < S, no role drains its old replicas before the last
// step, when all roles finish together. A role that already runs F_r target
// replicas (it was ahead before lockstep began) is not held back, and roles that
// roll back (more target replicas than F_r) are planned on their own.
//
// roles and their replicas are not modified. An error names the role.
func PlanLockstep(roles []Role) (LockstepStep, error) {
	type info struct {
		final, step, have, haveAvail int
	}
	infos := make([]info, len(roles))
	steps := 1
	seen := map[string]bool{}
	for i := range roles {
		r := &roles[i]
		if r.Name == "" || seen[r.Name] {
			return LockstepStep{}, fmt.Errorf("roles[%d]: name: %q is empty or repeated", i, r.Name)
		}
		seen[r.Name] = true
		if err := r.Strategy.validate(); err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: %w", r.Name, err)
		}
		b, err := ResolveBudget(r.Strategy.MaxUnavailable, r.Strategy.MaxSurge, r.Strategy.Replicas)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: strategy: %w", r.Name, err)
		}
		f, err := ResolveRatio(r.Strategy.LatestRatio, r.Strategy.Replicas)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: strategy: %w", r.Name, err)
		}
		in := info{final: f, step: max(b.Step(), 1)}
		for j := range r.Replicas {
			rep := &r.Replicas[j]
			if rep.Revision != r.Strategy.TargetRevision || !live(rep) || rep.ReplacementFor != "" {
				continue
			}
			in.have++
			if counts(rep.Effective()) {
				in.haveAvail++
			}
		}
		infos[i] = in
		steps = max(steps, (f+in.step-1)/in.step)
	}
	at := func(k, f int) int {
		if k >= steps {
			return f
		}
		return k * f / steps
	}
	k := steps
	for _, in := range infos {
		kr := 0
		for kr < steps && in.haveAvail >= at(kr+1, in.final) {
			kr++
		}
		k = min(k, kr)
	}
	next := min(k+1, steps)
	out := LockstepStep{Index: next, Steps: steps, Roles: make([]RoleStep, len(roles)), Complete: true}
	for i := range roles {
		r := &roles[i]
		s := r.Strategy
		t := max(at(next, infos[i].final), min(infos[i].have, infos[i].final))
		if infos[i].have > infos[i].final {
			t = infos[i].final
		}
		ratio := intstr.FromInt32(int32(t))
		s.LatestRatio = &ratio
		st, err := Plan(r.Replicas, s)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: %w", r.Name, err)
		}
		st.Complete = st.Complete && t == infos[i].final
		out.Complete = out.Complete && st.Complete
		out.Roles[i] = RoleStep{Name: r.Name, Step: st}
	}
	return out, nil
}
