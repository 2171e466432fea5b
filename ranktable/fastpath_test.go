// The optimisations agree with the plain code: the ranktable JSON
// scanner, native renderers' JSON check, and IPv4 server order.

package ranktable

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/kplan-dev/kplan/internal/natural"
	"pgregory.net/rapid"
)

func TestFastRanktableJSON(t *testing.T) {
	cases := []struct {
		name, in string
		fast     bool
	}{
		{"the design's annotation", designAnnotation("qwen-0", "192.168.1.10", "10.20.0.2", "10.20.0.3"), true},
		{"whitespace everywhere", " {\t\"server_id\" : \"s\" ,\n\"devices\":[ {} , {\"device_id\":\"1\"}]}\r\n", true},
		{"no devices key", `{"server_id":"s"}`, true},
		{"an escape", `{"server_id":"a\"b","devices":[]}`, false},
		{"a repeated key", `{"server_id":"a","server_id":"b","devices":[]}`, false},
		{"a repeated device key", `{"server_id":"a","devices":[{"device_id":"0","device_id":"1"}]}`, false},
		{"another spelling", `{"Server_ID":"a","devices":[]}`, false},
		{"an unknown key", `{"server_id":"a","devices":[],"x":"y"}`, false},
		{"a number", `{"server_id":"a","devices":[{"device_id":0}]}`, false},
		{"null devices", `{"server_id":"a","devices":null}`, false},
		{"non-ASCII", `{"server_id":"é","devices":[]}`, false},
		{"an empty string", `{"server_id":"","devices":[]}`, false},
		{"trailing data", `{"server_id":"a","devices":[]}x`, false},
		{"truncated", `{"server_id":"a","devices":[`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, ok := fastRanktableJSON(c.in)
			if ok != c.fast {
				t.Fatalf("fast path taken: %v, want %v", ok, c.fast)
			}
			if !ok {
				return
			}
			slow, err := decodeRanktableJSON(c.in)
			if err != nil {
				t.Fatalf("fast path accepted what encoding/json rejects: %v", err)
			}
			if diff := gocmp.Diff(slow, fast); diff != "" {
				t.Fatalf("fast path differs from encoding/json (-json +fast):\n%s", diff)
			}
		})
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = fastRanktableJSON(cases[0].in) }); n != 1 {
		t.Errorf("%v allocations per annotation, want 1 (the device slice)", n)
	}
}

// TestNativeRendererSkipsTheJSONCheckOnlyForPlainStrings: validated data is plain, so
// the common path needs no json.Valid; a status needing escapes turns the check on.
func TestNativeRendererSkipsTheJSONCheckOnlyForPlainStrings(t *testing.T) {
	tm := mustLibrary(t, LibraryMindIERole, LoadOptions{})
	var members []Member
	for i, p := range designPods(testOwner("qwen-inference")) {
		d, err := tm.ParseAnnotation(p.Annotations[DefaultAnnotationName])
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, Member{Pod: fmt.Sprint("default/p", i), Data: d, RankIndex: -1})
	}
	table, err := Build(members, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, valid := tm.native(nil, table); !valid {
		t.Error("a validated table was not vouched for")
	}
	table.Status = `x"`
	if _, valid := tm.native(nil, table); valid {
		t.Error("a status with a quote was vouched for")
	}
	if _, err := tm.Render(table, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("a broken table rendered: %v", err)
	}
}

// TestIPv4OrderIsNaturalOrder: the numeric sort of canonical dotted quads Build uses
// gives natural order, and parseIPv4 accepts exactly what netip does (in canonical form).
func TestIPv4OrderIsNaturalOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		octet := rapid.OneOf(rapid.IntRange(0, 12), rapid.IntRange(0, 255))
		ids := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprintf("%d.%d.%d.%d", octet.Draw(t, "a"), octet.Draw(t, "b"), octet.Draw(t, "c"), octet.Draw(t, "d"))
		}), 1, 20).Draw(t, "ids")
		if !allIPv4(ids, func(s string) string { return s }) {
			t.Fatalf("canonical addresses rejected: %v", ids)
		}
		a, b := slices.Clone(ids), slices.Clone(ids)
		slices.SortFunc(a, natural.Compare)
		slices.SortFunc(b, func(x, y string) int { return cmp.Compare(ipv4(x), ipv4(y)) })
		if !slices.Equal(a, b) {
			t.Fatalf("natural %v, numeric %v", a, b)
		}
		pieces := rapid.SliceOfN(rapid.SampledFrom([]string{"0", "00", "01", "1", "9", "10", "99", "255", "256", "1000", "", "a", " 1"}), 1, 5).Draw(t, "pieces")
		s := strings.Join(pieces, ".")
		addr, err := netip.ParseAddr(s)
		want := err == nil && addr.Is4() && addr.String() == s
		if got, ok := parseIPv4(s); ok != want || (ok && got != binary.BigEndian.Uint32(addr.AsSlice())) {
			t.Fatalf("parseIPv4(%q) = %d, %v; netip says %v", s, got, ok, want)
		}
	})
}
