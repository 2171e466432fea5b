package rollouttest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/kplan-dev/kplan/rollout"
)

// CheckTransition verifies one change of a rollout as an observer outside the
// controller sees it: before and after are the replicas at two consecutive points
// in time (for example before and after one pod event of a watch, converted with
// rollout.FromPods), under strategy. It returns the first violation:
//
//   - availability: per pool (per column in group mode), available replicas
//     after >= min(available before, n - maxUnavailable), where replicas the
//     world took down (still there, same revision, data revision and members,
//     no longer available: a pod became unready or failed) count as still
//     available, since no controller prevents that; a replica whose data
//     revision changed was updated, as one whose revision changed;
//   - surge: replicas after <= max(replicas before, n + maxSurge), per pool;
//   - gang atomicity: no gang serves on two revisions (its members run different
//     revisions while every one is present, ready and healthy);
//   - creations: every pod that appears, or runs another revision than before,
//     runs the target revision, or the stable revision when the requested count
//     (see [Check]) keeps replicas back (the newest revision other than the
//     target that before runs, else the newest such History entry), or, for a
//     gang member, the revision its gang ran before (a half-updated gang is
//     finished at its own revision): nothing is created on an older revision
//     than the plan asks for; a recovery replacement (ReplacementFor set) may
//     run the revision of the replica it replaces.
//
// Group alignment is a property of the end of a rollout, not of every point in
// it (columns may reach their counts before the rows are whole): check the state
// the controller reports complete with [Converged], which requires [WholeRows];
// check recovery steps themselves with [CheckRecover].
func CheckTransition(before, after []rollout.Replica, strategy rollout.Strategy) error {
	b, err := rollout.ResolveBudget(strategy.MaxUnavailable, strategy.MaxSurge, strategy.Replicas)
	if err != nil {
		return err
	}
	pool := func(r *rollout.Replica) string {
		if strategy.Mode == rollout.Group {
			return r.Column
		}
		return ""
	}
	cb, ca := Counted(before), Counted(after)
	prev := make(map[string]*rollout.Replica, len(cb))
	for _, r := range cb {
		prev[r.Name] = r
	}
	type stat struct{ total, avail, worldDown int }
	pre, post := map[string]*stat{}, map[string]*stat{}
	at := func(m map[string]*stat, k string) *stat {
		if m[k] == nil {
			m[k] = &stat{}
		}
		return m[k]
	}
	for _, r := range cb {
		s := at(pre, pool(r))
		s.total++
		if Available(r) {
			s.avail++
		}
		at(post, pool(r))
	}
	for _, r := range ca {
		s := at(post, pool(r))
		s.total++
		if Available(r) {
			s.avail++
		} else if p := prev[r.Name]; p != nil && Available(p) && sameShape(p, r) {
			s.worldDown++
		}
		at(pre, pool(r))
	}
	n := strategy.Replicas
	for _, k := range slices.Sorted(maps.Keys(post)) {
		bs, as := pre[k], post[k]
		if floor := min(bs.avail, n-b.MaxUnavailable); as.avail+as.worldDown < floor {
			return fmt.Errorf("pool %q: available %d -> %d (%d taken down by the world), below floor %d (n=%d, maxUnavailable=%d)",
				k, bs.avail, as.avail, as.worldDown, floor, n, b.MaxUnavailable)
		}
		if limit := max(bs.total, n+b.MaxSurge); as.total > limit {
			return fmt.Errorf("pool %q: replicas %d -> %d, above %d (n=%d, maxSurge=%d)", k, bs.total, as.total, limit, n, b.MaxSurge)
		}
	}
	for _, r := range ca {
		if len(r.Members) == 0 || !partial(r) {
			continue
		}
		serving := true
		for _, m := range r.Members {
			if m.Missing || !m.State.Ready || !m.State.Healthy || m.State.Failed || m.State.Lost || m.State.Terminating {
				serving = false
			}
		}
		if serving {
			return fmt.Errorf("gang %s serves on two revisions: %s", r.Name, memberRevisions(r))
		}
	}
	allowed, err := createRevisions(cb, strategy)
	if err != nil {
		return err
	}
	all := make(map[string]*rollout.Replica, len(before))
	for i := range before {
		all[before[i].Name] = &before[i]
	}
	oldPods := map[string]string{}
	for i := range before {
		for name, rev := range podRevisions(&before[i]) {
			oldPods[name] = rev
		}
	}
	for i := range after {
		r := &after[i]
		pods := podRevisions(r)
		for _, name := range slices.Sorted(maps.Keys(pods)) {
			rev := pods[name]
			if was, ok := oldPods[name]; ok && was == rev {
				continue
			}
			if p := prev[r.Name]; p != nil && len(p.Members) > 0 && p.Revision == rev {
				continue // a gang finished at its own revision
			}
			if f := all[r.ReplacementFor]; r.ReplacementFor != "" && f != nil && f.Revision == rev {
				continue // a recovery replacement, at its failed replica's revision
			}
			if !slices.Contains(allowed, rev) {
				return fmt.Errorf("pod %s created at revision %s; the plan creates at %v", name, rev, allowed)
			}
		}
	}
	return nil
}

