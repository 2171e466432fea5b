package rollouttest

import (
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

// Scope: what Exhaustive enumerates, its defaults, and the enumeration of states and
// strategies.

// ScopeStates are the states [Scope] gives replicas (and gang members) by
// default: available, ready but not yet available, not ready, failed.
var ScopeStates = []rollout.State{
	{Ready: true, Available: true, Healthy: true},
	{Ready: true, Healthy: true},
	{Healthy: true},
	{Failed: true},
}

// Scope bounds the states and strategies [Exhaustive] enumerates for one mode.
// Every field but Mode and Replicas has a default.
type Scope struct {
	// Mode is the rollout mode.
	Mode rollout.Mode
	// Replicas: Strategy.Replicas runs from 1 to this (gangs in gang mode, rows
	// per column in group mode).
	Replicas int
	// Extra: each pool holds from n - Extra to n + Extra replicas (at least 0),
	// so scale-ups, scale-downs and leftover surge are covered. Default 0.
	Extra int
	// Revisions: replicas run one of the first Revisions of [Revisions] (default
	// 2). Every one of them is tried as the target, so rollbacks are covered.
	Revisions int
	// Columns is the number of columns in group mode and of members per gang in
	// gang mode; default 1 (2 in group mode).
	Columns int
	// States are the states a replica (in gang mode: each member) can be in;
	// default [ScopeStates].
	States []rollout.State
	// Missing adds a missing member to the states of gang members.
	Missing bool
	// DataRevisions: when above 0, replicas serve one of the first DataRevisions
	// of [DataRevisions], and every strategy is tried without and with
	// TargetDataRevision (the last of them).
	DataRevisions int
	// MaxBudget bounds maxUnavailable and maxSurge, each an integer from 0 to
	// MaxBudget (never both 0); default n, which covers every budget n resolves
	// to.
	MaxBudget int
	// VersionOrders to try; default all three.
	VersionOrders []rollout.VersionOrder
}

func (sc Scope) withDefaults() Scope {
	if sc.Revisions == 0 {
		sc.Revisions = 2
	}
	if sc.Columns == 0 {
		sc.Columns = 1
		if sc.Mode == rollout.Group {
			sc.Columns = 2
		}
	}
	if sc.States == nil {
		sc.States = ScopeStates
	}
	if sc.VersionOrders == nil {
		sc.VersionOrders = []rollout.VersionOrder{rollout.LessFirst, rollout.LatestFirst, rollout.OldFirst}
	}
	return sc
}

func (sc Scope) validate() error {
	switch {
	case sc.Mode != "" && sc.Mode != rollout.Rolling && sc.Mode != rollout.Gang && sc.Mode != rollout.Group:
		return fmt.Errorf("scope: mode: %q is not Rolling, Gang or Group", sc.Mode)
	case sc.Replicas < 1 || sc.Replicas > 16:
		return fmt.Errorf("scope: replicas: %d, want 1 to 16", sc.Replicas)
	case sc.Extra < 0 || sc.Extra > 4:
		return fmt.Errorf("scope: extra: %d, want 0 to 4", sc.Extra)
	case sc.Revisions < 1 || sc.Revisions > len(Revisions):
		return fmt.Errorf("scope: revisions: %d, want 1 to %d", sc.Revisions, len(Revisions))
	case sc.Columns < 1 || sc.Columns > 4:
		return fmt.Errorf("scope: columns: %d, want 1 to 4", sc.Columns)
	case sc.DataRevisions < 0 || sc.DataRevisions > len(DataRevisions):
		return fmt.Errorf("scope: dataRevisions: %d, want 0 to %d", sc.DataRevisions, len(DataRevisions))
	case len(sc.States) == 0:
		return fmt.Errorf("scope: states: must not be empty")
	case sc.MaxBudget < 0:
		return fmt.Errorf("scope: maxBudget: %d is negative", sc.MaxBudget)
	}
	return nil
}

func (sc Scope) gangSize() int {
	if sc.Mode == rollout.Gang {
		return sc.Columns
	}
	return 0
}

// strategies enumerates the strategies for n.
func (sc Scope) strategies(n int) []rollout.Strategy {
	revs := Revisions[:sc.Revisions]
	maxBudget := sc.MaxBudget
	if maxBudget == 0 {
		maxBudget = n
	}
	ratios := []*intstr.IntOrString{nil}
	for k := 0; k <= n; k++ {
		ratios = append(ratios, ptrTo(intstr.FromInt32(int32(k))))
	}
	dataTargets := []string{""}
	if sc.DataRevisions > 0 {
		dataTargets = append(dataTargets, DataRevisions[sc.DataRevisions-1])
	}
	var cols []string
	switch sc.Mode {
	case rollout.Group:
		cols = columnNames(sc.Columns)
	case rollout.Gang:
		cols = gangColumns(sc.Columns)
	}
	var out []rollout.Strategy
	for _, target := range revs {
		for _, history := range [][]string{nil, slices.Clone(revs)} {
			for u := 0; u <= maxBudget; u++ {
				for s := 0; s <= maxBudget; s++ {
					if u == 0 && s == 0 {
						continue
					}
					for _, ratio := range ratios {
						for _, order := range sc.VersionOrders {
							for _, data := range dataTargets {
								out = append(out, rollout.Strategy{
									Mode: sc.Mode, TargetRevision: target, TargetDataRevision: data,
									Replicas: n, Columns: cols, History: history, VersionOrder: order,
									MaxUnavailable: ptrTo(intstr.FromInt32(int32(u))),
									MaxSurge:       ptrTo(intstr.FromInt32(int32(s))),
									LatestRatio:    ratio,
								})
							}
						}
					}
				}
			}
		}
	}
	return out
}

func ptrTo(v intstr.IntOrString) *intstr.IntOrString { return &v }

func columnNames(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("col-%d", i)
	}
	return out
}

