package revision

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/kplan-dev/kplan/internal/podfixture"
)

func TestKeysFor(t *testing.T) {
	long := strings.Repeat("a", 40)
	tests := []struct {
		name    string
		set     string
		wantKey string
	}{
		{"a short name is used verbatim", "cms1", "apps.kruise.io/configmapset.cms1.updateRevision"},
		{"a name with dots is used verbatim", "a.b", "apps.kruise.io/configmapset.a.b.updateRevision"},
		// 25 characters: 13 + 25 + 25 = 63, exactly the limit for the longest suffix.
		{"a 25-character name still fits", strings.Repeat("b", 25), "apps.kruise.io/configmapset." + strings.Repeat("b", 25) + ".updateRevision"},
		{"a long name is cut and hashed", long, "apps.kruise.io/configmapset.aaaaaaaaaaaaaaaa-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := KeysFor(tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(k.UpdateRevision, tt.wantKey) {
				t.Errorf("key %q, want prefix %q", k.UpdateRevision, tt.wantKey)
			}
		})
	}
	t.Run("two long names with one prefix get different keys", func(t *testing.T) {
		a, b := mustKeys(long+"x"), mustKeys(long+"y")
		if a.UpdateRevision == b.UpdateRevision {
			t.Error("same key")
		}
	})
	t.Run("an invalid name is an error", func(t *testing.T) {
		if _, err := KeysFor("Bad_Name"); err == nil {
			t.Error("no error")
		}
	})
}

// genSetName draws valid DNS-1123 subdomains up to 253 characters, dots included.
func genSetName() *rapid.Generator[string] {
	label := rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?`)
	return rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(label, 1, 12).Draw(t, "labels")
		name := strings.Join(parts, ".")
		if len(name) > 253 {
			name = strings.TrimRight(name[:253], "-.")
		}
		return name
	})
}

func TestKeysAreValidForEveryValidName(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := genSetName().Draw(t, "name")
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			t.Skip("generator produced an invalid name")
		}
		k, err := KeysFor(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{k.UpdateRevision, k.UpdateRevisionTimestamp, k.CurrentRevision, k.CurrentRevisionTimestamp, k.UpdateOrder} {
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				t.Fatalf("%q: %v", key, errs)
			}
			if len(name) <= maxSetNameInKey && !strings.HasPrefix(key, keyDomain+"/"+keySetPrefix+name+".") {
				t.Fatalf("key %q does not hold the set name %q verbatim", key, name)
			}
		}
		for _, n := range []string{ReloadSidecarName(name), VolumeName(name), HubVolumeName(name), InjectorName(name)} {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				t.Fatalf("%q: %v", n, errs)
			}
		}
		if errs := validation.IsDNS1123Subdomain(HubName(name)); len(errs) > 0 {
			t.Fatalf("hub name %q: %v", HubName(name), errs)
		}
	})
}

func TestPodStateRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := PodState{
			UpdateRevision:  rapid.StringMatching(`[a-f0-9]{0,16}`).Draw(t, "u"),
			CurrentRevision: rapid.StringMatching(`[a-f0-9]{0,16}`).Draw(t, "c"),
		}
		if rapid.Bool().Draw(t, "ut") {
			s.UpdateTimestamp = time.UnixMilli(rapid.Int64Range(1, 1<<45).Draw(t, "utv")).UTC()
		}
		if rapid.Bool().Draw(t, "ct") {
			s.CurrentTimestamp = time.UnixMilli(rapid.Int64Range(1, 1<<45).Draw(t, "ctv")).UTC()
		}
		pod := podfixture.Pod("ns", "p", podfixture.Annotation("other", "x"))
		testKeys.Write(pod.Annotations, s)
		got, err := testKeys.Read(pod)
		if err != nil || got != s {
			t.Fatalf("read %+v, %v; wrote %+v", got, err, s)
		}
	})
}

func TestParseTimestamp(t *testing.T) {
	for _, bad := range []string{"", "-1", "+5", "1e3", " 1", "1234567890123456789", "0x10"} {
		if _, err := parseTimestamp(bad); err == nil {
			t.Errorf("parseTimestamp(%q) accepted", bad)
		}
	}
	got, err := parseTimestamp("1739552400000")
	if err != nil || !got.Equal(t0) {
		t.Errorf("got %v, %v", got, err)
	}
}
