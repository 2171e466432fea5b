package rollout

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan"
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
	// Reason says where the rollout stands, to set a condition from as is:
	// ReasonComplete when Complete, else the Reason of the first role (in the
	// order given) that is not complete.
	Reason kplan.Reason
	// Message says the same for people: "role <name>: " and its step's
	// Message, for every role that is not complete (at most 32 KiB, as a
	// condition's message); empty when Complete.
	Message string
}

// PlanLockstep advances several roles by the same step fraction.
//
// Each role r has a final count F_r at its target revision (its LatestRatio
// resolved) and a step s_r ([Budget.Step]). The rollout has
// S = max_r ceil(F_r / s_r) steps (at least 1); at step k role r should run
// T_r(k) = ceil(k * F_r / S) replicas at the target, LeaderWorkerSet's rule
// (newAtStep(i) = ceil(i * target / totalSteps)): rounding up means every role
// with F_r > 0 runs a target replica from the first step, and a small role beside
// a large one advances whenever its share grows instead of waiting for the last
// step. The roles are at step k when every role has at least T_r(k) available
// target replicas; this call plans every role toward step k+1 with [Plan] and
// T_r(k+1) as its LatestRatio (never below what the role already runs, so
// nothing regresses). In group mode a role's count is its smallest column's.
//
// Replicas a role lacks (a fresh deploy, a scale-up) are created at the target
// revision at once, up to F_r, as StatefulSet, LeaderWorkerSet and OpenKruise do:
// creating costs no availability, so it is not held to the step.
//
// Old replicas drain in lockstep too, as LeaderWorkerSet's DisaggregatedSet
// drains them: a revision serves only while every role of it runs (a request
// needs a prefill and a decode replica of one revision), so no role should lose
// its old replicas while another's still serve. At step k a role with desired
// count D_r keeps O_r(k) = D_r - floor(k * F_r / S) replicas that do not run
// the target (D_r - F_r from step S): it deletes none of them and updates none
// in place below that count, and creates by surge the target replicas such
// updates would have made. The old share is the complement of T_r(k) rounded
// the other way, so it is at least 1 until step S, when every role runs its
// final count: until then a role's last old replica goes only when the role has
// no surge to keep it beside its target count (maxSurge 0; then it is updated
// in place when its target count reaches D_r). The share is capped at
// D_r + surge_r - T_r(k+1), so that keeping it never stops a role from
// reaching the next step. With maxSurge above 0 a role therefore moves to the
// next step by surge and drains its old replicas once every role has reached
// it, where [Plan] alone would update in place; the replicas it keeps are
// listed in its Step's Waiting with ReasonLockstep.
//
// Consequences: one role never runs ahead of another by more than one step,
// except by replicas it created; each role's old+new stays within its desired
// count plus surge ([Plan]'s rule). Since T_r(k) rounds up, a role may reach
// F_r before step S (a role of one replica does at step 1), as in
// LeaderWorkerSet. A role that already runs F_r target replicas (it was ahead
// before lockstep began) is not held back (it keeps its old share), and roles
// that roll back (more target replicas than F_r) are planned on their own.
//
// roles and their replicas are not modified. An error names the role.
func PlanLockstep(roles []Role) (LockstepStep, error) {
	infos := make([]roleCount, len(roles))
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
		if len(r.Replicas) > MaxReplicas {
			return LockstepStep{}, fmt.Errorf("role %s: replicas: %d, more than MaxReplicas %d", r.Name, len(r.Replicas), MaxReplicas)
		}
		b, err := ResolveBudget(r.Strategy.MaxUnavailable, r.Strategy.MaxSurge, r.Strategy.Replicas)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: strategy: %w", r.Name, err)
		}
		f, err := ResolveRatio(r.Strategy.LatestRatio, r.Strategy.Replicas)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: strategy: %w", r.Name, err)
		}
		in := countRole(r)
		in.final, in.step, in.surge = f, max(b.Step(), 1), b.MaxSurge
		infos[i] = in
		steps = max(steps, (f+in.step-1)/in.step)
	}
	at := func(k, f int) int {
		if k >= steps {
			return f
		}
		return (k*f + steps - 1) / steps
	}
	// oldAt is a role's share of the old revision at step k: the complement
	// of at rounded the other way, d - floor(k*f/S), as the DisaggregatedSet
	// controller drains it; d - f from the last step.
	oldAt := func(k, d, f int) int {
		if k >= steps {
			return d - f
		}
		return d - k*f/steps
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
		in := infos[i]
		t := max(at(next, in.final), min(in.fill, in.final))
		if in.have > in.final {
			t = in.final
		}
		keep := 0
		if in.have <= in.final {
			// The old side in lockstep: at step k the role keeps its share of
			// the old revision, D - floor(k*F/S), but never the room its
			// target count needs within its surge.
			keep = min(oldAt(k, s.Replicas, in.final), max(0, s.Replicas+in.surge-t))
		}
		ratio := intstr.FromInt32(int32(t))
		s.LatestRatio = &ratio
		st, err := plan(r.Replicas, s, keep)
		if err != nil {
			return LockstepStep{}, fmt.Errorf("role %s: %w", r.Name, err)
		}
		if st.Complete && t != in.final {
			// At this step, waiting for the other roles to reach it.
			st.Complete = false
			st.Reason = ReasonLockstep
			st.Message = fmt.Sprintf("at step %d of %d, waiting for the other roles", next, steps)
		}
		out.Complete = out.Complete && st.Complete
		out.Roles[i] = RoleStep{Name: r.Name, Step: st}
	}
	out.Reason = ReasonComplete
	var msgs []string
	for _, rs := range out.Roles {
		if rs.Step.Complete {
			continue
		}
		if len(msgs) == 0 {
			out.Reason = rs.Step.Reason
		}
		msgs = append(msgs, "role "+rs.Name+": "+rs.Step.Message)
	}
	out.Message = clip(strings.Join(msgs, "; "))
	return out, nil
}

