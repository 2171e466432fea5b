package rollout

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan/internal/natural"
)

// unit is one replica as the planner sees it. Units index the caller's slice,
// which is only read.
type unit struct {
	ri int32 // index of the replica in planner.replicas; no pointer, so that
	// the garbage collector need not scan units nor moving them pay write barriers
	// name is the replica's natural key (appendNaturalKey): planner.names[name0:name1].
	name0, name1 uint32
	rev          int32 // rank in the revision table, oldest 0
	priority     int32 // the replica's Priority and DeletionCost, copied while
	cost         int64 // collect reads it so that rank does not chase r
	health       uint8 // healthRank of the effective state
	avail        bool
	partial      bool
	missing      bool // a gang with missing members: repaired unless done or recovering
	recovering   bool
	stale        bool   // serves data other than Strategy.TargetDataRevision
	done         bool   // acted on in this step
	kept         keptBy // left alone on purpose, and why
}

// pool is the set of replicas one availability floor applies to: all replicas in
// rolling and gang mode, one column in group mode.
type pool struct {
	column string
	units  []unit
	latest int // units at the target revision
	avail  int
	// latestAvail is how many available units run the target revision.
	latestAvail int
	// lcp is the length of the prefix the natural keys of all units share,
	// -1 before the first unit; first is the first unit's key.
	lcp   int
	first []byte
	waits waits // what the pool lacks once planned, for explain
	revs  []revCount
}

// revCount is how many of a pool's units run one revision, and how many of
// those are available.
type revCount struct {
	rev      int32
	n, avail int
}

type planner struct {
	// newcomers indexes the replacements planning skips because their failed
	// replica still exists, that lack members (see repair).
	newcomers []int
	s         *Strategy
	revs      revisionTable
	target    int32
	stable    int32 // -1 when no revision to roll back to is known
	n         int
	latest    int // requested count at target (LatestRatio)
	b         Budget
	minAvail  int
	pools     []pool
	step      Step
	replicas  []Replica // the caller's, only read
	names     []byte    // natural keys of all names, see unit.name0
	// free hands out the indexes of created replicas per pool (column in group
	// mode); nil until the first create.
	free map[string]*indexes
	// pods is the chunk single pods' Update.Pods and Delete.Pods are cut from
	// (podNames).
	pods []string
	// Group mode: rowMin[v] is the fewest replicas of version v in a column
	// (v's whole rows); otherRows sums it over versions other than the target
	// and the stable one.
	rowMin    []int
	otherRows int
	// keepOld is how many replicas not at the target each pool keeps while
	// moving forward (PlanLockstep's old side); 0 for Plan.
	keepOld int
}

// keptBy says why a unit that would change was left alone: one byte, so
// that a unit stays 40 bytes.
type keptBy uint8

const (
	// keptByRows: group mode; beyond its version's whole rows, kept by the floor.
	keptByRows keptBy = 1 + iota
	// keptByLockstep: kept by keepOld (PlanLockstep's old share).
	keptByLockstep
)

// Size limits. [Plan], [PlanRecover] and [PlanLockstep] reject larger input with
// an error.
const (
	// MaxReplicas is the most replicas one call accepts, and the largest
	// Strategy.Replicas and History.
	MaxReplicas = 1 << 20
	// MaxNameLength is the longest replica name accepted: the longest Kubernetes
	// object name.
	MaxNameLength = 253
)

// Plan returns one reconcile's actions for replicas under strategy. See the
// package documentation for each mode's algorithm and invariants.
//
// replicas is not modified and its order does not matter: the same replicas in
// any order give the same Step. Terminating replicas, replicas swapped out by
// recovery (SwappedAt set), and replacements whose failed replica still exists are
// ignored; a replica being replaced, or a replacement whose failed replica is
// gone, is counted but never touched. Bad input (empty
// or repeated names, an empty revision, a gang without members, a group replica
// without a column, malformed budgets, a TargetDataRevision with maxUnavailable
// 0) returns an error naming the replica and field.
func Plan(replicas []Replica, strategy Strategy) (Step, error) {
	return plan(replicas, strategy, 0)
}

// plan is [Plan] keeping at least keepOld replicas (per pool) that do not run
// the target revision, where they exist: it deletes none of them and moves
// none to the target below that count (see PlanLockstep).
func plan(replicas []Replica, strategy Strategy, keepOld int) (Step, error) {
	p := planner{s: &strategy, n: strategy.Replicas, keepOld: keepOld}
	if err := strategy.validate(); err != nil {
		return Step{}, err
	}
	var err error
	if p.b, err = ResolveBudget(strategy.MaxUnavailable, strategy.MaxSurge, p.n); err != nil {
		return Step{}, fmt.Errorf("strategy: %w", err)
	}
	if err := checkData(&strategy, p.b); err != nil {
		return Step{}, err
	}
	if p.latest, err = ResolveRatio(strategy.LatestRatio, p.n); err != nil {
		return Step{}, fmt.Errorf("strategy: %w", err)
	}
	p.minAvail = p.n - p.b.MaxUnavailable
	if len(replicas) > MaxReplicas {
		return Step{}, fmt.Errorf("replicas: %d, more than MaxReplicas %d", len(replicas), MaxReplicas)
	}
	if err := p.collect(replicas); err != nil {
		// Report the problem independently of the replicas' order (see invalid.go).
		if canonical := replicasError(replicas, planCheck(strategy.Mode)); canonical != nil {
			return Step{}, canonical
		}
		return Step{}, err
	}
	if p.stable < 0 {
		// No older revision is known (every replica runs the target and History
		// names none older): there is nothing to hold replicas back on, so all of
		// them run the target, as in a StatefulSet whose current and update
		// revisions are the same.
		p.latest = p.n
	}
	p.step.Budget = p.b
	p.rank()
	p.run()
	summarize(&p.step)
	return p.step, nil
}

