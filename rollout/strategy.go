package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/budget"
)

// Mode is how replicas are grouped for a rollout. The empty Mode is Rolling.
type Mode string

const (
	// Rolling updates single replicas in batches bounded by maxUnavailable.
	Rolling Mode = "Rolling"
	// Gang updates each gang replica (a row of member pods) atomically; gangs are
	// the unit of availability.
	Gang Mode = "Gang"
	// Group updates a rows x columns service whose replicas carry a Column, keeping
	// every column's availability floor and sliding the latest version's ratio
	// forward by one step at a time across all columns.
	Group Mode = "Group"
)

// VersionOrder says which old version loses replicas first when there are several.
//
// It applies after health (unhealthy replicas always go first). In group mode,
// one rule comes before it: in each column, replicas of a version that has more
// available replicas in that column than in its least available column (so they
// serve in no whole row) are cut first, whatever the order, since cutting them
// costs no serving capacity; the order then applies to the rest. So with
// columns A = {1-a, 2-b, 2-b} and B = {1-a, 1-a, 2-b}, A cuts a 2-b and B a 1-a
// first under every order. The empty VersionOrder is LessFirst.
type VersionOrder string

const (
	// LessFirst cuts the least available old version first (kube-sharding's
	// default); among equally available old versions the newest goes first (the
	// second-newest revision overall when rolling forward). A version's
	// availability is its available replicas; in group mode, the fewest in any
	// column (its available whole rows), and replicas beyond those rows go first
	// (see [VersionOrder]).
	LessFirst VersionOrder = "LessFirst"
	// LatestFirst cuts the second-newest version first.
	LatestFirst VersionOrder = "LatestFirst"
	// OldFirst cuts the oldest version first.
	OldFirst VersionOrder = "OldFirst"
)

// DefaultMaxUnavailable and DefaultMaxSurge apply when a [Strategy] leaves the
// budget nil; they are Kubernetes Deployment's defaults.
var (
	DefaultMaxUnavailable = intstr.FromString("25%")
	DefaultMaxSurge       = intstr.FromString("25%")
)

// Strategy is what a rollout should reach and how fast.
type Strategy struct {
	// Mode selects rolling, gang or group planning.
	Mode Mode
	// TargetRevision is the revision replicas move to. Setting it back to an older
	// revision rolls back.
	TargetRevision string
	// TargetDataRevision is the data revision every replica should serve (see
	// Replica.DataRevision); empty leaves data alone. Data moves in place under
	// the same MaxUnavailable as pod changes: a replica whose pod revision and
	// data both change is updated once and counted once. It applies to every
	// replica, whatever LatestRatio; replicas Plan creates are to load it.
	// Setting it back rolls the data back. It needs a MaxUnavailable of at least 1.
	TargetDataRevision string
	// Replicas is the desired count: replicas (rolling), gangs (gang), or rows per
	// column (group).
	Replicas int
	// Columns lists, in group mode, the columns that must exist in addition to
	// those the replicas name; in gang mode, the columns of a gang's members
	// ([Member].Column), which a [Create] of a gang lists. Optional; each must
	// be non-empty and unique. Rolling mode does not read it.
	Columns []string
	// MaxUnavailable is how many replicas (per column in group mode) may be
	// unavailable because of the rollout; nil means 25%. Percents round down and
	// the result is capped at Replicas.
	MaxUnavailable *intstr.IntOrString
	// MaxSurge is how many replicas above Replicas may exist during the rollout; nil
	// means 25%. Percents round up.
	MaxSurge *intstr.IntOrString
	// LatestRatio (a partition) is how many replicas should run TargetRevision; nil
	// means all. Percents round up. Lowering it moves replicas back to the previous
	// revision (the newest other revision a replica runs, else the newest other
	// History entry); when no other revision is known, every replica runs
	// TargetRevision whatever the ratio.
	LatestRatio *intstr.IntOrString
	// VersionOrder picks which old version is cut first; LessFirst by default.
	VersionOrder VersionOrder
	// History lists known revisions oldest to newest. Revisions not in it are ordered
	// by the integer generation before the first "-" in their name.
	History []string
}

// Budget is a strategy's int-or-percent budgets resolved against a total.
type Budget struct {
	// MaxUnavailable is how many replicas may be unavailable because of the rollout.
	MaxUnavailable int
	// MaxSurge is how many replicas may exist above the desired count.
	MaxSurge int
}

// Step returns how far one reconcile may move: MaxUnavailable, or MaxSurge when
// MaxUnavailable is 0.
func (b Budget) Step() int {
	if b.MaxUnavailable > 0 {
		return b.MaxUnavailable
	}
	return b.MaxSurge
}

