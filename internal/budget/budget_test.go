package budget

import (
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
		{"a fractional percent", intstr.FromString("12.5%")},
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

func TestApplyPercentProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.IntRange(0, 200).Draw(t, "percent")
		total := rapid.IntRange(0, 10000).Draw(t, "total")
		d := ApplyPercent(p, total, Rule{Rounding: RoundDown})
		u := ApplyPercent(p, total, Rule{Rounding: RoundUp})
		if d*100 > p*total || (d+1)*100 <= p*total {
			t.Fatalf("down %d is not floor(%d*%d/100)", d, p, total)
		}
		if u*100 < p*total || (u-1)*100 >= p*total {
			t.Fatalf("up %d is not ceil(%d*%d/100)", u, p, total)
		}
		one := ApplyPercent(p, total, Rule{NonZeroPercentAtLeastOne: true})
		if p > 0 && total > 0 && one < 1 {
			t.Fatalf("%d%% of %d resolved to 0 with NonZeroPercentAtLeastOne", p, total)
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
