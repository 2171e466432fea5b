package rollout

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kplan-dev/kplan/internal/natural"
)

// unit is one replica as the planner sees it. Units point into the caller's slice,
// which is only read.
type unit struct {
	r          *Replica
	key        uint32 // health, surplus and version position, packed; see sortKey
	rev        int32  // rank in the revision table, oldest 0
	avail      bool
	partial    bool
	recovering bool
	done       bool // acted on in this step
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
}

type planner struct {
	s        *Strategy
	revs     revisionTable
	target   int32
	stable   int32 // -1 when no revision to roll back to is known
	n        int
	latest   int // requested count at target (LatestRatio)
	b        Budget
	minAvail int
	pools    []pool
	step     Step
}

// Plan returns one reconcile's actions for replicas under strategy. See the
// package documentation for each mode's algorithm and invariants.
//
// replicas is not modified and its order does not matter: the same replicas in
// any order give the same Step. Terminating replicas, replicas swapped out by
// recovery (SwappedAt set), and replacements whose failed replica still exists are
// ignored; a replica being replaced, or a replacement whose failed replica is
// gone, is counted but never touched. Bad input (empty
// or repeated names, an empty revision, a gang without members, a group replica
// without a column, malformed budgets) returns an error naming the replica and
// field.
func Plan(replicas []Replica, strategy Strategy) (Step, error) {
	p := planner{s: &strategy, n: strategy.Replicas}
	if err := strategy.validate(); err != nil {
		return Step{}, err
	}
	var err error
	if p.b, err = ResolveBudget(strategy.MaxUnavailable, strategy.MaxSurge, p.n); err != nil {
		return Step{}, fmt.Errorf("strategy: %w", err)
	}
	if p.latest, err = ResolveRatio(strategy.LatestRatio, p.n); err != nil {
		return Step{}, fmt.Errorf("strategy: %w", err)
	}
	p.minAvail = p.n - p.b.MaxUnavailable
	if err := p.collect(replicas); err != nil {
		return Step{}, err
	}
	p.step.Budget = p.b
	p.rank()
	if err := p.run(); err != nil {
		return Step{}, err
	}
	return p.step, nil
}

