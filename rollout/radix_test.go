package rollout

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSortRecsMatchesComparisonSort checks the radix sort against
// slices.SortFunc with the same total order: (key, cost, name), then idx (in Plan
// the tie-break is the full name; idx stands in for it here). Fields are drawn
// from a few values each, extremes included, so that most bytes are constant
// (skipped passes), negative costs meet positive ones, and whole runs tie on
// all 24 bytes. Lengths cover both sides of radixMin.
func TestSortRecsMatchesComparisonSort(t *testing.T) {
	byOrder := func(a, b sortRec) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.cost, b.cost); c != 0 {
			return c
		}
		if c := cmp.Compare(a.name, b.name); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*radixMin).Draw(t, "n")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0))
		keys := []uint64{0, 1, 1 << 32, 3<<62 | 7<<32 | 1<<31, math.MaxUint64}
		costs := []int64{math.MinInt64, -300, -1, 0, 1, 256, math.MaxInt64}
		names := []uint64{0, 'a', 0x0102030405060708, 0xff << 56, math.MaxUint64}
		nk := rapid.IntRange(1, len(keys)).Draw(t, "keys")
		nc := rapid.IntRange(1, len(costs)).Draw(t, "costs")
		nn := rapid.IntRange(1, len(names)).Draw(t, "names")
		recs := make([]sortRec, n)
		for i := range recs {
			recs[i] = sortRec{key: keys[rng.IntN(nk)], cost: costs[rng.IntN(nc)], name: names[rng.IntN(nn)], idx: uint32(i)}
		}
		rng.Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		want := slices.Clone(recs)
		slices.SortFunc(want, byOrder)
		got := sortRecs(recs, make([]sortRec, n), byOrder)
		if !slices.Equal(got, want) {
			t.Fatalf("sortRecs of %d records differs from slices.SortFunc", n)
		}
	})
}
