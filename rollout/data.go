package rollout

import "fmt"

// checkData rejects a data release that could never finish: data changes are
// made in place, so they need a maxUnavailable of at least 1.
func checkData(s *Strategy, b Budget) error {
	if s.TargetDataRevision != "" && b.MaxUnavailable == 0 && s.Replicas > 0 {
		return fmt.Errorf("strategy: maxUnavailable: resolves to 0, but targetDataRevision %q is released in place and needs at least 1",
			s.TargetDataRevision)
	}
	return nil
}

// planData moves replicas whose data is not TargetDataRevision in place, under
// the budget the pod changes left: it runs after every pool is planned. A
// replica already updated this step for its pod revision takes its new data in
// the same update, so it counts once; a replica being deleted needs
// nothing. The rest go in the pool's order (least healthy first: an unavailable
// replica costs nothing), an available one only while availability stays at or
// above the floor, and only once its pod revision is final: while the pool still
// has pod moves pending (held by the budget or the group window), a replica on
// the side that will move (old replicas rolling forward, target replicas rolling
// back) waits to take its data with its pod update, so that no replica is taken
// down twice. It reports whether every replica already served the target data.
func (p *planner) planData() bool {
	if p.s.TargetDataRevision == "" {
		return true
	}
	done := true
	for k := range p.pools {
		pl := &p.pools[k]
		avail := pl.avail
		for i := range pl.units {
			if u := &pl.units[i]; u.done && u.avail {
				avail-- // updated or deleted by the pod plan
			}
		}
		w := &pl.waits
		pending := w.short > 0 || w.window
		forward := w.forward || w.window
		for i := range pl.units {
			u := &pl.units[i]
			if !u.stale {
				continue
			}
			done = false
			if u.done || u.recovering {
				continue
			}
			if u.avail && pending && (u.rev == p.target) != forward {
				continue // its pod moves later; its data moves then
			}
			if u.avail {
				if avail-1 < p.minAvail {
					continue
				}
				avail--
			}
			// The pod revision stays: only the data moves.
			p.update(u, p.replica(u).Revision, pl.column)
		}
	}
	return done
}
