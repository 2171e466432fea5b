package rollouttest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kplan-dev/kplan/rollout"
)

// Available reports whether a replica counts toward the availability budget: its
// effective state ([rollout.Replica.Effective]) is available, ready, healthy, not
// failed and not lost.
func Available(r *rollout.Replica) bool {
	s := r.Effective()
	return s.Available && s.Ready && s.Healthy && !s.Failed && !s.Lost
}

// Counted returns the replicas [rollout.Plan] counts: not terminating (a
// gang: not every present member terminating, see
// [rollout.Replica.Effective]), not swapped out, and not a replacement whose
// failed replica is still counted.
func Counted(replicas []rollout.Replica) []*rollout.Replica {
	live := func(r *rollout.Replica) bool { return r.SwappedAt.IsZero() && !r.Effective().Terminating }
	byName := make(map[string]*rollout.Replica, len(replicas))
	for i := range replicas {
		byName[replicas[i].Name] = &replicas[i]
	}
	var out []*rollout.Replica
	for i := range replicas {
		r := &replicas[i]
		if !live(r) {
			continue
		}
		if old, ok := byName[r.ReplacementFor]; ok && r.ReplacementFor != "" && live(old) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// requested is how many replicas per pool [rollout.Plan] moves to the target:
// LatestRatio resolved, or every replica when no other revision is known (no
// counted replica runs one and History names none).
func requested(counted []*rollout.Replica, strategy rollout.Strategy) (int, error) {
	want, err := rollout.ResolveRatio(strategy.LatestRatio, strategy.Replicas)
	if err != nil {
		return 0, err
	}
	for _, h := range strategy.History {
		if h != strategy.TargetRevision {
			return want, nil
		}
	}
	for _, r := range counted {
		if r.Revision != strategy.TargetRevision {
			return want, nil
		}
	}
	return strategy.Replicas, nil
}

type poolStat struct {
	total, avail, latest, latestAvail int
}

// Check verifies that step, planned by [rollout.Plan] for before under strategy,
// keeps the rollout invariants, and returns the first violation:
//
//   - every Update and Delete names a counted replica, at most once: a replica
//     whose pod revision and data both change is updated once;
//   - an Update or Delete names the replica's pods (itself, or a gang's
//     members that have a pod and are not terminating, in member order) and
//     its column (group mode); an Update also its index and the columns of a
//     gang's missing members, in member order;
//   - availability after the actions >= min(availability before, n - maxUnavailable),
//     per column in group mode (an updated or deleted replica is unavailable,
//     whether its pod revision, its data or both change; a created one is not
//     yet available);
//   - an Update's DataFrom is the replica's DataRevision and its DataTo the
//     strategy's TargetDataRevision; both are empty when that is;
//   - replicas after the actions <= max(replicas before, n + maxSurge), per column;
//   - a Create's index is not negative, not held by a replica of its pool (one
//     that is not terminating; see [rollout.Replica].Index) and not taken by
//     another Create of the step; in gang mode it lists the strategy's
//     Columns as its members, otherwise none;
//   - a Repair names a counted gang that the step neither updates nor deletes,
//     at most once, at the gang's own revision, column (group mode) and index,
//     and lists exactly the columns of its missing members in member order;
//     every counted gang
//     with missing members that the step neither updates nor deletes, and that
//     recovery is not replacing, is repaired (a planner that leaves a gang short
//     of a pod is caught), and so is every recovery replacement with missing
//     members (it is swapped in only whole), counted or not. A Repair changes
//     no count: the gang was unavailable and stays so until its new members are;
//   - group mode, moving forward: no target replica is updated away or deleted, and
//     the target count never exceeds max(its count before, the requested count).
//
// The requested count is LatestRatio resolved, or Replicas when no revision other
// than the target is known (no counted replica runs one and History names none).
func Check(before []rollout.Replica, strategy rollout.Strategy, step rollout.Step) error {
	b, err := rollout.ResolveBudget(strategy.MaxUnavailable, strategy.MaxSurge, strategy.Replicas)
	if err != nil {
		return err
	}
	col := func(c string) string {
		if strategy.Mode == rollout.Group {
			return c
		}
		return ""
	}
	counted := Counted(before)
	want, err := requested(counted, strategy)
	if err != nil {
		return err
	}
	byName := map[string]*rollout.Replica{}
	pre := map[string]*poolStat{}
	for _, c := range strategy.Columns {
		if strategy.Mode == rollout.Group {
			pre[c] = &poolStat{}
		}
	}
	for _, r := range counted {
		byName[r.Name] = r
		ps := pre[col(r.Column)]
		if ps == nil {
			ps = &poolStat{}
			pre[col(r.Column)] = ps
		}
		ps.total++
		a := Available(r)
		if a {
			ps.avail++
		}
		if r.Revision == strategy.TargetRevision {
			ps.latest++
			if a {
				ps.latestAvail++
			}
		}
	}
	post := map[string]*poolStat{}
	for c, ps := range pre {
		cp := *ps
		post[c] = &cp
	}
	get := func(c string) *poolStat {
		if post[c] == nil {
			post[c] = &poolStat{}
			pre[c] = &poolStat{}
		}
		return post[c]
	}
	touched := map[string]bool{}
	touch := func(name, what string) (*rollout.Replica, error) {
		r, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s of %s: not a counted replica", what, name)
		}
		if touched[name] {
			return nil, fmt.Errorf("%s of %s: replica acted on twice", what, name)
		}
		touched[name] = true
		return r, nil
	}
	for _, u := range step.Update {
		r, err := touch(u.Replica, "update")
		if err != nil {
			return err
		}
		ps := get(col(r.Column))
		if Available(r) {
			ps.avail--
		}
		if r.Revision == strategy.TargetRevision {
			ps.latest--
		}
		if u.To == strategy.TargetRevision {
			ps.latest++
		}
		if want := podNames(r); !slices.Equal(u.Pods, want) {
			return fmt.Errorf("update of %s: updates pods %v, but its pods are %v", r.Name, u.Pods, want)
		}
		if want := missingColumns(r); !slices.Equal(u.Missing, want) {
			return fmt.Errorf("update of %s: creates members in columns %q, but its missing members are in %q", r.Name, u.Missing, want)
		}
		if u.Index != r.Index || u.Column != col(r.Column) {
			return fmt.Errorf("update of %s: index %d, column %q, but the replica has %d, %q", r.Name, u.Index, u.Column, r.Index, col(r.Column))
		}
		if u.From != r.Revision {
			return fmt.Errorf("update of %s: from %q, but it runs %q", r.Name, u.From, r.Revision)
		}
		if strategy.TargetDataRevision == "" && (u.DataFrom != "" || u.DataTo != "") {
			return fmt.Errorf("update of %s: moves data %q -> %q, but the strategy does not manage data", r.Name, u.DataFrom, u.DataTo)
		}
		if strategy.TargetDataRevision != "" && (u.DataFrom != r.DataRevision || u.DataTo != strategy.TargetDataRevision) {
			return fmt.Errorf("update of %s: data %q -> %q, but it serves %q and the target is %q",
				r.Name, u.DataFrom, u.DataTo, r.DataRevision, strategy.TargetDataRevision)
		}
	}
	for _, d := range step.Delete {
		r, err := touch(d.Replica, "delete")
		if err != nil {
			return err
		}
		if want := podNames(r); !slices.Equal(d.Pods, want) {
			return fmt.Errorf("delete of %s: deletes pods %v, but its pods are %v", r.Name, d.Pods, want)
		}
		if d.Column != col(r.Column) {
			return fmt.Errorf("delete of %s: column %q, but the replica is in %q", r.Name, d.Column, col(r.Column))
		}
		ps := get(col(r.Column))
		ps.total--
		if Available(r) {
			ps.avail--
		}
		if r.Revision == strategy.TargetRevision {
			ps.latest--
		}
	}
	if err := checkRepairs(before, counted, step, touch, col); err != nil {
		return err
	}
	if err := checkCreates(before, strategy, step, col); err != nil {
		return err
	}
	for _, c := range step.Create {
		ps := get(col(c.Column))
		ps.total++
		if c.Revision == strategy.TargetRevision {
			ps.latest++
		}
	}
	n := strategy.Replicas
	for c, after := range post {
		bef := pre[c]
		if floor := min(bef.avail, n-b.MaxUnavailable); after.avail < floor {
			return fmt.Errorf("column %q: availability %d -> %d, below floor %d (n=%d, maxUnavailable=%d)",
				c, bef.avail, after.avail, floor, n, b.MaxUnavailable)
		}
		if limit := max(bef.total, n+b.MaxSurge); after.total > limit {
			return fmt.Errorf("column %q: replicas %d -> %d, above %d (n=%d, maxSurge=%d)",
				c, bef.total, after.total, limit, n, b.MaxSurge)
		}
		if strategy.Mode == rollout.Group && bef.latest <= want {
			if after.latest < bef.latest {
				return fmt.Errorf("column %q: moving forward, target replicas regress %d -> %d", c, bef.latest, after.latest)
			}
			if after.latest > max(bef.latest, want) {
				return fmt.Errorf("column %q: target replicas %d -> %d exceed the requested %d", c, bef.latest, after.latest, want)
			}
		}
	}
	return nil
}

// checkRepairs checks step.Repair (see [Check]); touch marks a replica acted on
// and rejects a second action.
func checkRepairs(before []rollout.Replica, counted []*rollout.Replica, step rollout.Step,
	touch func(name, what string) (*rollout.Replica, error), col func(string) string) error {
	// Recovery owns a replacement and the replica a live replacement stands for;
	// a replacement is counted only once its failed replica is gone, and is
	// repaired either way (it is swapped in only whole).
	replaced := map[string]bool{}
	newcomers := map[string]*rollout.Replica{}
	for i := range before {
		r := &before[i]
		if r.ReplacementFor != "" && r.SwappedAt.IsZero() && !r.Effective().Terminating {
			replaced[r.ReplacementFor] = true
			newcomers[r.Name] = r
		}
	}
	isCounted := map[string]bool{}
	for _, r := range counted {
		isCounted[r.Name] = true
	}
	repaired := map[string]bool{}
	for _, rp := range step.Repair {
		r := newcomers[rp.Replica]
		if r != nil && !isCounted[r.Name] {
			if repaired[r.Name] {
				return fmt.Errorf("repair of %s: replica acted on twice", r.Name)
			}
			repaired[r.Name] = true
		} else {
			var err error
			if r, err = touch(rp.Replica, "repair"); err != nil {
				return err
			}
		}
		if len(r.Members) == 0 {
			return fmt.Errorf("repair of %s: not a gang", r.Name)
		}
		if rp.Revision != r.Revision {
			return fmt.Errorf("repair of gang %s: at %q, but the gang runs %q", r.Name, rp.Revision, r.Revision)
		}
		if rp.Column != col(r.Column) {
			return fmt.Errorf("repair of gang %s: column %q, but the gang is in %q", r.Name, rp.Column, col(r.Column))
		}
		if rp.Index != r.Index {
			return fmt.Errorf("repair of gang %s: index %d, but the gang has %d", r.Name, rp.Index, r.Index)
		}
		if want := missingColumns(r); !slices.Equal(rp.Missing, want) {
			return fmt.Errorf("repair of gang %s: creates members in columns %q, but its missing members are in %q", r.Name, rp.Missing, want)
		}
	}
	acted := map[string]bool{}
	for _, u := range step.Update {
		acted[u.Replica] = true
	}
	for _, d := range step.Delete {
		acted[d.Replica] = true
	}
	for _, rp := range step.Repair {
		acted[rp.Replica] = true
	}
	all := slices.Clone(counted)
	for _, name := range slices.Sorted(maps.Keys(newcomers)) {
		if !isCounted[name] {
			all = append(all, newcomers[name])
		}
	}
	for _, r := range all {
		if acted[r.Name] || (replaced[r.Name] && r.ReplacementFor == "") {
			continue
		}
		if m := missingColumns(r); len(m) > 0 {
			return fmt.Errorf("gang %s lacks members in columns %q, but the step neither updates, deletes nor repairs it", r.Name, m)
		}
	}
	return nil
}

// checkCreates checks step.Create's indexes and members (see [Check]).
func checkCreates(before []rollout.Replica, strategy rollout.Strategy, step rollout.Step, col func(string) string) error {
	held := map[string]map[int]string{} // pool -> index -> what holds it
	hold := func(pool string, i int, by string) string {
		if held[pool] == nil {
			held[pool] = map[int]string{}
		}
		was, ok := held[pool][i]
		if !ok {
			held[pool][i] = by
		}
		return was
	}
	for i := range before {
		if r := &before[i]; !r.Effective().Terminating {
			hold(col(r.Column), r.Index, "replica "+r.Name)
		}
	}
	var members []string
	if strategy.Mode == rollout.Gang {
		members = strategy.Columns
	}
	for k, c := range step.Create {
		if c.Index < 0 {
			return fmt.Errorf("create %d at %q: index %d is negative", k, c.Revision, c.Index)
		}
		if by := hold(col(c.Column), c.Index, fmt.Sprintf("create %d", k)); by != "" {
			return fmt.Errorf("create %d at %q: index %d in column %q is held by %s", k, c.Revision, c.Index, col(c.Column), by)
		}
		if !slices.Equal(c.Members, members) {
			return fmt.Errorf("create %d at %q: members in columns %q, want %q", k, c.Revision, c.Members, members)
		}
	}
	return nil
}

// podNames is the pods [rollout.Plan] names for an update or delete of r:
// r itself, or a gang's members that have a pod and are not terminating.
func podNames(r *rollout.Replica) []string {
	if len(r.Members) == 0 {
		return []string{r.Name}
	}
	var out []string
	for _, m := range r.Members {
		if !m.Missing && !m.State.Terminating {
			out = append(out, m.Name)
		}
	}
	return out
}

// missingColumns is the columns of a gang's missing members, in member order.
func missingColumns(r *rollout.Replica) []string {
	var out []string
	for _, m := range r.Members {
		if m.Missing {
			out = append(out, m.Column)
		}
	}
	return out
}
