package rollout

import "slices"

// indexes hands out, lowest first, the indexes ([Replica].Index) that no
// replica of one pool holds.
type indexes struct {
	held []int // sorted, distinct
	at   int   // held[:at] are below next
	next int   // the lowest index not handed out yet, maybe held
}

// newIndexes returns the indexes free beside held, which it sorts and keeps.
func newIndexes(held []int) *indexes {
	slices.Sort(held)
	return &indexes{held: slices.Compact(held)}
}

// take returns the lowest free index and marks it taken.
func (x *indexes) take() int {
	for x.at < len(x.held) && x.held[x.at] <= x.next {
		if x.held[x.at] == x.next {
			x.next++
		}
		x.at++
	}
	i := x.next
	x.next++
	return i
}

// heldIndexes maps each pool key (a replica's column when byColumn, else "")
// to the indexes of the replicas in it that hold one: every replica that is
// not terminating, whether it is planned, swapped out or a replacement. A
// terminating replica holds none: its pods are going, and a replica created in
// its place is named after them once they are gone.
func heldIndexes(replicas []Replica, byColumn bool) map[string]*indexes {
	held := map[string][]int{}
	for i := range replicas {
		r := &replicas[i]
		if terminating(r) {
			continue
		}
		key := ""
		if byColumn {
			key = r.Column
		}
		held[key] = append(held[key], r.Index)
	}
	out := make(map[string]*indexes, len(held))
	for k, h := range held {
		out[k] = newIndexes(h)
	}
	return out
}

// takeIndex takes the lowest free index of the pool key in free, adding the
// pool when it is not there yet.
func takeIndex(free map[string]*indexes, key string) int {
	x := free[key]
	if x == nil {
		x = &indexes{}
		free[key] = x
	}
	return x.take()
}

// podNames returns the pods of r to act on: r itself for a single pod; for a
// gang, the members that have a pod and are not terminating, in member order.
// A single pod's list is cut from *buf, which it refills in chunks, so a step
// that updates thousands of pods does not allocate once per pod; the list's
// capacity is its length, so appending to it copies.
func podNames(r *Replica, buf *[]string) []string {
	if len(r.Members) == 0 {
		if len(*buf) == cap(*buf) {
			*buf = make([]string, 0, 256)
		}
		*buf = append(*buf, r.Name)
		n := len(*buf)
		return (*buf)[n-1 : n : n]
	}
	var out []string
	for i := range r.Members {
		if m := &r.Members[i]; !m.Missing && !m.State.Terminating {
			out = append(out, m.Name)
		}
	}
	return out
}

// missingColumns returns the columns of a replica's missing members, in member
// order; nil when none.
func missingColumns(r *Replica) []string {
	var out []string
	for i := range r.Members {
		if r.Members[i].Missing {
			out = append(out, r.Members[i].Column)
		}
	}
	return out
}

// memberColumns returns the columns of all of a gang's members, in member
// order; nil for a single pod.
func memberColumns(r *Replica) []string {
	if len(r.Members) == 0 {
		return nil
	}
	out := make([]string, len(r.Members))
	for i := range r.Members {
		out[i] = r.Members[i].Column
	}
	return out
}
