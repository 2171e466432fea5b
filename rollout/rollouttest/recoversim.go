package rollouttest

import (
	"fmt"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/rollout"
)

// RecoverSimulator applies recovery steps the way a controller would: a
// replacement is created not ready, a swap takes the failed replica out of
// service (SwappedAt) and makes the replacement ordinary, a release or cancel
// deletes. Settle moves the clock by Tick and changes states.
type RecoverSimulator struct {
	// Policy is planned with; started replacements are appended to Policy.Started.
	Policy rollout.RecoverPolicy
	// Replicas is the current state.
	Replicas []rollout.Replica
	// Now is the simulated clock.
	Now time.Time
	// Tick is how far Settle moves Now.
	Tick time.Duration
	// Faults are the failure rates Settle injects (UpdateFails applies to
	// replacements, Unready to serving replicas, which then fail).
	Faults  Faults
	created int
}

// Reconcile plans one recovery step at Now, checks it with [CheckRecover], and
// applies it.
func (s *RecoverSimulator) Reconcile() (rollout.RecoverStep, error) {
	step, err := rollout.PlanRecover(s.Replicas, s.Policy, s.Now)
	if err != nil {
		return step, err
	}
	if err := CheckRecover(s.Replicas, s.Policy, s.Now, step); err != nil {
		return step, fmt.Errorf("at %s: %w", s.Now.Format(time.RFC3339), err)
	}
	s.Apply(step)
	return step, nil
}

// Apply applies a recovery step at Now without checking it.
func (s *RecoverSimulator) Apply(step rollout.RecoverStep) {
	gone := map[string]bool{}
	for _, n := range step.Release {
		gone[n] = true
	}
	for _, n := range step.Cancel {
		gone[n] = true
	}
	idx := map[string]int{}
	for i := range s.Replicas {
		idx[s.Replicas[i].Name] = i
	}
	for _, sw := range step.Swap {
		if i, ok := idx[sw.Old]; ok {
			s.Replicas[i].SwappedAt = s.Now
		}
		s.Replicas[idx[sw.New]].ReplacementFor = ""
	}
	s.Replicas = slices.DeleteFunc(s.Replicas, func(r rollout.Replica) bool { return gone[r.Name] })
	pending := rollout.State{Healthy: true, UnreadySince: s.Now}
	for _, rep := range step.Replace {
		r := rollout.Replica{Name: fmt.Sprintf("rep-%d", s.created), Revision: rep.Revision, Column: rep.Column,
			Index: rep.Index, ReplacementFor: rep.For, State: pending}
		s.created++
		for m, col := range rep.Members {
			r.Members = append(r.Members, rollout.Member{Name: fmt.Sprintf("%s-%d", r.Name, m), Column: col, State: pending})
		}
		s.Replicas = append(s.Replicas, r)
		s.Policy.Started = append(s.Policy.Started, s.Now)
	}
}

// Settle moves Now by Tick. Terminating pods are gone (a gang member is then
// missing since Now; a replica or gang with no pod left is gone). Replicas that
// are not serving become serving, unless a replacement fails (UpdateFails);
// serving replicas fail (Unready) and a gang member may go missing; failed
// replicas and missing members recover (Recovers). Rates of 100 need no t; with
// a nil t, lower rates inject nothing.
func (s *RecoverSimulator) Settle(t *rapid.T) {
	s.Now = s.Now.Add(s.Tick)
	s.Replicas = slices.DeleteFunc(s.Replicas, func(r rollout.Replica) bool {
		if r.State.Terminating {
			return true
		}
		went := false
		for j := range r.Members {
			if m := &r.Members[j]; !m.Missing && m.State.Terminating {
				*m = rollout.Member{Column: m.Column, Missing: true, State: rollout.State{UnreadySince: s.Now}}
				went = true
			}
		}
		return went && !slices.ContainsFunc(r.Members, func(m rollout.Member) bool { return !m.Missing })
	})
	roll := func(label string, pct int) bool {
		return pct >= 100 || (t != nil && pct > 0 && rapid.IntRange(0, 99).Draw(t, label) < pct)
	}
	good := rollout.State{Ready: true, Available: true, Healthy: true, ReadySince: s.Now}
	settle := func(st *rollout.State, missing *bool, label string) {
		switch {
		case st.Failed || (missing != nil && *missing):
			if roll(label+"-recovers", s.Faults.Recovers) {
				*st = good
				if missing != nil {
					*missing = false // its pod is back
				}
			}
		case counts(*st):
			if roll(label+"-fails", s.Faults.Unready) {
				if missing != nil && t != nil && rapid.Bool().Draw(t, label+"-missing") {
					*missing = true
					*st = rollout.State{UnreadySince: s.Now}
				} else {
					*st = rollout.State{Failed: true, UnreadySince: s.Now}
				}
			}
		case roll(label+"-slow", s.Faults.Slow):
		default:
			if roll(label+"-startfails", s.Faults.UpdateFails) {
				*st = rollout.State{Failed: true, UnreadySince: s.Now}
			} else {
				*st = good
			}
		}
	}
	for i := range s.Replicas {
		r := &s.Replicas[i]
		if !r.SwappedAt.IsZero() {
			continue
		}
		if len(r.Members) == 0 {
			settle(&r.State, nil, "replica")
			continue
		}
		for j := range r.Members {
			m := &r.Members[j]
			settle(&m.State, &m.Missing, "member")
			if !m.Missing && m.Name == "" {
				m.Name = memberName(r.Name, m.Column) // a pod created again
			}
		}
	}
}

// Healthy reports whether recovery is finished: every replica serving (ready and
// healthy; a gang: every member), none failed under policy at now, being
// replaced, or swapped out.
func Healthy(replicas []rollout.Replica, policy rollout.RecoverPolicy, now time.Time) error {
	for i := range replicas {
		r := &replicas[i]
		if reason, failed := rollout.FailureReason(r, policy, now); failed {
			return fmt.Errorf("replica %s: %s", r.Name, reason)
		}
		if s := r.Effective(); !(s.Ready && s.Healthy) {
			return fmt.Errorf("replica %s: not serving", r.Name)
		}
		if r.ReplacementFor != "" || !r.SwappedAt.IsZero() {
			return fmt.Errorf("replica %s: recovery not finished", r.Name)
		}
	}
	return nil
}
