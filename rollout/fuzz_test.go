package rollout_test

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"
	"github.com/kplan-dev/kplan/rollout"
	"github.com/kplan-dev/kplan/rollout/rollouttest"
)

// FuzzGeneration parses revision names "<generation>-<rest>": it never panics, a
// parsed generation is the decimal prefix exactly, and it orders the revision
// before the next generation when no History is given.
func FuzzGeneration(f *testing.F) {
	for _, s := range []string{"3-abc", "0-a", "-a", "a-1", "12", "007-x", "-1-a", "9223372036854775807-x",
		"9223372036854775808-x", "+5-a", "5--", "5-", "١-a", " 1-a", "1 -a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, ok := rollout.Generation(s)
		head, _, found := strings.Cut(s, "-")
		if !ok {
			if g != 0 {
				t.Fatalf("Generation(%q) = %d, false: want 0 when there is none", s, g)
			}
			if found && head != "" && strings.Trim(head, "0123456789") == "" && len(head) < 19 {
				t.Fatalf("Generation(%q): %q is a small decimal, but not parsed", s, head)
			}
			return
		}
		if !found || g < 0 {
			t.Fatalf("Generation(%q) = %d, true: no \"-\" or negative", s, g)
		}
		if strings.Trim(head, "0123456789") != "" {
			t.Fatalf("Generation(%q) = %d: prefix %q is not all digits", s, g, head)
		}
		if back, err := strconv.ParseInt(head, 10, 64); err != nil || back != g {
			t.Fatalf("Generation(%q) = %d, prefix %q parses as %d, %v", s, g, head, back, err)
		}
		if g < math.MaxInt64 {
			next := fmt.Sprintf("%d-next", g+1)
			if c := rollout.CompareRevisions(s, next, nil); c >= 0 {
				t.Fatalf("CompareRevisions(%q, %q) = %d, want older", s, next, c)
			}
		}
	})
}

// FuzzCompareRevisions checks that revision order is a total order for any
// names and histories, and SortRevisions sorts, deduplicates and leaves its
// input alone.
func FuzzCompareRevisions(f *testing.F) {
	f.Add("1-a", "2-b", "3-c", "")
	f.Add("10-a", "9-a", "a", "a,10-a")
	f.Add("b", "a", "1-a", "b,a")
	f.Add("r-9", "r-10", "r-010", "r-10,x")
	f.Add("1-a", "01-a", "1-b", "")
	f.Fuzz(func(t *testing.T, a, b, c, hist string) {
		var history []string
		seen := map[string]bool{}
		for _, h := range strings.Split(hist, ",") {
			if h != "" && !seen[h] {
				seen[h] = true
				history = append(history, h)
			}
		}
		cmp := func(x, y string) int { return rollout.CompareRevisions(x, y, history) }
		revs := []string{a, b, c}
		for _, x := range revs {
			if cmp(x, x) != 0 {
				t.Fatalf("CompareRevisions(%q, %q) != 0", x, x)
			}
			for _, y := range revs {
				if cmp(x, y) != -cmp(y, x) {
					t.Fatalf("not antisymmetric: %q vs %q: %d, %d", x, y, cmp(x, y), cmp(y, x))
				}
				if x != y && cmp(x, y) == 0 {
					t.Fatalf("distinct %q and %q compare equal", x, y)
				}
				for _, z := range revs {
					if cmp(x, y) < 0 && cmp(y, z) < 0 && cmp(x, z) >= 0 {
						t.Fatalf("not transitive: %q < %q < %q but not %q < %q", x, y, z, x, z)
					}
				}
			}
		}
		in := append(slices.Clone(revs), a)
		before := slices.Clone(in)
		out := rollout.SortRevisions(in, history)
		if !slices.Equal(in, before) {
			t.Fatalf("SortRevisions modified its input: %q -> %q", before, in)
		}
		for i := 1; i < len(out); i++ {
			if cmp(out[i-1], out[i]) >= 0 {
				t.Fatalf("SortRevisions(%q) = %q: not strictly increasing at %d", in, out, i)
			}
		}
		for _, x := range in {
			if !slices.Contains(out, x) {
				t.Fatalf("SortRevisions(%q) = %q lost %q", in, out, x)
			}
		}
	})
}

// intOrString reads a budget the way a YAML field would arrive: an integer when
// it parses as one, a string otherwise.
func intOrString(s string) intstr.IntOrString {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return intstr.FromInt32(int32(n))
	}
	return intstr.FromString(s)
}