// collect validates replicas and sorts them into pools.
func (p *planner) collect(replicas []Replica) error {
	p.replicas = replicas
	index := make(map[string]int, len(replicas))
	revSet := map[string]bool{p.s.TargetRevision: true}
	for _, h := range p.s.History {
		revSet[h] = true
	}
	for i := range replicas {
		r := &replicas[i]
		if !p.validReplica(r) {
			return errInvalidReplicas
		}
		if _, dup := index[r.Name]; dup {
			return fmt.Errorf("replica %s: name: repeated", r.Name)
		}
		index[r.Name] = i
		revSet[r.Revision] = true
	}
	revs := make([]string, 0, len(revSet))
	for r := range revSet {
		revs = append(revs, r)
	}
	p.revs = newRevisionTable(revs, p.s.History)
	p.target = int32(p.revs.rank[p.s.TargetRevision])

	// Which replicas are being replaced by recovery.
	replaced := map[int]bool{}
	for i := range replicas {
		r := &replicas[i]
		if r.ReplacementFor == "" || !live(r) {
			continue
		}
		if j, ok := index[r.ReplacementFor]; ok && live(&replicas[j]) {
			replaced[j] = true
		}
	}
	poolOf := map[string]int{}
	addPool := func(col string) *pool {
		k, ok := poolOf[col]
		if !ok {
			k = len(p.pools)
			poolOf[col] = k
			p.pools = append(p.pools, pool{column: col, lcp: -1})
		}
		return &p.pools[k]
	}
	if p.s.Mode == Group {
		for _, c := range p.s.Columns {
			addPool(c)
		}
	} else {
		addPool("").units = make([]unit, 0, len(replicas))
	}
	// A natural key is rarely more than twice its name (each digit run adds 5
	// bytes); append grows names when it is.
	size := 0
	for i := range replicas {
		size += len(replicas[i].Name)
	}
	p.names = make([]byte, 0, 2*size)
	newestOld := int32(-1)
	for i := range replicas {
		r := &replicas[i]
		eff, partial, missing, bad := inspect(r)
		if bad >= 0 {
			return memberError(r, bad)
		}
		if eff.Terminating || !r.SwappedAt.IsZero() {
			continue // not live
		}
		if j, ok := index[r.ReplacementFor]; ok && r.ReplacementFor != "" && live(&replicas[j]) {
			// Its failed replica still exists: left to recovery, but made whole
			// if it lacks members (a replacement is only swapped in whole).
			if missing {
				p.newcomers = append(p.newcomers, i)
			}
			continue
		}
		rev := int32(p.revs.rank[r.Revision])
		if rev != p.target {
			newestOld = max(newestOld, rev)
		}
		// A replica being replaced, and a replacement standing in for a replica
		// already gone, are counted but left to recovery.
		u := unit{ri: int32(i), rev: rev, recovering: replaced[i] || r.ReplacementFor != "",
			priority: r.Priority, cost: r.DeletionCost,
			stale:   p.s.TargetDataRevision != "" && r.DataRevision != p.s.TargetDataRevision,
			partial: partial, missing: missing, avail: counts(eff), health: uint8(healthRank(eff))}
		col := ""
		if p.s.Mode == Group {
			col = r.Column
		}
		pl := addPool(col)
		u.name0 = uint32(len(p.names))
		p.names = appendNaturalKey(p.names, r.Name)
		u.name1 = uint32(len(p.names))
		key := p.names[u.name0:u.name1]
		if pl.lcp < 0 {
			pl.first, pl.lcp = key, len(key)
		} else {
			pl.lcp = commonPrefix(pl.first[:pl.lcp], key)
		}
		pl.units = append(pl.units, u)
		if u.avail {
			pl.avail++
		}
		if u.rev == p.target {
			pl.latest++
			if u.avail {
				pl.latestAvail++
			}
		}
	}
	slices.SortFunc(p.pools, func(a, b pool) int { return natural.Compare(a.column, b.column) })
	p.stable = p.stableRevision(newestOld)
	return nil
}

// validReplica is the fast path's check of one replica; replicasError explains a
// failure.
func (p *planner) validReplica(r *Replica) bool {
	return r.Name != "" && len(r.Name) <= MaxNameLength && r.Revision != "" && r.Index >= 0 &&
		(p.s.Mode != Gang || len(r.Members) > 0) && (p.s.Mode != Group || r.Column != "")
}

// errInvalidReplicas is collect's fast-path failure; Plan replaces it with
// replicasError's order-independent message.
var errInvalidReplicas = errors.New("rollout: invalid replicas")

// live reports whether a replica takes part in planning at all: it is not
// terminating (a gang: not every present member is, see [Replica.Effective])
// and not swapped out.
func live(r *Replica) bool {
	return r.SwappedAt.IsZero() && !terminating(r)
}

// stableRevision is the revision replicas held back by LatestRatio run: the newest
// revision other than the target that a replica runs, or else the newest revision
// in History older than the target.
// newestOld is the newest revision other than the target among the planned
// replicas, -1 if none.
func (p *planner) stableRevision(newestOld int32) int32 {
	best := newestOld
	if best >= 0 {
		return best
	}
	for _, h := range p.s.History {
		if r := int32(p.revs.rank[h]); r != p.target && r > best {
			best = r
		}
	}
	return best
}

// replica is u's replica.
func (p *planner) replica(u *unit) *Replica { return &p.replicas[u.ri] }