// roleCount is what PlanLockstep needs to know about one role.
type roleCount struct {
	final, step, surge int
	// have and haveAvail count the role's target replicas and the available
	// ones (in group mode, its smallest column's).
	have, haveAvail int
	// fill is the target count once the replicas the role lacks are created at
	// the target (in group mode, its largest column's), at least have.
	fill int
}

// countRole counts a role's replicas as [Plan] does: terminating and
// swapped-out replicas and replacements whose failed replica is still there are
// not counted.
func countRole(r *Role) roleCount {
	type col struct{ total, have, haveAvail int }
	byName := make(map[string]*Replica, len(r.Replicas))
	for j := range r.Replicas {
		byName[r.Replicas[j].Name] = &r.Replicas[j]
	}
	cols := map[string]*col{}
	group := r.Strategy.Mode == Group
	if group {
		for _, c := range r.Strategy.Columns {
			cols[c] = &col{}
		}
	} else {
		cols[""] = &col{}
	}
	for j := range r.Replicas {
		rep := &r.Replicas[j]
		if !live(rep) {
			continue
		}
		if orig, ok := byName[rep.ReplacementFor]; ok && rep.ReplacementFor != "" && live(orig) {
			continue
		}
		key := ""
		if group {
			key = rep.Column
		}
		c := cols[key]
		if c == nil {
			c = &col{}
			cols[key] = c
		}
		c.total++
		if rep.Revision == r.Strategy.TargetRevision {
			c.have++
			if counts(rep.Effective()) {
				c.haveAvail++
			}
		}
	}
	out := roleCount{have: -1, haveAvail: -1}
	for _, c := range cols {
		if out.have < 0 || c.have < out.have {
			out.have = c.have
		}
		if out.haveAvail < 0 || c.haveAvail < out.haveAvail {
			out.haveAvail = c.haveAvail
		}
		out.fill = max(out.fill, c.have+max(0, r.Strategy.Replicas-c.total))
	}
	if out.have < 0 {
		// Group mode without columns: nothing to plan yet.
		out.have, out.haveAvail = 0, 0
	}
	return out
}
