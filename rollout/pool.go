package rollout

import (
	"slices"

	"github.com/kplan-dev/kplan"
	"github.com/kplan-dev/kplan/internal/natural"
)

// run picks each pool's target count and plans every pool.
func (p *planner) run() {
	latest := p.latest
	if p.s.Mode == Group {
		latest = p.window()
	}
	p.step.Latest = latest
	complete := true
	for k := range p.pools {
		pl := &p.pools[k]
		t := p.latest
		if p.s.Mode == Group && pl.latest <= p.latest {
			// Moving forward: never below what the column already runs, never past
			// the window.
			t = max(pl.latest, latest)
		}
		complete = p.planPool(k, t) && complete
	}
	complete = p.planData() && complete
	p.repair()
	p.explain()
	p.step.Complete = complete && p.step.Empty() && latest == p.latest && p.wholeRows()
}

// wholeRows reports whether every row is whole (group mode): for every version,
// each column runs as many replicas of it as the others, so the versions' whole
// rows add up to Replicas. Always true in other modes.
func (p *planner) wholeRows() bool {
	if p.rowMin == nil || len(p.pools) == 0 {
		return true
	}
	rows := 0
	for _, m := range p.rowMin {
		rows += m
	}
	return rows == p.n
}

// rowExtra returns, in group mode with a stable revision and LatestRatio below
// Replicas (so some replicas stay old), how many replicas of
// each version other than the target and the stable one pool k runs beyond
// that version's whole rows: they serve in no whole row and move to the stable
// revision. Versions the pool does not run are left out. nil otherwise.
func (p *planner) rowExtra(k int) map[int32]int {
	if p.rowMin == nil || p.stable < 0 || p.latest >= p.n {
		return nil
	}
	extra := make(map[int32]int, len(p.pools[k].revs))
	for _, c := range p.pools[k].revs {
		if c.rev != p.target && c.rev != p.stable {
			extra[c.rev] = c.n - p.rowMin[c.rev]
		}
	}
	return extra
}

// window is group mode's latest count for this step: the latest version's
// availability TargetRatio_n = min over columns of its available replicas, plus one
// step, capped at the requested count. Once no column is below the requested
// count (the ratio was lowered, or the rollout is done), it is the requested
// count: every column is planned toward it.
func (p *planner) window() int {
	t, below := -1, false
	for k := range p.pools {
		if a := p.pools[k].latestAvail; t < 0 || a < t {
			t = a
		}
		below = below || p.pools[k].latest < p.latest
	}
	if !below {
		return p.latest
	}
	return min(p.latest, max(t, 0)+p.b.Step())
}

