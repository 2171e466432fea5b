package rollout_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplan-dev/kplan/rollout"
)

func TestResolveBudget(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	tests := []struct {
		name        string
		unavailable *intstr.IntOrString
		surge       *intstr.IntOrString
		total       int
		want        rollout.Budget
		wantErr     bool
	}{
		// 25% of 10 = 2.5: unavailable rounds down to 2, surge rounds up to 3.
		{"a quarter of ten rounds unavailable down and surge up", ptr(s("25%")), ptr(s("25%")), 10, rollout.Budget{MaxUnavailable: 2, MaxSurge: 3}, false},
		// 20% of 3 = 0.6: unavailable rounds down to 0, and a non-zero percent is at
		// least 1, so 1; surge rounds up to 1. The case that stalled other systems.
		{"twenty percent of three replicas still allows one unavailable", ptr(s("20%")), ptr(s("0%")), 3, rollout.Budget{MaxUnavailable: 1, MaxSurge: 0}, false},
		// 1% of 1 = 0.01 -> 0 -> floored to 1 for both.
		{"one percent of one replica is one", ptr(s("1%")), ptr(s("1%")), 1, rollout.Budget{MaxUnavailable: 1, MaxSurge: 1}, false},
		// nil is 25%: of 4 that is exactly 1 and 1.
		{"nil budgets default to a quarter", nil, nil, 4, rollout.Budget{MaxUnavailable: 1, MaxSurge: 1}, false},
		// maxUnavailable 0 with surge 1: only surge moves the rollout.
		{"zero unavailable with surge one keeps both as given", ptr(i(0)), ptr(i(1)), 1, rollout.Budget{MaxUnavailable: 0, MaxSurge: 1}, false},
		// 25% of 0 = 0 for both; both zero after rounding -> unavailable 1.
		{"both rounding to zero on zero replicas sets unavailable to one", ptr(s("25%")), ptr(s("25%")), 0, rollout.Budget{MaxUnavailable: 1, MaxSurge: 0}, false},
		// 100% of 3 = 3 exactly.
		{"a hundred percent is everything", ptr(s("100%")), ptr(s("100%")), 3, rollout.Budget{MaxUnavailable: 3, MaxSurge: 3}, false},
		// Integers are not rounded; maxUnavailable is capped at the replicas
		// (Deployment's rule), maxSurge is not.
		{"integers resolve to themselves below the replica count", ptr(i(2)), ptr(i(7)), 3, rollout.Budget{MaxUnavailable: 2, MaxSurge: 7}, false},
		{"max unavailable above the replica count is capped at it", ptr(i(5)), ptr(i(0)), 3, rollout.Budget{MaxUnavailable: 3, MaxSurge: 0}, false},
		// 150% of 4 = 6, capped at 4.
		{"max unavailable above a hundred percent is capped at the replica count", ptr(s("150%")), ptr(i(1)), 4, rollout.Budget{MaxUnavailable: 4, MaxSurge: 1}, false},
		// 12.5% of 8 = 1 exactly for both.
		{"a fractional percent resolves exactly", ptr(s("12.5%")), ptr(s("12.5%")), 8, rollout.Budget{MaxUnavailable: 1, MaxSurge: 1}, false},
		// 0.5% of 10 = 0.05: unavailable 0 -> at least 1; surge up to 1.
		{"a small fractional percent is at least one", ptr(s("0.5%")), ptr(s("0.5%")), 10, rollout.Budget{MaxUnavailable: 1, MaxSurge: 1}, false},
		{"a fractional zero percent and zero is rejected", ptr(s("0.0%")), ptr(i(0)), 3, rollout.Budget{}, true},
		{"explicit zero and zero is rejected", ptr(i(0)), ptr(i(0)), 3, rollout.Budget{}, true},
		{"explicit zero percent and zero is rejected", ptr(s("0%")), ptr(i(0)), 3, rollout.Budget{}, true},
		{"a percent with an exponent is rejected", ptr(s("1e1%")), nil, 3, rollout.Budget{}, true},
		{"a negative integer is rejected", ptr(i(-1)), nil, 3, rollout.Budget{}, true},
		{"a bare number string is rejected", nil, ptr(s("25")), 3, rollout.Budget{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rollout.ResolveBudget(tt.unavailable, tt.surge, tt.total)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolveRatio(t *testing.T) {
	s := intstr.FromString
	tests := []struct {
		name  string
		ratio *intstr.IntOrString
		total int
		want  int
	}{
		{"nil ratio means every replica", nil, 7, 7},
		// 50% of 3 = 1.5 rounds up to 2.
		{"half of three rounds up to two", ptr(s("50%")), 3, 2},
		// 10% of 3 = 0.3 rounds up to 1.
		{"a small non-zero percent moves at least one", ptr(s("10%")), 3, 1},
		{"zero percent is none", ptr(s("0%")), 3, 0},
		// 150% of 4 = 6, clamped to 4.
		{"more than a hundred percent is clamped to the total", ptr(s("150%")), 4, 4},
		{"an integer above the total is clamped", ptr(intstr.FromInt32(9)), 4, 4},
		// 99.99% of 10 = 9.999 rounds up to 10; 0.01% of 10 = 0.001 rounds up to 1.
		{"a fractional percent just below a hundred rounds up", ptr(s("99.99%")), 10, 10},
		{"a tiny fractional percent moves at least one", ptr(s("0.01%")), 10, 1},
		// 12.5% of 8 = 1 exactly.
		{"a fractional percent that is exact is not rounded", ptr(s("12.5%")), 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rollout.ResolveRatio(tt.ratio, tt.total)
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
