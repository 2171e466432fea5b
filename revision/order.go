package revision

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/internal/budget"
)

// ResolvePartition returns how many of pods are kept on old revisions, by
// OpenKruise's rule (CalculatePartitionReplicas): nil is 0; an integer is itself;
// a percent, which may be fractional ("99.99%", "0.01%", "12.5%"), keeps
// ceil(p * pods / 100) pods, and when it is below 100% with more than one pod and
// that is every pod, one pod less, so at least one pod updates. The result is
// clamped to [0, pods]. Unlike OpenKruise, the product is computed exactly
// rather than in float64 (which makes 1.1% of 3000 pods 34 instead of 33), and
// "below 100%" is by value ("100.0%" keeps every pod).
func ResolvePartition(p *intstr.IntOrString, pods int) (int, error) {
	kept, err := budget.Resolve(p, pods, budget.Rule{Rounding: budget.RoundUp})
	if err != nil {
		return 0, fmt.Errorf("partition: %w", err)
	}
	if p != nil && p.Type == intstr.String && pods > 1 && kept >= pods {
		if pct, _ := budget.Parse(p.StrVal); pct.Cmp(100) < 0 {
			kept = pods - 1
		}
	}
	return min(max(kept, 0), pods), nil
}

// resolveMaxUnavailable returns how many pods may be unavailable at once when
// injected containers restart: nil is 1; a percent rounds down but a non-zero percent
// of a non-zero total is at least 1. The result is clamped to [0, pods] (a value that
// Validate would reject, such as "110%", does not resolve to more pods than exist).
func resolveMaxUnavailable(v *intstr.IntOrString, pods int) (int, error) {
	if v == nil {
		v = &defaultMaxUnavailable
	}
	n, err := budget.Resolve(v, pods, budget.Rule{Rounding: budget.RoundDown, NonZeroPercentAtLeastOne: true})
	if err != nil {
		return 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	return min(max(n, 0), pods), nil
}

// priorityClass is a pod's update priority bucket; lower buckets update first.
//
//	0                   pods whose revision is not in the hub (or that have none)
//	1 + hub index       pods on an old revision, older first
//	1 + len(hub)        pods on currentRevision
//
// The design lists the rules twice in different orders; this is the implementation
// section's order: (1) not on currentRevision before on it, (2) among those, revision
// missing from the hub first, (3) then smaller hub index first. Ties by namespace and
// name.
func priorityClass(rev, current string, hubIndex map[string]int, hubLen int) int {
	if rev != "" && rev == current {
		return 1 + hubLen
	}
	i, ok := hubIndex[rev]
	if !ok {
		return 0
	}
	return 1 + i
}
