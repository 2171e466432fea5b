package budget

import (
	"fmt"
	"math/big"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"
)

func TestResolve(t *testing.T) {
	down := Rule{Rounding: RoundDown}
	up := Rule{Rounding: RoundUp}
	downAtLeastOne := Rule{Rounding: RoundDown, NonZeroPercentAtLeastOne: true}
	pct := intstr.FromString
	num := intstr.FromInt32
	cases := []struct {
		name  string
		v     *intstr.IntOrString
		total int
		rule  Rule
		want  int
	}{
		{"nil resolves to zero", nil, 10, up, 0},
		{"an integer is itself", ptr(num(3)), 10, down, 3},
		{"an integer is not clamped to the total", ptr(num(30)), 10, down, 30},
		// 25% of 10 = 2.5 -> 2
		{"25% of 10 rounded down is 2", ptr(pct("25%")), 10, down, 2},
		// 25% of 10 = 2.5 -> 3
		{"25% of 10 rounded up is 3", ptr(pct("25%")), 10, up, 3},
		// 20% of 3 = 0.6 -> 0: the case that stalls rollouts
		{"20% of 3 rounded down is 0", ptr(pct("20%")), 3, down, 0},
		// 20% of 3 = 0.6 -> 0, floored at 1
		{"20% of 3 rounded down at least one is 1", ptr(pct("20%")), 3, downAtLeastOne, 1},
		{"0% stays 0 even at least one", ptr(pct("0%")), 3, downAtLeastOne, 0},
		{"a percent of an empty total is 0", ptr(pct("50%")), 0, downAtLeastOne, 0},
		// 100% of 7 = 7 exactly, no rounding
		{"100% is the total", ptr(pct("100%")), 7, up, 7},
		// 150% of 4 = 6
		{"150% is not clamped", ptr(pct("150%")), 4, down, 6},
		// 33% of 10 = 3.3 -> 4 (no odd .31 threshold)
		{"33% of 10 rounded up is 4", ptr(pct("33%")), 10, up, 4},
		// 12.5% of 8 = 1 exactly, no rounding either way
		{"12.5% of 8 rounded up is exactly 1", ptr(pct("12.5%")), 8, up, 1},
		{"12.5% of 8 rounded down is exactly 1", ptr(pct("12.5%")), 8, down, 1},
		// 99.99% of 10 = 9.999 -> 10 up, 9 down
		{"99.99% of 10 rounded up is 10", ptr(pct("99.99%")), 10, up, 10},
		{"99.99% of 10 rounded down is 9", ptr(pct("99.99%")), 10, down, 9},
		// 0.01% of 10 = 0.001 -> 1 up, 0 down, 1 when at least one
		{"0.01% of 10 rounded up is 1", ptr(pct("0.01%")), 10, up, 1},
		{"0.01% of 10 rounded down is 0", ptr(pct("0.01%")), 10, down, 0},
		{"0.01% of 10 rounded down at least one is 1", ptr(pct("0.01%")), 10, downAtLeastOne, 1},
		// 1.1% of 3000 = 33 exactly; OpenKruise's float64 ceil gives 34
		{"1.1% of 3000 rounded up is exactly 33", ptr(pct("1.1%")), 3000, up, 33},
		// 0.07% of 10000 = 7 exactly; float64 gives 7.000000000000001 -> 8
		{"0.07% of 10000 rounded up is exactly 7", ptr(pct("0.07%")), 10000, up, 7},
		{"trailing zeros do not change a percent", ptr(pct("012.500%")), 8, up, 1},
		{"0.000% is zero even at least one", ptr(pct("0.000%")), 8, downAtLeastOne, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.v, c.total, c.rule)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got != c.want {
				t.Errorf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestResolveRejects(t *testing.T) {
	cases := []struct {
		name string
		v    intstr.IntOrString
	}{
		{"a negative integer", intstr.FromInt32(-1)},
		{"a percent without %", intstr.FromString("25")},
		{"a percent with an exponent", intstr.FromString("1e1%")},
		{"a percent with a sign", intstr.FromString("+5%")},
		{"a percent with a point but no fraction", intstr.FromString("5.%")},
		{"a percent with no whole part", intstr.FromString(".5%")},
		{"a percent with two points", intstr.FromString("1.2.3%")},
		{"infinity", intstr.FromString("Inf%")},
		{"not a number", intstr.FromString("NaN%")},
		{"a hexadecimal percent", intstr.FromString("0x10%")},
		{"a percent just above the limit", intstr.FromString("1000000.5%")},
		{"a percent string longer than the limit", intstr.FromString("1." + strings.Repeat("1", 70) + "%")},
		{"a negative percent", intstr.FromString("-5%")},
		{"a bare percent sign", intstr.FromString("%")},
		{"two percent signs", intstr.FromString("5%%")},
		{"spaces", intstr.FromString(" 5%")},
		{"a huge percent", intstr.FromString("99999999999999999999%")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, err := Resolve(&c.v, 10, Rule{}); err == nil {
				t.Fatalf("Resolve(%v) = %d, want an error", c.v.String(), got)
			}
		})
	}
	if _, err := Resolve(nil, -1, Rule{}); err == nil {
		t.Error("a negative total must be an error")
	}
}

func TestWholePercentOfIsFloorOrCeil(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.IntRange(0, 200).Draw(t, "percent")
		total := rapid.IntRange(0, 10000).Draw(t, "total")
		pc, err := Parse(fmt.Sprintf("%d%%", p))
		if err != nil {
			t.Fatal(err)
		}
		d := pc.of(total, Rule{Rounding: RoundDown})
		u := pc.of(total, Rule{Rounding: RoundUp})
		if d*100 > p*total || (d+1)*100 <= p*total {
			t.Fatalf("down %d is not floor(%d*%d/100)", d, p, total)
		}
		if u*100 < p*total || (u-1)*100 >= p*total {
			t.Fatalf("up %d is not ceil(%d*%d/100)", u, p, total)
		}
		one := pc.of(total, Rule{NonZeroPercentAtLeastOne: true})
		if p > 0 && total > 0 && one < 1 {
			t.Fatalf("%d%% of %d resolved to 0 with NonZeroPercentAtLeastOne", p, total)
		}
	})
}

