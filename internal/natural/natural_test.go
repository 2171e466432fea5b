package natural

import (
	"math/big"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

func TestCompare(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want int
	}{
		{"device 9 before device 10", "9", "10", -1},
		{"dev2 before dev10", "dev2", "dev10", -1},
		{"IP .9 before .10", "192.168.1.9", "192.168.1.10", -1},
		{"IP .10 after .9", "192.168.1.10", "192.168.1.9", 1},
		{"equal strings", "pod-3", "pod-3", 0},
		{"prefix first", "pod", "pod-0", -1},
		{"letters bytewise", "a10", "b2", -1},
		{"fewer leading zeros first", "1", "01", -1},
		{"leading zeros only break ties", "01a", "1b", -1},
		{"long runs do not overflow", "x99999999999999999999999", "x100000000000000000000000", -1},
		{"digits before letters bytewise", "1", "a", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Compare(c.a, c.b); got != c.want {
				t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
			}
			if got := Compare(c.b, c.a); got != -c.want {
				t.Errorf("Compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
			}
		})
	}
}

func TestSortSixteenDevices(t *testing.T) {
	var ids []string
	for i := 15; i >= 0; i-- {
		ids = append(ids, strconv.Itoa(i))
	}
	slices.SortFunc(ids, Compare)
	for i, id := range ids {
		if id != strconv.Itoa(i) {
			t.Fatalf("position %d holds %q: %v", i, id, ids)
		}
	}
}

var natString = rapid.StringOf(rapid.SampledFrom([]rune("0019a.-")))

func TestCompareIsATotalOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := natString.Draw(t, "a"), natString.Draw(t, "b"), natString.Draw(t, "c")
		if (Compare(a, b) == 0) != (a == b) {
			t.Fatalf("Compare(%q, %q) = %d", a, b, Compare(a, b))
		}
		if Compare(a, b) != -Compare(b, a) {
			t.Fatalf("not antisymmetric for %q, %q", a, b)
		}
		if Compare(a, b) <= 0 && Compare(b, c) <= 0 && Compare(a, c) > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
		}
	})
}

func TestCompareMatchesNumbers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Uint64().Draw(t, "x")
		y := rapid.Uint64().Draw(t, "y")
		prefix := rapid.StringMatching(`[a-z.]{0,3}`).Draw(t, "prefix")
		a, b := prefix+strconv.FormatUint(x, 10), prefix+strconv.FormatUint(y, 10)
		want := new(big.Int).SetUint64(x).Cmp(new(big.Int).SetUint64(y))
		if got := Compare(a, b); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}
