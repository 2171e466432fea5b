// Package budget resolves int-or-percent budgets (maxUnavailable, maxSurge,
// partition) against a total, with the rounding rule chosen by the caller.
//
// Rules:
//   - An integer resolves to itself; a negative integer is an error.
//   - A percent must be an integer followed by "%" ("25%"); "12.5%", "%", "-5%" and
//     "25" given as a string are errors.
//   - A percent resolves to total*p/100 rounded as the [Rule] says. Integer arithmetic
//     only: 20% of 3 is 0.6, which is 0 rounded down and 1 rounded up.
//   - With [Rule.NonZeroPercentAtLeastOne], a percent above 0% of a total above 0 never
//     resolves to 0 (percent budgets that round to 0 stall rollouts).
//   - The result is never clamped to total: callers decide whether 150% is meaningful.
package budget

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Rounding says how a percent of a total that is not a whole number is rounded.
type Rounding int

const (
	// RoundDown rounds toward zero (Kubernetes' rule for maxUnavailable).
	RoundDown Rounding = iota
	// RoundUp rounds away from zero (Kubernetes' rule for maxSurge).
	RoundUp
)

// String returns "down" or "up".
func (r Rounding) String() string {
	if r == RoundUp {
		return "up"
	}
	return "down"
}

// Rule is how a percent is turned into a count.
type Rule struct {
	// Rounding applies to percents only.
	Rounding Rounding
	// NonZeroPercentAtLeastOne makes a non-zero percent of a non-zero total resolve to
	// at least 1.
	NonZeroPercentAtLeastOne bool
}

// Resolve returns the count v stands for out of total. A nil v resolves to 0.
// total must not be negative.
func Resolve(v *intstr.IntOrString, total int, rule Rule) (int, error) {
	if total < 0 {
		return 0, fmt.Errorf("total %d is negative", total)
	}
	if v == nil {
		return 0, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%d is negative", v.IntVal)
		}
		return int(v.IntVal), nil
	}
	p, err := ParsePercent(v.StrVal)
	if err != nil {
		return 0, err
	}
	return ApplyPercent(p, total, rule), nil
}

// ParsePercent parses "0%".."N%" into N. It rejects anything that is not a
// non-negative integer followed by a single "%".
func ParsePercent(s string) (int, error) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("%q is neither an integer nor a percent like \"25%%\"", s)
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a whole non-negative percent", s)
	}
	p, err := strconv.Atoi(digits)
	if err != nil || p > 1_000_000 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return p, nil
}

// ApplyPercent returns p percent of total under rule, in integer arithmetic.
func ApplyPercent(p, total int, rule Rule) int {
	product := p * total
	n := product / 100
	if rule.Rounding == RoundUp && product%100 != 0 {
		n++
	}
	if n == 0 && p > 0 && total > 0 && rule.NonZeroPercentAtLeastOne {
		n = 1
	}
	return n
}