// A fractional percent resolves to the exact floor or ceiling of total*p/100.
func TestFractionalPercentOfIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		whole := rapid.IntRange(0, 300).Draw(t, "whole")
		frac := rapid.StringMatching(`[0-9]{1,12}`).Draw(t, "fraction")
		total := rapid.IntRange(0, maxPercent).Draw(t, "total")
		s := fmt.Sprintf("%d.%s", whole, frac)
		p, err := Parse(s + "%")
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := new(big.Rat).SetString(s)
		exact.Mul(exact, big.NewRat(int64(total), 100))
		for _, r := range []Rounding{RoundDown, RoundUp} {
			got := big.NewRat(int64(p.of(total, Rule{Rounding: r})), 1)
			lo, hi := new(big.Rat).Sub(got, big.NewRat(1, 1)), new(big.Rat).Add(got, big.NewRat(1, 1))
			if r == RoundDown && (got.Cmp(exact) > 0 || hi.Cmp(exact) <= 0) {
				t.Fatalf("%s%% of %d down = %v, exact %v", s, total, got, exact.FloatString(6))
			}
			if r == RoundUp && (got.Cmp(exact) < 0 || lo.Cmp(exact) >= 0) {
				t.Fatalf("%s%% of %d up = %v, exact %v", s, total, got, exact.FloatString(6))
			}
		}
		if c := p.Cmp(whole); (c < 0) || (c == 0) != (strings.Trim(frac, "0") == "") {
			t.Fatalf("%s%%: Cmp(%d) = %d", s, whole, c)
		}
	})
}

func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"0%", "25%", "100%", "12.5%", "%", "-1%", "1e3%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePercent(s)
		if err != nil {
			return
		}
		if p < 0 {
			t.Fatalf("ParsePercent(%q) = %d", s, p)
		}
	})
}

func ptr[T any](v T) *T { return &v }