// sameShape reports whether a replica still runs what it ran: the same revision
// and, for a gang, the same members on the same revisions, none missing or
// terminating.
func sameShape(a, b *rollout.Replica) bool {
	if a.Revision != b.Revision || a.DataRevision != b.DataRevision || b.State.Terminating || len(a.Members) != len(b.Members) {
		return false
	}
	for i := range a.Members {
		am, bm := a.Members[i], b.Members[i]
		if am.Name != bm.Name || am.Revision != bm.Revision || am.Missing != bm.Missing || bm.State.Terminating {
			return false
		}
	}
	return true
}

// podRevisions maps each pod of a replica (itself, or its present members) that
// is not terminating to its revision.
func podRevisions(r *rollout.Replica) map[string]string {
	if len(r.Members) == 0 {
		if r.State.Terminating {
			return nil // being deleted, not created
		}
		return map[string]string{r.Name: r.Revision}
	}
	out := map[string]string{}
	for _, m := range r.Members {
		if m.Missing || m.State.Terminating {
			continue
		}
		out[m.Name] = cmp.Or(m.Revision, r.Revision)
	}
	return out
}

func memberRevisions(r *rollout.Replica) string {
	s := ""
	for i, m := range r.Members {
		if i > 0 {
			s += ", "
		}
		s += m.Name + "=" + cmp.Or(m.Revision, r.Revision)
	}
	return s
}

// createRevisions is the revisions a plan may create replicas at: the target,
// and the stable revision when the requested count keeps replicas back.
func createRevisions(counted []*rollout.Replica, strategy rollout.Strategy) ([]string, error) {
	out := []string{strategy.TargetRevision}
	want, err := requested(counted, strategy)
	if err != nil {
		return nil, err
	}
	if want >= strategy.Replicas {
		return out, nil
	}
	stable := ""
	for _, r := range counted {
		if r.Revision != strategy.TargetRevision && (stable == "" || rollout.CompareRevisions(r.Revision, stable, strategy.History) > 0) {
			stable = r.Revision
		}
	}
	if stable == "" {
		for _, h := range strategy.History {
			if h != strategy.TargetRevision {
				stable = h
			}
		}
	}
	if stable != "" {
		out = append(out, stable)
	}
	return out, nil
}

// Monitor checks every observed state of a rollout with [CheckTransition]
// against the one observed before it. Feed it the replicas after each change
// (each event of a pod watch); call SetStrategy before the first and whenever
// the test changes the spec. A controller may act on the old spec until its
// cache shows the new one, so a change that passes under the previous strategy
// is accepted too, until the next SetStrategy.
type Monitor struct {
	strategy, previous *rollout.Strategy
	last               []rollout.Replica
	started            bool
	// Observations counts the states checked.
	Observations int
}

// SetStrategy sets the strategy the next observations are checked under.
func (m *Monitor) SetStrategy(s rollout.Strategy) {
	if m.strategy != nil {
		p := *m.strategy
		m.previous = &p
	}
	m.strategy = &s
}

// Observe checks replicas against the previous observation (the first one is
// only recorded) and keeps a copy of them. An error names the violation; the
// state is recorded either way.
func (m *Monitor) Observe(replicas []rollout.Replica) error {
	if m.strategy == nil {
		return fmt.Errorf("monitor: no strategy set")
	}
	defer func() { m.last, m.started = Clone(replicas), true; m.Observations++ }()
	if !m.started {
		return nil
	}
	err := CheckTransition(m.last, replicas, *m.strategy)
	if err != nil && m.previous != nil && CheckTransition(m.last, replicas, *m.previous) == nil {
		return nil
	}
	return err
}

// partial reports whether some member of a gang runs another revision than the gang.
func partial(r *rollout.Replica) bool {
	for _, m := range r.Members {
		if m.Revision != "" && m.Revision != r.Revision {
			return true
		}
	}
	return false
}
