package names

import (
	"strings"
	"testing"

	"github.com/kplan-dev/kplan/internal/canonhash"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

func TestJoin(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		name  string
		limit int
		parts []string
		want  string
	}{
		{"short names are joined unchanged", 63, []string{"qwen", "prefill", "ranktable"}, "qwen-prefill-ranktable"},
		{"empty parts are skipped", 63, []string{"qwen", "", "ranktable"}, "qwen-ranktable"},
		{"exactly at the limit is unchanged", 10, []string{"abcd", "efgh"}, "abcd-efgh"},
		// 60 + 1 + 9 = 70 > 63: keep 63-9 = 54 chars, then "-" + hash
		{"a long name is cut and hashed", 63, []string{long, "ranktable"}, long[:54] + "-" + hashOf(long+"-ranktable")},
		// "abcdefgh-ijklmnopqrstu" is 22 > 18: keep 18-9 = 9 chars "abcdefgh-", trim the '-'
		{"no dash before the suffix", 18, []string{"abcdefgh", "ijklmnopqrstu"}, "abcdefgh-" + hashOf("abcdefgh-ijklmnopqrstu")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Join(c.limit, c.parts...)
			if got != c.want {
				t.Errorf("Join = %q, want %q", got, c.want)
			}
			if len(got) > c.limit {
				t.Errorf("len %d over limit %d", len(got), c.limit)
			}
		})
	}
}

func TestLongNamesStayDistinctAndValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		label := rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?`)
		parts := rapid.SliceOfN(label, 1, 6).Draw(t, "parts")
		other := rapid.SliceOfN(label, 1, 6).Draw(t, "other")
		a, b := Label(parts...), Label(other...)
		if errs := validation.IsDNS1123Label(a); len(errs) > 0 {
			t.Fatalf("Label(%q) = %q is not a DNS-1123 label: %v", parts, a, errs)
		}
		if strings.Join(parts, "-") != strings.Join(other, "-") && a == b {
			t.Fatalf("%q and %q both became %q", parts, other, a)
		}
		if Label(parts...) != a {
			t.Fatal("not deterministic")
		}
	})
}

func TestSubdomainLimit(t *testing.T) {
	got := Subdomain(strings.Repeat("x", 300))
	if len(got) != maxSubdomainLength {
		t.Fatalf("len %d, want %d", len(got), maxSubdomainLength)
	}
	if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestTinyLimitPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a limit that cannot hold the suffix must panic")
		}
	}()
	Join(5, "abcdefgh")
}

// hashOf is the suffix the package doc promises: 8 hex digits of the canonical hash.
func hashOf(s string) string { return canonhash.Short(s) }