// planPool plans one pool toward t replicas at the target revision and n-t at the
// stable one. It reports whether the pool is already complete.
func (p *planner) planPool(k, t int) bool {
	pl := &p.pools[k]
	n := p.n
	total := len(pl.units)
	avail := pl.avail
	newCnt := pl.latest
	oldCnt := total - newCnt
	// Group mode: replicas beyond their version's whole rows (see rowExtra), and
	// the stable revision's quota once those rows are made whole.
	extra := p.rowExtra(k)
	stableCnt, stableQuota := 0, 0
	if extra != nil {
		stableQuota = n - t - p.otherRows
		for _, c := range pl.revs {
			if c.rev == p.stable {
				stableCnt = c.n
			}
		}
	}
	// 1. Surplus: delete over-quota replicas, unavailable first, keeping the floor.
	newOver, oldOver := 0, 0
	if excess := total - n; excess > 0 {
		newOver, oldOver = max(0, newCnt-t), max(0, oldCnt-(n-t))
		// With old rows kept (extra != nil), old replicas are cut in three passes so
		// that every column keeps the same old rows: first those beyond their
		// version's whole rows (more in this column than in the column with the
		// fewest), then other old versions' whole rows, then the stable revision's.
		// Cutting by availability alone could keep the stable row in one column and
		// another old version's in the next, leaving neither whole.
		passes := 1
		var beyond map[int32]int
		if extra != nil {
			passes = 3
			beyond = make(map[int32]int, len(pl.revs))
			for _, c := range pl.revs {
				if c.rev != p.target {
					beyond[c.rev] = c.n - p.rowMin[c.rev]
				}
			}
		}
		for pass := range passes {
			for i := range pl.units {
				if excess == 0 {
					break
				}
				u := &pl.units[i]
				isNew := u.rev == p.target
				if u.done || u.recovering || (isNew && newOver == 0) || (!isNew && oldOver == 0) {
					continue
				}
				if passes > 1 && !isNew {
					switch {
					case beyond[u.rev] > 0:
						if pass != 0 {
							continue
						}
					case pass == 0:
						continue
					case (u.rev == p.stable) != (pass == 2):
						continue
					}
				}
				if extra != nil && u.rev == p.stable && stableCnt <= stableQuota {
					// Keep the stable replicas whole rows need (created to replace
					// replicas beyond their rows); delete those replicas instead.
					continue
				}
				if u.avail && avail-1 < p.minAvail {
					continue
				}
				if !isNew && oldCnt <= p.keepOld {
					// Kept for the other roles (PlanLockstep's old share).
					u.kept = keptByLockstep
					oldOver--
					continue
				}
				if u.avail {
					avail--
				}
				u.done = true
				if beyond != nil && !isNew {
					beyond[u.rev]--
				}
				r := p.replica(u)
				p.step.Delete = append(p.step.Delete, Delete{Replica: r.Name, Column: pl.column, Pods: podNames(r, &p.pods)})
				if extra != nil {
					if u.rev == p.stable {
						stableCnt--
					} else if !isNew && extra[u.rev] > 0 {
						extra[u.rev]--
					}
				}
				excess--
				if excess == 0 {
					newOver, oldOver = 0, 0
				}
				total--
				if isNew {
					newOver--
					newCnt--
				} else {
					oldOver--
					oldCnt--
				}
			}
		}
	}
	// 2. Missing replicas: create them, target first up to the requested count
	// (creating does not cost availability, so the group window does not apply).
	if missing := n - total; missing > 0 {
		cNew := min(missing, max(0, p.latest-newCnt))
		p.create(p.target, pl.column, cNew)
		p.create(p.stable, pl.column, missing-cNew)
		newCnt += cNew
		oldCnt += missing - cNew
		total = n
		if newCnt > t && newCnt <= p.latest {
			t = newCnt
		}
	}
	// 3. Move replicas in place: old to target when short, target to stable when over.
	forward := newCnt < t
	need := t - newCnt
	to := p.target
	if !forward {
		need = newCnt - t
		to = p.stable
	}
	// Moving forward, in-place moves leave at least keepOld old replicas; the
	// target replicas they would have made are created by surge (step 4).
	heldMoves, moved := 0, 0
	for i := range pl.units {
		u := &pl.units[i]
		if u.done || u.recovering {
			continue
		}
		candidate := need > 0 && forward != (u.rev == p.target) && u.kept != keptByLockstep
		if !candidate {
			if u.partial {
				// Finish a half-updated gang at its own revision: it is unavailable, so free.
				p.update(u, p.replica(u).Revision, pl.column)
			}
			continue
		}
		if u.avail && avail-1 < p.minAvail {
			continue
		}
		if forward && oldCnt-moved <= p.keepOld {
			u.kept = keptByLockstep
			heldMoves++
			need--
			continue
		}
		if u.avail {
			avail--
		}
		p.update(u, p.revs.names[to], pl.column)
		if extra != nil && extra[u.rev] > 0 {
			extra[u.rev]--
		}
		need--
		moved++
	}
	// short is what the floor kept from moving; the moves keepOld refused are
	// added back for the surge.
	short := need
	need += heldMoves
	// 3b. Group mode, when the column's target is the requested count (so the
	// old replicas left stay old): move replicas beyond their version's whole
	// rows to the stable revision with the budget step 3 left, so that every row
	// is whole (a row serves only when all its columns run one revision).
	if t == p.latest && extra != nil {
		for i := range pl.units {
			u := &pl.units[i]
			if u.done || u.recovering || extra[u.rev] <= 0 {
				continue
			}
			if u.avail {
				if avail-1 < p.minAvail {
					if u.kept == 0 {
						u.kept = keptByRows
					}
					continue
				}
				avail--
			}
			p.update(u, p.revs.names[p.stable], pl.column)
			extra[u.rev]--
		}
		// When the floor blocks them, surge at the stable revision as step 4
		// does; the replicas beyond their rows are deleted by step 1 once the new
		// ones are available. Replicas above n already stand in for some.
		left := -max(0, total-n)
		for _, e := range extra {
			left += max(e, 0)
		}
		if room := n + p.b.MaxSurge - total; need == 0 && left > 0 && room > 0 {
			c := min(left, room)
			p.create(p.stable, pl.column, c)
			total += c
		}
	}
	// 4. Surge: when the floor (or keepOld) blocks in-place moves, create
	// replicas above n.
	if need > 0 {
		if room := n + p.b.MaxSurge - total; room > 0 {
			c := min(need, room)
			p.create(to, pl.column, c)
			need -= c
			total += c
		}
	}
	pl.waits = waits{forward: forward, short: short, window: t < p.latest && pl.latest <= p.latest,
		newOver: newOver > 0, oldOver: oldOver > 0}
	complete := total == n && newCnt == t && avail == total
	for i := range pl.units {
		if pl.units[i].partial || pl.units[i].recovering {
			complete = false
		}
	}
	return complete
}