// collect validates replicas and sorts them into pools.
func (p *planner) collect(replicas []Replica) error {
	index := make(map[string]int32, len(replicas))
	revSet := map[string]bool{p.s.TargetRevision: true}
	for _, h := range p.s.History {
		revSet[h] = true
	}
	for i := range replicas {
		r := &replicas[i]
		if err := p.validReplica(i, r); err != nil {
			return err
		}
		if _, dup := index[r.Name]; dup {
			return fmt.Errorf("replica %s: name: repeated", r.Name)
		}
		index[r.Name] = int32(i)
		revSet[r.Revision] = true
	}
	revs := make([]string, 0, len(revSet))
	for r := range revSet {
		revs = append(revs, r)
	}
	p.revs = newRevisionTable(revs, p.s.History)
	p.target = int32(p.revs.rank[p.s.TargetRevision])

	// Which replicas are being replaced by recovery.
	var replaced map[int32]bool
	for i := range replicas {
		r := &replicas[i]
		if r.ReplacementFor == "" || !live(r) {
			continue
		}
		if j, ok := index[r.ReplacementFor]; ok && live(&replicas[j]) {
			if replaced == nil {
				replaced = map[int32]bool{}
			}
			replaced[j] = true
		}
	}
	colIndex := map[string]int{}
	addPool := func(col string) int {
		if k, ok := colIndex[col]; ok {
			return k
		}
		colIndex[col] = len(p.pools)
		p.pools = append(p.pools, pool{column: col})
		return len(p.pools) - 1
	}
	if p.s.Mode == Group {
		for _, c := range p.s.Columns {
			addPool(c)
		}
	} else {
		addPool("")
		p.pools[0].units = make([]unit, 0, len(replicas))
	}
	for i := range replicas {
		r := &replicas[i]
		if !live(r) {
			continue
		}
		if r.ReplacementFor != "" {
			if j, ok := index[r.ReplacementFor]; ok && live(&replicas[j]) {
				continue
			}
		}
		col := ""
		if p.s.Mode == Group {
			col = r.Column
		}
		k := addPool(col)
		// A replica being replaced, and a replacement standing in for a replica
		// already gone, are counted but left to recovery.
		u := unit{r: r, rev: int32(p.revs.rank[r.Revision]), recovering: replaced[int32(i)] || r.ReplacementFor != ""}
		u.partial = r.Partial()
		u.avail = counts(r.Effective())
		pl := &p.pools[k]
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
	p.stable = p.stableRevision()
	return nil
}

func (p *planner) validReplica(i int, r *Replica) error {
	switch {
	case r.Name == "":
		return fmt.Errorf("replica[%d]: name: must not be empty", i)
	case r.Revision == "":
		return fmt.Errorf("replica %s: revision: must not be empty", r.Name)
	case p.s.Mode == Gang && len(r.Members) == 0:
		return fmt.Errorf("replica %s: members: gang mode needs at least one member", r.Name)
	case p.s.Mode == Group && r.Column == "":
		return fmt.Errorf("replica %s: column: group mode needs a column", r.Name)
	}
	for j := range r.Members {
		if r.Members[j].Name == "" {
			return fmt.Errorf("replica %s: members[%d].name: must not be empty", r.Name, j)
		}
	}
	return nil
}

// live reports whether a replica takes part in planning at all.
func live(r *Replica) bool {
	return !r.State.Terminating && r.SwappedAt.IsZero()
}

// stableRevision is the revision replicas held back by LatestRatio run: the newest
// revision other than the target that a replica runs, or else the newest revision
// in History older than the target.
func (p *planner) stableRevision() int32 {
	best := int32(-1)
	for k := range p.pools {
		for i := range p.pools[k].units {
			if r := p.pools[k].units[i].rev; r != p.target && r > best {
				best = r
			}
		}
	}
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

// rank computes each unit's sort key and sorts every pool once.
func (p *planner) rank() {
	nrev := len(p.revs.names)
	// availability of each version per pool, and its minimum over pools.
	availBy := make([]int, nrev*len(p.pools))
	for k := range p.pools {
		for i := range p.pools[k].units {
			if u := &p.pools[k].units[i]; u.avail {
				availBy[k*nrev+int(u.rev)]++
			}
		}
	}
	minAvail := make([]int, nrev)
	for v := range nrev {
		m := -1
		for k := range p.pools {
			if a := availBy[k*nrev+v]; m < 0 || a < m {
				m = a
			}
		}
		minAvail[v] = max(m, 0)
	}
	// position of each old version in the cut order.
	order := make([]int, nrev)
	for v := range order {
		order[v] = v
	}
	slices.SortFunc(order, func(a, b int) int {
		switch p.s.VersionOrder {
		case LatestFirst:
			return cmp.Compare(b, a)
		case LessFirst:
			if c := cmp.Compare(minAvail[a], minAvail[b]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a, b)
	})
	pos := make([]uint32, nrev)
	for i, v := range order {
		pos[v] = uint32(i)
	}
	for k := range p.pools {
		us := p.pools[k].units
		for i := range us {
			u := &us[i]
			h := uint32(healthRank(u.r.Effective()))
			if u.partial && h > 1 {
				h = 1
			}
			surplus := uint32(1)
			if availBy[k*nrev+int(u.rev)] > minAvail[u.rev] {
				surplus = 0 // cutting it does not lower its version's serving capacity
			}
			u.key = h<<30 | surplus<<29 | pos[u.rev]
		}
		slices.SortFunc(us, compareUnits)
	}
}

func compareUnits(a, b unit) int {
	if a.key != b.key {
		return cmp.Compare(a.key, b.key)
	}
	if a.r.Priority != b.r.Priority {
		return cmp.Compare(a.r.Priority, b.r.Priority)
	}
	if a.r.DeletionCost != b.r.DeletionCost {
		return cmp.Compare(a.r.DeletionCost, b.r.DeletionCost)
	}
	return natural.Compare(a.r.Name, b.r.Name)
}
