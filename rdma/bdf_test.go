package rdma

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBDF(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"a plain address parses", "0000:3b:00.0", "0000:3b:00.0", ""},
		{"upper case is normalised to lower", "0000:AF:1F.7", "0000:af:1f.7", ""},
		{"a five digit VMD domain parses", "10001:80:05.0", "10001:80:05.0", ""},
		{"a zero-padded five digit domain is normalised", "00000:3b:00.0", "0000:3b:00.0", ""},
		{"device 0x20 is rejected", "0000:3b:20.0", "", "device is above 1f"},
		{"function 8 is rejected", "0000:3b:00.8", "", "function is above 7"},
		{"a missing domain is rejected", "3b:00.0", "", "wrong length"},
		{"a six digit domain is rejected", "100001:80:05.0", "", "wrong length"},
		{"wrong separators are rejected", "0000.3b:00:0", "", "separators"},
		{"non-hex is rejected", "0000:3g:00.0", "", "bus is not hex"},
		{"a sign is rejected", "+000:3b:00.0", "", "domain is not hex"},
		{"the empty string is rejected", "", "", "wrong length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBDF(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "\""+tc.in+"\"") {
					t.Fatalf("got %v, %v; want error containing %q and the input", b, err, tc.err)
				}
				return
			}
			if err != nil || b.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", b, err, tc.want)
			}
		})
	}
}

func TestBDFOrderIsNumeric(t *testing.T) {
	in := []string{"10000:00:00.0", "0000:af:00.0", "0000:3b:00.1", "0000:3b:00.0", "0001:00:00.0", "0000:3b:01.0"}
	var bs []BDF
	for _, s := range in {
		bs = append(bs, mustBDF(s))
	}
	slices.SortFunc(bs, BDF.Compare)
	var got []string
	for _, b := range bs {
		got = append(got, b.String())
	}
	want := "0000:3b:00.0 0000:3b:00.1 0000:3b:01.0 0000:af:00.0 0001:00:00.0 10000:00:00.0"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v", got)
	}
}

func FuzzParseBDF(f *testing.F) {
	for _, s := range []string{"0000:3b:00.0", "10001:80:05.0", "0000:AF:1F.7", "0000:3b:20.0", "x", "", "0000:3b:00.8", "ffff:ff:1f.7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBDF(s)
		if err != nil {
			if !strings.Contains(err.Error(), "is not a PCI address") {
				t.Fatalf("unclear error %v", err)
			}
			return
		}
		if b.Domain > maxBDFDomain || b.Device > 0x1f || b.Function > 7 {
			t.Fatalf("%q parsed to invalid %+v", s, b)
		}
		out := b.String()
		// A zero-padded five digit domain ("00000:…") is normalised to four digits.
		if !strings.EqualFold(out, s) && !(len(s) == 13 && s[0] == '0' && strings.EqualFold(out, s[1:])) {
			t.Fatalf("%q formats as %q", s, out)
		}
		b2, err := ParseBDF(out)
		if err != nil || b2 != b || b2.Compare(b) != 0 {
			t.Fatalf("round trip of %q: %v %v", s, b2, err)
		}
	})
}
