package rollouttest

import (
	"fmt"
	"slices"
	"time"

	"github.com/kplan-dev/kplan/rollout"
)

// CheckRecover verifies a step planned by [rollout.PlanRecover] for before at now:
//
//   - a replica is released only ReleaseDelay after it was swapped out, or (under
//     DeleteThenCreate) when it failed and its replacement starts in the same step;
//     so under CreateThenDelete nothing is deleted before its replacement is ready;
//   - a swap brings in a replacement that is ready and healthy (a gang: with at
//     least as many members as the failed one, all ready), and takes out only a
//     replica that is failed at now (or none, when it is already gone);
//   - NoRecover only reports: nothing is started, swapped, released or cancelled;
//   - a replacement starts only for a failed replica that has none, at its
//     revision and column, with its members' columns, in an index no replica
//     of the column that is not terminating holds and no other replacement
//     takes;
//   - in-flight replacements stay within MaxParallel and starts within Window stay
//     within MaxPerWindow.
func CheckRecover(before []rollout.Replica, policy rollout.RecoverPolicy, now time.Time, step rollout.RecoverStep) error {
	byName := map[string]*rollout.Replica{}
	hasReplacement := map[string]bool{}
	inFlight := 0
	for i := range before {
		r := &before[i]
		byName[r.Name] = r
		if r.ReplacementFor != "" && !r.Effective().Terminating && r.SwappedAt.IsZero() {
			hasReplacement[r.ReplacementFor] = true
			inFlight++
		}
	}
	if policy.Strategy == rollout.NoRecover &&
		len(step.Replace)+len(step.Swap)+len(step.Release)+len(step.Cancel) > 0 {
		return fmt.Errorf("NoRecover acts: %d replaced, %d swapped, %d released, %d cancelled",
			len(step.Replace), len(step.Swap), len(step.Release), len(step.Cancel))
	}
	held := map[indexKey]string{}
	for i := range before {
		if r := &before[i]; !r.Effective().Terminating {
			held[indexKey{r.Column, r.Index}] = r.Name
		}
	}
	replacing := map[string]bool{}
	for _, rep := range step.Replace {
		r, ok := byName[rep.For]
		if !ok {
			return fmt.Errorf("replace %s: no such replica", rep.For)
		}
		if _, failed := rollout.FailureReason(r, policy, now); !failed {
			return fmt.Errorf("replace %s: it has not failed", rep.For)
		}
		if hasReplacement[rep.For] || replacing[rep.For] {
			return fmt.Errorf("replace %s: it already has a replacement", rep.For)
		}
		if rep.Revision != r.Revision || rep.Column != r.Column || !slices.Equal(rep.Members, memberColumns(r)) {
			return fmt.Errorf("replace %s: replacement differs in revision, column or member columns", rep.For)
		}
		if rep.Index < 0 {
			return fmt.Errorf("replace %s: index %d is negative", rep.For, rep.Index)
		}
		if by, ok := held[indexKey{rep.Column, rep.Index}]; ok {
			return fmt.Errorf("replace %s: index %d in column %q is held by %s", rep.For, rep.Index, rep.Column, by)
		}
		held[indexKey{rep.Column, rep.Index}] = "the replacement of " + rep.For
		replacing[rep.For] = true
	}
	for _, name := range step.Release {
		r, ok := byName[name]
		if !ok {
			return fmt.Errorf("release %s: no such replica", name)
		}
		switch {
		case !r.SwappedAt.IsZero():
			if now.Sub(r.SwappedAt) < policy.ReleaseDelay {
				return fmt.Errorf("release %s: swapped out %s ago, before ReleaseDelay %s", name, now.Sub(r.SwappedAt), policy.ReleaseDelay)
			}
		case policy.Strategy == rollout.DeleteThenCreate && replacing[name]:
		default:
			return fmt.Errorf("release %s: not swapped out for a ready replacement", name)
		}
	}
	for _, sw := range step.Swap {
		r, ok := byName[sw.New]
		if !ok || r.ReplacementFor == "" {
			return fmt.Errorf("swap in %s: not a replacement", sw.New)
		}
		s := r.Effective()
		if !(s.Ready && s.Healthy) || s.Failed || s.Lost {
			return fmt.Errorf("swap in %s: replacement is not ready", sw.New)
		}
		if old, ok := byName[sw.Old]; ok && len(r.Members) < len(old.Members) {
			return fmt.Errorf("swap in %s: gang has %d of %d members", sw.New, len(r.Members), len(old.Members))
		}
		if old, ok := byName[sw.Old]; ok && !old.Effective().Terminating && old.SwappedAt.IsZero() {
			if _, failed := rollout.FailureReason(old, policy, now); !failed {
				return fmt.Errorf("swap out %s: it is not failed", sw.Old)
			}
		}
	}
	for _, name := range step.Cancel {
		if r, ok := byName[name]; !ok || r.ReplacementFor == "" {
			return fmt.Errorf("cancel %s: not a replacement", name)
		}
	}
	if n := len(step.Replace); n > 0 {
		if policy.MaxParallel > 0 && inFlight+n > policy.MaxParallel {
			return fmt.Errorf("%d replacements in flight plus %d new exceed MaxParallel %d", inFlight, n, policy.MaxParallel)
		}
		started := 0
		for _, t := range policy.Started {
			if policy.Window > 0 && !t.After(now) && now.Sub(t) < policy.Window {
				started++
			}
		}
		if policy.MaxPerWindow > 0 && started+n > policy.MaxPerWindow {
			return fmt.Errorf("%d replacements started in the window plus %d new exceed MaxPerWindow %d", started, n, policy.MaxPerWindow)
		}
	}
	return nil
}

// indexKey is an index in a column.
type indexKey struct {
	column string
	index  int
}

// memberColumns is the columns of a gang's members, in member order; nil for
// a single pod.
func memberColumns(r *rollout.Replica) []string {
	if len(r.Members) == 0 {
		return nil
	}
	out := make([]string, len(r.Members))
	for i, m := range r.Members {
		out[i] = m.Column
	}
	return out
}