// FuzzResolveBudget parses int-or-percent budgets and ratios: never a panic, and
// every documented rounding rule holds for whatever parses.
func FuzzResolveBudget(f *testing.F) {
	for _, seed := range []struct {
		u, s  string
		total int
	}{
		{"25%", "25%", 10}, {"20%", "0", 3}, {"0", "0", 5}, {"0%", "0%", 5}, {"0", "1", 1},
		{"0%", "0%", 0}, {"-1", "1", 3}, {"1.5%", "1", 3}, {"%", "", 1}, {"100%", "100%", 7},
		{"1000001%", "1", 3}, {"50 %", "1", 4}, {"3", "2%", 0}, {"12.5%", "0.01%", 8}, {"99.99%", "1e1%", 10},
		{"10", "0", 7}, {"150%", "1", 4},
	} {
		f.Add(seed.u, seed.s, seed.total)
	}
	f.Fuzz(func(t *testing.T, us, ss string, total int) {
		total = int(uint(total) % 100_000)
		u, s := intOrString(us), intOrString(ss)
		b, err := rollout.ResolveBudget(&u, &s, total)
		if err != nil {
			if !strings.Contains(err.Error(), "maxUnavailable") && !strings.Contains(err.Error(), "maxSurge") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if b.MaxUnavailable < 0 || b.MaxSurge < 0 || b.MaxUnavailable+b.MaxSurge == 0 || b.Step() <= 0 {
			t.Fatalf("ResolveBudget(%q, %q, %d) = %+v: negative or nothing can move", us, ss, total, b)
		}
		check := func(field string, v intstr.IntOrString, got int, up bool) {
			var lo, hi int64
			if v.Type == intstr.Int {
				lo, hi = int64(v.IntVal), int64(v.IntVal)
			} else {
				// The percent was accepted: a decimal number. Its exact share of total.
				exact, ok := new(big.Rat).SetString(strings.TrimSuffix(v.StrVal, "%"))
				if !ok {
					t.Fatalf("%s %q accepted but not a decimal", field, v.StrVal)
				}
				nonZero := exact.Sign() > 0
				exact.Mul(exact, big.NewRat(int64(total), 100))
				q := new(big.Int).Quo(exact.Num(), exact.Denom())
				lo = q.Int64()
				if up && !exact.IsInt() {
					lo++
				}
				hi = lo
				if nonZero && total > 0 && hi == 0 {
					lo, hi = 1, 1 // a non-zero percent never resolves to 0
				}
			}
			if field == "maxUnavailable" {
				// Capped at total as Deployment does; both zero after rounding:
				// maxUnavailable becomes 1.
				lo, hi = min(lo, int64(total)), max(min(hi, int64(total)), 1)
			}
			if int64(got) < lo || int64(got) > hi {
				t.Fatalf("%s %q of %d resolved to %d, want %v..%v", field, v.String(), total, got, lo, hi)
			}
		}
		check("maxUnavailable", u, b.MaxUnavailable, false)
		check("maxSurge", s, b.MaxSurge, true)
		if n, err := rollout.ResolveRatio(&u, total); err == nil && (n < 0 || n > total) {
			t.Fatalf("ResolveRatio(%q, %d) = %d, outside 0..%d", us, total, n, total)
		}
	})
}

// FuzzFromPods builds replicas from pods with fuzzed label and annotation
// values: never a panic, errors name the pod, gang or option, and on success
// every pod is in exactly one replica.
func FuzzFromPods(f *testing.F) {
	f.Add("1-a", "2-b", "g-0", "g-1", "", "5", "0", "", uint8(0), uint8(4))
	f.Add("1-a", "", "g-0", "g-0", "col", "x", "1", "2026-01-01T00:00:00Z", uint8(2), uint8(3))
	f.Add("3-c", "3-c", "", "g", "c", "-2147483648", "-1", "yesterday", uint8(1), uint8(2))
	f.Add("a", "b", "g", "g", "", "2147483648", "2147483648", "", uint8(3), uint8(5))
	f.Add("a", "a", "g", "g", "c", "0", "7", "2026-01-01T00:00:00.5+01:00", uint8(7), uint8(5))
	f.Fuzz(func(t *testing.T, revA, revB, gangA, gangB, column, cost, index, swapped string, shape, n uint8) {
		n %= 8
		var pods []*corev1.Pod
		for i := range int(n) {
			rev, gang := revA, gangA
			if i%2 == 1 {
				rev, gang = revB, gangB
			}
			opts := []podfixture.Option{podfixture.Labels(revLabel, rev, "gang", gang, "column", column, "index", index)}
			if i%3 == 0 {
				opts = append(opts, podfixture.Annotation(rollout.DeletionCostAnnotation, cost))
			}
			if i%3 == 1 {
				opts = append(opts, podfixture.Annotation(rollout.DefaultAnnotations.SwappedAt, swapped),
					podfixture.Annotation(rollout.DefaultAnnotations.ReplacementFor, gang))
			}
			if i%4 != 3 {
				opts = append(opts, podfixture.Ready())
			}
			pods = append(pods, podfixture.Pod("ns", fmt.Sprintf("pod-%d", i), opts...))
		}
		labels := rollout.PodLabels{Revision: revLabel, Column: "column"}
		if shape%2 == 1 {
			labels.Gang = "gang"
		}
		if shape%4 >= 2 {
			labels.Index = "index"
		}
		opts := rollout.PodOptions{Labels: labels, MinReadySeconds: int32(shape % 3),
			Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if shape%8 >= 4 {
			opts.Columns = []string{column, "other"}
		}
		rs, err := rollout.FromPods(pods, opts)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "pod ns/") && !strings.HasPrefix(msg, "gang ") && !strings.HasPrefix(msg, "options") {
				t.Fatalf("error %q names no pod, gang or option", msg)
			}
			return
		}
		seen := map[string]int{}
		for _, r := range rs {
			if r.Revision == "" {
				t.Fatalf("replica %s without a revision", r.Name)
			}
			if labels.Gang == "" {
				seen[r.Name]++
				continue
			}
			if len(opts.Columns) > 0 && len(r.Members) < len(opts.Columns) {
				t.Fatalf("gang %s has %d members, fewer than the %d columns", r.Name, len(r.Members), len(opts.Columns))
			}
			for _, m := range r.Members {
				if !m.Missing {
					seen[m.Name]++
				}
			}
		}
		for _, p := range pods {
			if seen[p.Name] != 1 {
				t.Fatalf("pod %s appears %d times in %+v", p.Name, seen[p.Name], rs)
			}
		}
		if len(seen) != len(pods) {
			t.Fatalf("%d pods became %d replicas or members", len(pods), len(seen))
		}
		reversed := slices.Clone(pods)
		slices.Reverse(reversed)
		again, err := rollout.FromPods(reversed, opts)
		if err != nil {
			t.Fatalf("pods in reverse order: %v", err)
		}
		if diff := cmp.Diff(rs, again, strictTime); diff != "" {
			t.Fatalf("pods in reverse order give other replicas (-want +got):\n%s", diff)
		}
	})
}