// kinds lists every replica a pool can hold (without name or column): each
// revision, data revision and state (in gang mode, each state per member).
func (sc Scope) kinds() []rollout.Replica {
	data := []string{""}
	if sc.DataRevisions > 0 {
		data = DataRevisions[:sc.DataRevisions]
	}
	type memberState struct {
		missing bool
		state   rollout.State
	}
	var ms []memberState
	for _, st := range sc.States {
		ms = append(ms, memberState{state: st})
	}
	if sc.Missing {
		ms = append(ms, memberState{missing: true})
	}
	var out []rollout.Replica
	for _, rev := range Revisions[:sc.Revisions] {
		for _, d := range data {
			if sc.Mode != rollout.Gang {
				for _, st := range sc.States {
					out = append(out, rollout.Replica{Revision: rev, DataRevision: d, State: st})
				}
				continue
			}
			// Every tuple of member states, as a number in base len(ms).
			tuples := 1
			for range sc.Columns {
				tuples *= len(ms)
			}
			for t := range tuples {
				r := rollout.Replica{Revision: rev, DataRevision: d}
				for c := range sc.Columns {
					m := ms[t%len(ms)]
					t /= len(ms)
					r.Members = append(r.Members, rollout.Member{Column: strconv.Itoa(c), Missing: m.missing, State: m.state})
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// multisets returns every multiset of sizes lo..hi over k kinds, as
// nondecreasing index lists.
func multisets(k, lo, hi int) [][]int {
	var out [][]int
	var cur []int
	var rec func(from, left int)
	rec = func(from, left int) {
		if left == 0 {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := from; i < k; i++ {
			cur = append(cur, i)
			rec(i, left-1)
			cur = cur[:len(cur)-1]
		}
	}
	for size := max(lo, 0); size <= hi; size++ {
		rec(0, size)
	}
	return out
}

// states enumerates the replica sets for n.
func (sc Scope) states(n int) [][]rollout.Replica {
	kinds := sc.kinds()
	pools := multisets(len(kinds), n-sc.Extra, n+sc.Extra)
	columns := 1
	var cols []string
	if sc.Mode == rollout.Group {
		columns = sc.Columns
		cols = columnNames(columns)
	}
	var out [][]rollout.Replica
	// One pool per column, as a nondecreasing tuple of pool indexes.
	choice := make([]int, columns)
	var rec func(col, from int)
	rec = func(col, from int) {
		if col == columns {
			var rs []rollout.Replica
			for c, p := range choice {
				for i, k := range pools[p] {
					r := kinds[k]
					r.Name = fmt.Sprintf("r-%d", len(rs))
					r.Index = i
					r.Members = slices.Clone(r.Members)
					for m := range r.Members {
						if !r.Members[m].Missing {
							r.Members[m].Name = memberName(r.Name, r.Members[m].Column)
						}
					}
					if cols != nil {
						r.Column = cols[c]
					}
					rs = append(rs, r)
				}
			}
			out = append(out, rs)
			return
		}
		for p := from; p < len(pools); p++ {
			choice[col] = p
			rec(col+1, p)
		}
	}
	rec(0, 0)
	return out
}