// create asks for count replicas at rev in the pool of column, each in the
// lowest index free in that pool.
func (p *planner) create(rev int32, column string, count int) {
	if count <= 0 || rev < 0 {
		return
	}
	if p.free == nil {
		p.free = heldIndexes(p.replicas, p.s.Mode == Group)
	}
	for range count {
		c := Create{Revision: p.revs.names[rev], Column: column, Index: takeIndex(p.free, column)}
		if p.s.Mode == Gang {
			c.Members = slices.Clone(p.s.Columns)
		}
		p.step.Create = append(p.step.Create, c)
	}
}

func (p *planner) update(u *unit, to, column string) {
	u.done = true
	r := p.replica(u)
	up := Update{Replica: r.Name, From: r.Revision, To: to, Column: column, Index: r.Index,
		Pods: podNames(r, &p.pods), Missing: missingColumns(r)}
	if p.s.TargetDataRevision != "" {
		// An updated replica always ends at the target data.
		up.DataFrom, up.DataTo = r.DataRevision, p.s.TargetDataRevision
	}
	p.step.Update = append(p.step.Update, up)
}

// repair lists, pool by pool in candidate order, every gang with missing
// members that this step neither updates nor deletes (an Update creates them
// itself) and that recovery is not replacing, then the recovery replacements
// with missing members in name order: a replacement is swapped in only once
// it is whole. Repairing costs no budget: the gang is unavailable until it is
// whole, and no replica is added.
func (p *planner) repair() {
	for k := range p.pools {
		pl := &p.pools[k]
		for i := range pl.units {
			u := &pl.units[i]
			r := p.replica(u)
			if !u.missing || u.done || (u.recovering && r.ReplacementFor == "") {
				continue
			}
			p.step.Repair = append(p.step.Repair, Repair{Replica: r.Name, Revision: r.Revision, Column: pl.column,
				Index: r.Index, Missing: missingColumns(r)})
		}
	}
	slices.SortFunc(p.newcomers, func(a, b int) int { return natural.Compare(p.replicas[a].Name, p.replicas[b].Name) })
	for _, i := range p.newcomers {
		r := &p.replicas[i]
		col := ""
		if p.s.Mode == Group {
			col = r.Column
		}
		p.step.Repair = append(p.step.Repair, Repair{Replica: r.Name, Revision: r.Revision, Column: col,
			Index: r.Index, Missing: missingColumns(r)})
	}
}

// waits is what a pool still lacks after its actions.
type waits struct {
	forward bool // the pool moves toward the target (else back to stable)
	short   int  // how many more replicas the budget kept from moving
	window  bool // group mode: the window holds old replicas back
	newOver bool // surplus target replicas could not be deleted
	oldOver bool // surplus old replicas could not be deleted
}

// explain records why each untouched replica that still has to change waits.
// It runs once all pools are planned. A first pass counts the waits, so that
// Waiting is allocated once: most replicas wait in the middle of a rollout.
func (p *planner) explain() {
	n := 0
	for k := range p.pools {
		pl := &p.pools[k]
		w := pl.waits
		for i := range pl.units {
			if p.reason(&pl.units[i], &w) != "" {
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	p.step.Waiting = make([]Wait, 0, n)
	for k := range p.pools {
		pl := &p.pools[k]
		w := pl.waits
		for i := range pl.units {
			u := &pl.units[i]
			if reason := p.reason(u, &w); reason != "" {
				p.step.Waiting = append(p.step.Waiting, wait(p.replica(u).Name, reason))
			}
		}
	}
}

// reason is why u waits, or "" when it does not (done, or nothing to change).
// It counts a ReasonBudget against w.short.
func (p *planner) reason(u *unit, w *waits) kplan.Reason {
	if u.done {
		return ""
	}
	isNew := u.rev == p.target
	switch {
	case u.recovering:
		return ReasonRecovering
	case u.kept == keptByLockstep:
		return ReasonLockstep
	case (isNew && w.newOver) || (!isNew && w.oldOver):
		return ReasonScaleDown
	case u.kept == keptByRows:
		return ReasonBudget
	case w.short > 0 && w.forward != isNew:
		w.short--
		return ReasonBudget
	case w.window && !isNew:
		return ReasonWindow
	case u.stale:
		return ReasonBudget // its data change waits for the budget
	case !u.avail && !u.missing: // a gang missing members waits for its Repair
		return ReasonNotAvailable
	}
	return ""
}
