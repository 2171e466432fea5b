// Package budget resolves int-or-percent budgets (maxUnavailable, maxSurge,
// partition) against a total, with the rounding rule chosen by the caller.
//
// Rules:
//   - An integer resolves to itself; a negative integer is an error.
//   - A percent is a non-negative decimal number followed by "%": "25%", "12.5%",
//     "99.99%", "0.01%" (OpenKruise's partition helper takes fractional percents
//     too). Signs, exponents, spaces, "%" alone, "25" given as a string, more than
//     1,000,000% and strings longer than 64 bytes are errors.
//   - A percent resolves to total*p/100 rounded as the [Rule] says, computed
//     exactly (no floating point): 12.5% of 8 is exactly 1; 20% of 3 is 0.6, which
//     is 0 rounded down and 1 rounded up.
//   - With [Rule.NonZeroPercentAtLeastOne], a percent above 0% of a total above 0 never
//     resolves to 0 (percent budgets that round to 0 stall rollouts).
//   - The result is never clamped to total: callers decide whether 150% is meaningful.
package budget

import (
	"fmt"
	"math/big"
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

// Limits on a percent string.
const (
	// maxPercent is the largest percent accepted.
	maxPercent = 1_000_000
	// maxPercentLength is the longest percent string accepted, "%" included.
	maxPercentLength = 64
)

// Percent is a parsed percent, held exactly as a decimal: digits with the
// decimal point dropped, and how many of them follow the point.
type Percent struct {
	digits string // no trailing zeros after the point; "" is zero
	scale  int    // how many of digits are fractional
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
	p, err := Parse(v.StrVal)
	if err != nil {
		return 0, err
	}
	return p.of(total, rule), nil
}

// Parse parses a percent such as "25%" or "12.5%".
func Parse(s string) (Percent, error) {
	if len(s) > maxPercentLength {
		return Percent{}, fmt.Errorf("%q is longer than %d bytes", s[:16]+"...", maxPercentLength)
	}
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return Percent{}, fmt.Errorf("%q is neither an integer nor a percent like \"25%%\"", s)
	}
	whole, frac, dot := strings.Cut(num, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || (dot && frac == "") {
		return Percent{}, fmt.Errorf("%q is not a non-negative percent like \"25%%\" or \"12.5%%\"", s)
	}
	whole = strings.TrimLeft(whole, "0")
	frac = strings.TrimRight(frac, "0")
	if len(whole) > len(strconv.Itoa(maxPercent)) || (whole != "" && mustAtoi(whole) > maxPercent) ||
		(whole != "" && mustAtoi(whole) == maxPercent && frac != "") {
		return Percent{}, fmt.Errorf("%q is out of range (at most %d%%)", s, maxPercent)
	}
	digits := strings.TrimLeft(whole+frac, "0")
	return Percent{digits: digits, scale: len(frac)}, nil
}

func allDigits(s string) bool { return strings.TrimLeft(s, "0123456789") == "" }

// mustAtoi converts a string of at most 7 digits.
func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// IsZero reports whether p is 0%.
func (p Percent) IsZero() bool { return p.digits == "" }

// Cmp compares p with whole percent w: -1, 0 or +1.
func (p Percent) Cmp(w int) int {
	a, b := p.rat()
	// p = a/b percent; compare a with w*b.
	return a.Cmp(new(big.Int).Mul(big.NewInt(int64(w)), b))
}

// Ceil returns p rounded up to a whole percent: range checks against whole bounds
// stay exact (ceil() <= 100 iff p <= 100%, ceil() >= 1 iff p > 0%).
func (p Percent) ceil() int {
	a, b := p.rat()
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	n := int(q.Int64()) // at most maxPercent
	if r.Sign() != 0 {
		n++
	}
	return n
}

// rat returns p as a fraction a/b percent, b a power of ten.
func (p Percent) rat() (a, b *big.Int) {
	a = new(big.Int)
	if p.digits != "" {
		a.SetString(p.digits, 10)
	}
	b = new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p.scale)), nil)
	return a, b
}

// of returns p percent of total under rule, exactly: total*p/100 rounded as
// rule says.
func (p Percent) of(total int, rule Rule) int {
	var n int
	if p.scale == 0 && len(p.digits) <= 7 {
		// A whole percent (at most maxPercent): integer arithmetic.
		w := 0
		if p.digits != "" {
			w = mustAtoi(p.digits)
		}
		product := w * total
		n = product / 100
		if rule.Rounding == RoundUp && product%100 != 0 {
			n++
		}
	} else {
		a, b := p.rat()
		a.Mul(a, big.NewInt(int64(total)))
		b.Mul(b, big.NewInt(100))
		q, r := a.QuoRem(a, b, new(big.Int))
		n = int(q.Int64()) // at most total*maxPercent/100
		if rule.Rounding == RoundUp && r.Sign() != 0 {
			n++
		}
	}
	if n == 0 && !p.IsZero() && total > 0 && rule.NonZeroPercentAtLeastOne {
		n = 1
	}
	return n
}

// ParsePercent parses a percent ("25%", "12.5%") and returns it rounded up to a
// whole percent, for range checks against whole bounds: the result is <= 100
// exactly when the percent is at most 100%, and >= 1 exactly when it is above 0%.
func ParsePercent(s string) (int, error) {
	p, err := Parse(s)
	if err != nil {
		return 0, err
	}
	return p.ceil(), nil
}