var (
	unavailableRule = budget.Rule{Rounding: budget.RoundDown, NonZeroPercentAtLeastOne: true}
	surgeRule       = budget.Rule{Rounding: budget.RoundUp, NonZeroPercentAtLeastOne: true}
	ratioRule       = budget.Rule{Rounding: budget.RoundUp, NonZeroPercentAtLeastOne: true}
)

// ResolveBudget turns maxUnavailable and maxSurge into counts out of total.
//
//   - nil means the default, 25%.
//   - Percents may be fractional ("12.5%", "0.5%") and are computed exactly.
//   - maxSurge percents round up: 25% of 10 = 2.5 -> 3.
//   - maxUnavailable percents round down: 25% of 10 = 2.5 -> 2.
//   - A non-zero percent of a non-zero total never resolves to 0: 20% of 3 = 0.6
//     rounds down to 0 and becomes 1 (a 0 budget stalls the rollout).
//   - Integers resolve to themselves; negatives and malformed percents are errors.
//   - maxUnavailable is capped at total, as Kubernetes' Deployment does: 5 of 3
//     replicas is 3, 150% of 4 is 4. maxSurge is not capped.
//   - An explicit 0 and 0 (integers or "0%") is an error: nothing could move.
//   - When both still resolve to 0 (a total of 0), maxUnavailable becomes 1, as in
//     Kubernetes.
func ResolveBudget(maxUnavailable, maxSurge *intstr.IntOrString, total int) (Budget, error) {
	if maxUnavailable == nil {
		maxUnavailable = &DefaultMaxUnavailable
	}
	if maxSurge == nil {
		maxSurge = &DefaultMaxSurge
	}
	if isZero(maxUnavailable) && isZero(maxSurge) {
		return Budget{}, fmt.Errorf("maxUnavailable and maxSurge: both are 0, nothing could move")
	}
	u, err := budget.Resolve(maxUnavailable, total, unavailableRule)
	if err != nil {
		return Budget{}, fmt.Errorf("maxUnavailable: %w", err)
	}
	s, err := budget.Resolve(maxSurge, total, surgeRule)
	if err != nil {
		return Budget{}, fmt.Errorf("maxSurge: %w", err)
	}
	u = min(u, total)
	if u == 0 && s == 0 {
		u = 1
	}
	return Budget{MaxUnavailable: u, MaxSurge: s}, nil
}

// ResolveRatio returns how many of total replicas should run the target revision
// for a LatestRatio: nil means total; percents may be fractional ("99.99%") and
// round up, computed exactly (a non-zero percent of a non-zero total is at least
// 1); the result is clamped to total.
func ResolveRatio(ratio *intstr.IntOrString, total int) (int, error) {
	if ratio == nil {
		return total, nil
	}
	n, err := budget.Resolve(ratio, total, ratioRule)
	if err != nil {
		return 0, fmt.Errorf("latestRatio: %w", err)
	}
	return min(n, total), nil
}

func isZero(v *intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	p, err := budget.Parse(v.StrVal)
	return err == nil && p.IsZero()
}

// validate checks the strategy's own fields.
func (s *Strategy) validate() error {
	switch {
	case s.Mode != "" && s.Mode != Rolling && s.Mode != Gang && s.Mode != Group:
		return fmt.Errorf("strategy: mode: %q is not Rolling, Gang or Group", s.Mode)
	case s.TargetRevision == "":
		return fmt.Errorf("strategy: targetRevision: must not be empty")
	case s.Replicas < 0:
		return fmt.Errorf("strategy: replicas: %d is negative", s.Replicas)
	case s.Replicas > MaxReplicas:
		return fmt.Errorf("strategy: replicas: %d, more than MaxReplicas %d", s.Replicas, MaxReplicas)
	case len(s.History) > MaxReplicas:
		return fmt.Errorf("strategy: history: %d entries, more than MaxReplicas %d", len(s.History), MaxReplicas)
	case s.VersionOrder != "" && s.VersionOrder != LessFirst && s.VersionOrder != LatestFirst && s.VersionOrder != OldFirst:
		return fmt.Errorf("strategy: versionOrder: %q is not LessFirst, LatestFirst or OldFirst", s.VersionOrder)
	}
	seen := make(map[string]bool, len(s.History))
	for i, h := range s.History {
		if h == "" || seen[h] {
			return fmt.Errorf("strategy: history[%d]: %q is empty or repeated", i, h)
		}
		seen[h] = true
	}
	if len(s.Columns) > MaxReplicas {
		return fmt.Errorf("strategy: columns: %d, more than MaxReplicas %d", len(s.Columns), MaxReplicas)
	}
	clear(seen)
	for i, c := range s.Columns {
		if c == "" || seen[c] {
			return fmt.Errorf("strategy: columns[%d]: %q is empty or repeated", i, c)
		}
		seen[c] = true
	}
	return nil
}