// FuzzPlan drives Plan with generated scenarios from the fuzzer's bytes and checks
// every invariant with rollouttest.Check.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte(strings.Repeat("\x02\x07\xff\x00", 32)))
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		mode := rapid.SampledFrom([]rollout.Mode{rollout.Rolling, rollout.Gang, rollout.Group}).Draw(t, "mode")
		lim := rollouttest.DefaultLimits
		lim.Data = rapid.Bool().Draw(t, "data")
		sc := rollouttest.ScenarioOf(mode, lim).Draw(t, "scenario")
		step, err := rollout.Plan(sc.Replicas, sc.Strategy)
		if err != nil {
			t.Fatalf("valid scenario rejected: %v", err)
		}
		if err := rollouttest.Check(sc.Replicas, sc.Strategy, step); err != nil {
			t.Fatal(err)
		}
	}))
}

// FuzzPlanRecover drives PlanRecover with generated replicas and policies and
// checks every step with rollouttest.CheckRecover.
func FuzzPlanRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0, 2, 0, 3, 0, 1, 1, 1, 9, 9, 9, 0, 0, 0, 5})
	f.Add([]byte(strings.Repeat("\x01\x03\x00\xff", 32)))
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		mode := rapid.SampledFrom([]rollout.Mode{rollout.Rolling, rollout.Gang}).Draw(t, "mode")
		sc := rollouttest.ScenarioOf(mode, rollouttest.Limits{MaxReplicas: 6, MaxColumns: 3}).Draw(t, "scenario")
		sim := &rollouttest.RecoverSimulator{Policy: recoverPolicy(t), Replicas: sc.Replicas, Now: t0, Tick: time.Minute,
			Faults: rollouttest.Faults{UpdateFails: 20, Unready: 20, Recovers: 20, Slow: 30}}
		for i := range 4 {
			if _, err := sim.Reconcile(); err != nil {
				t.Fatalf("reconcile %d: %v", i, err)
			}
			sim.Settle(t)
		}
	}))
}
