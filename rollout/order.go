package rollout

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/kplan-dev/kplan/internal/natural"
)

// generation returns the integer before the first "-" of a revision name ("3-abc"
// is generation 3) and whether there is one: the prefix must be ASCII decimal
// digits only (no sign or spaces) and fit in an int64.
func generation(revision string) (int64, bool) {
	head, _, found := strings.Cut(revision, "-")
	if !found || head == "" || strings.Trim(head, "0123456789") != "" {
		return 0, false
	}
	g, err := strconv.ParseInt(head, 10, 64)
	if err != nil || g < 0 {
		return 0, false
	}
	return g, true
}

// CompareRevisions orders revisions oldest first: -1 when a is older than b, 0
// when equal, +1 when newer.
//
//   - Revisions in history (oldest to newest) compare by position and are newer
//     than every revision outside it.
//   - Outside history, revisions with a generation (the integer before the first
//     "-", ASCII digits only, fitting an int64: "3-abc" is 3) compare by it and
//     are newer than those without one.
//   - The rest, and equal generations, compare in natural order of their names.
func CompareRevisions(a, b string, history []string) int {
	if a == b {
		return 0
	}
	ka, kb := revisionKeyOf(a, history), revisionKeyOf(b, history)
	if c := cmp.Compare(ka.class, kb.class); c != 0 {
		return c
	}
	if c := cmp.Compare(ka.num, kb.num); c != 0 {
		return c
	}
	return natural.Compare(a, b)
}

// sortRevisions returns the distinct revisions in revs, oldest first, ordered by
// [CompareRevisions]. revs is not modified.
func sortRevisions(revs, history []string) []string {
	out := slices.Clone(revs)
	slices.SortFunc(out, func(a, b string) int { return CompareRevisions(a, b, history) })
	return slices.Compact(out)
}

type revisionKey struct {
	class int
	num   int64
}

func revisionKeyOf(r string, history []string) revisionKey {
	if i := slices.Index(history, r); i >= 0 {
		return revisionKey{class: 2, num: int64(i)}
	}
	if g, ok := generation(r); ok {
		return revisionKey{class: 1, num: g}
	}
	return revisionKey{}
}

// CompareReplicas is the order replicas are chosen in within one version: least
// healthy first (failed or lost, then not ready or not healthy, then ready but not
// available, then available; see [Replica.Effective]), then lower Priority, then
// lower DeletionCost, then name in natural order ("r-9" before "r-10").
func CompareReplicas(a, b *Replica) int {
	if c := cmp.Compare(healthRank(a.Effective()), healthRank(b.Effective())); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.DeletionCost, b.DeletionCost); c != 0 {
		return c
	}
	return natural.Compare(a.Name, b.Name)
}

// revisionTable ranks the revisions of one plan once, so sorting compares ints.
type revisionTable struct {
	names []string       // oldest first
	rank  map[string]int // index into names
}

func newRevisionTable(revs []string, history []string) revisionTable {
	names := sortRevisions(revs, history)
	rank := make(map[string]int, len(names))
	for i, n := range names {
		rank[n] = i
	}
	return revisionTable{names: names, rank: rank}
}
