package revision

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePartition(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt(n); return &v }
	tests := []struct {
		name string
		p    *intstr.IntOrString
		pods int
		want int
	}{
		{"nil keeps no pod", nil, 10, 0},
		{"an integer keeps itself", num(3), 10, 3},
		{"an integer above the pod count is clamped", num(12), 10, 10},
		{"10% of 10 keeps 1", pct("10%"), 10, 1},
		// 10% of 3 = 0.3, rounded up = 1.
		{"a percent rounds up", pct("10%"), 3, 1},
		// 90% of 3 = 2.7 -> 3 = every pod, below 100% -> 2 so one pod updates.
		{"a percent below 100 that rounds to every pod keeps one less", pct("90%"), 3, 2},
		// 99% of 1 = 0.99 -> 1; with a single pod the one-less rule does not apply.
		{"with one pod the rule does not apply", pct("99%"), 1, 1},
		{"100% keeps every pod", pct("100%"), 4, 4},
		{"0% keeps none", pct("0%"), 4, 0},
		{"no pods keep none", pct("50%"), 0, 0},
		// OpenKruise's own cases (pkg/util/tools_test.go): 99% of 9 = 8.91 -> 9 -> 8.
		{"99% of 9 keeps 8", pct("99%"), 9, 8},
		{"99% of 99 keeps 98", pct("99%"), 99, 98},
		{"1% of 10 keeps 1", pct("1%"), 10, 1},
		// Fractional percents, as OpenKruise takes them.
		// 99.99% of 10 = 9.999 -> 10 = every pod, below 100% -> 9.
		{"a fractional percent below 100 keeps one pod less than every pod", pct("99.99%"), 10, 9},
		// 0.01% of 10 = 0.001 -> 1.
		{"a tiny fractional percent keeps one pod", pct("0.01%"), 10, 1},
		// 12.5% of 8 = 1 exactly.
		{"an exact fractional percent keeps its exact count", pct("12.5%"), 8, 1},
		// 1.1% of 3000 = 33 exactly (float64 gives 33.000000000000004 -> 34).
		{"a fractional percent is computed exactly", pct("1.1%"), 3000, 33},
		{"100.0% keeps every pod", pct("100.0%"), 4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePartition(tt.p, tt.pods)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ResolvePartition(%v, %d) = %d, want %d", tt.p, tt.pods, got, tt.want)
			}
		})
	}
	for _, bad := range []string{"1.5", "1e1%", "-1.5%", ".5%", "NaN%"} {
		t.Run("a malformed percent "+bad+" is an error", func(t *testing.T) {
			if _, err := ResolvePartition(pct(bad), 3); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestResolveMaxUnavailable(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	tests := []struct {
		name string
		v    *intstr.IntOrString
		pods int
		want int
	}{
		{"nil is one", nil, 10, 1},
		// 25% of 10 = 2.5, rounded down = 2.
		{"a percent rounds down", pct("25%"), 10, 2},
		// 1% of 10 = 0.1 -> 0, but a non-zero percent is at least 1.
		{"a small percent never resolves to zero", pct("1%"), 10, 1},
		// Found by FuzzResolveBudgets: 110% of 10 resolved to 11.
		{"a percent over 100 is clamped to the pods", pct("110%"), 10, 10},
		{"an integer over the pods is clamped", func() *intstr.IntOrString { v := intstr.FromInt32(20); return &v }(), 10, 10},
		{"no pods, nothing unavailable", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveMaxUnavailable(tt.v, tt.pods)
			if err != nil || got != tt.want {
				t.Errorf("resolveMaxUnavailable(%v, %d) = %d, %v; want %d", tt.v, tt.pods, got, err, tt.want)
			}
		})
	}
}

func TestPriorityClass(t *testing.T) {
	hub := map[string]int{"old": 0, "mid": 1, "cur": 2, "upd": 3}
	tests := []struct {
		name     string
		rev      string
		wantLess string
	}{
		{"a pod whose revision left the hub goes before a pod on an old revision", "gone", "old"},
		{"a pod without a revision goes before a pod on an old revision", "", "old"},
		{"an older revision goes before a newer one", "old", "mid"},
		{"a pod on an old revision goes before a pod on the current revision", "mid", "cur"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := priorityClass(tt.rev, "cur", hub, 4), priorityClass(tt.wantLess, "cur", hub, 4)
			if a >= b {
				t.Errorf("class(%q)=%d, class(%q)=%d: want the first lower", tt.rev, a, tt.wantLess, b)
			}
		})
	}
}

// Validate takes the fractional percents ResolvePartition and
// resolveMaxUnavailable resolve, and still bounds them to 0%..100% (1%..100% for
// maxUnavailable, where any percent above 0% counts).
func TestValidateTakesFractionalPercents(t *testing.T) {
	tests := []struct {
		name           string
		partition      string
		maxUnavailable string
		wantErr        string // "" when valid
	}{
		{"a fractional partition is valid", "99.99%", "", ""},
		{"a tiny fractional partition is valid", "0.01%", "", ""},
		{"a fractional maxUnavailable below 1% is valid", "", "0.5%", ""},
		{"a fractional partition above 100% is invalid", "100.5%", "", "partition"},
		{"a fractional maxUnavailable of zero is invalid", "", "0.0%", "maxUnavailable"},
		{"a percent with an exponent is invalid", "1e1%", "", "partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(data("a"))
			if tt.partition != "" {
				v := intstr.FromString(tt.partition)
				s.Spec.UpdateStrategy.Partition = &v
			}
			if tt.maxUnavailable != "" {
				v := intstr.FromString(tt.maxUnavailable)
				s.Spec.UpdateStrategy.MaxUnavailable = &v
			}
			errs := Validate(s)
			if got := errs.ToAggregate(); (got == nil) != (tt.wantErr == "") ||
				(got != nil && !strings.Contains(got.Error(), tt.wantErr)) {
				t.Fatalf("Validate: %v, want an error about %q", got, tt.wantErr)
			}
		})
	}
}
