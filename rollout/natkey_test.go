package rollout

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/natural"
)

// keyCompare is how Plan orders names: by natural key, ties by natural.Compare.
func keyCompare(a, b string) int {
	if c := bytes.Compare(appendNaturalKey(nil, a), appendNaturalKey(nil, b)); c != 0 {
		return c
	}
	return natural.Compare(a, b)
}

func checkNaturalKey(t interface{ Fatalf(string, ...any) }, a, b string) {
	if got, want := keyCompare(a, b), natural.Compare(a, b); got != want {
		t.Fatalf("names %q, %q: natural key order %d, natural order %d", a, b, got, want)
	}
}

func TestNaturalKeyOrdersLikeNatural(t *testing.T) {
	for _, tc := range [][2]string{
		{"r-9", "r-10"}, {"r-10", "r-9"}, {"r-01", "r-1"}, {"r-1", "r-01"}, {"a", "a0"}, {"a/", "a0"},
		{"a:", "a9"}, {"", "0"}, {"000", ""}, {"x00y", "x0y"}, {"9", "10"}, {"1a", "1"},
	} {
		checkNaturalKey(t, tc[0], tc[1])
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.StringOfN(rapid.SampledFrom([]rune("0019a-/:.")), 0, 12, -1)
		checkNaturalKey(t, name.Draw(t, "a"), name.Draw(t, "b"))
	})
}

func FuzzNaturalKey(f *testing.F) {
	f.Add("r-9", "r-10")
	f.Add("r-010", "r-10")
	f.Add("gang-12-3", "gang-12-30")
	f.Add("a/0", "a0/")
	f.Fuzz(func(t *testing.T, a, b string) { checkNaturalKey(t, a, b) })
}
