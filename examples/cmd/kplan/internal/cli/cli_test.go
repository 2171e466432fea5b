package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/clitest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// casesDir holds cases.txt, the sample manifests and the golden outputs.
var casesDir, _ = filepath.Abs("../../../../testdata/cli")

// TestCases runs every case of cases.txt in-process through Main (the process tests in
// cmd/kplan run the same cases as a process and compare with the same golden files).
func TestCases(t *testing.T) {
	cases, err := clitest.Load(filepath.Join(casesDir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(casesDir)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var stdin io.Reader = bytes.NewReader(nil)
			if c.Stdin != "" {
				f, err := os.Open(c.Stdin)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
			}
			var stdout, stderr bytes.Buffer
			code := Main(c.Args, stdin, &stdout, &stderr)
			clitest.Check(t, casesDir, c, stdout.Bytes(), stderr.Bytes(), code, *update)
		})
	}
}

// TestNoStaleGoldens checks that every golden file belongs to a case, so a renamed or
// removed case does not leave an unchecked file behind.
func TestNoStaleGoldens(t *testing.T) {
	cases, err := clitest.Load(filepath.Join(casesDir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, optional := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		if c.Exit == 0 {
			want[c.Name+".out"] = true
		} else {
			want[c.Name+".err"] = true
		}
	}
	entries, err := os.ReadDir(filepath.Join(casesDir, "golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Exit == 0 {
			optional[c.Name+".warn"] = true
		}
	}
	for _, e := range entries {
		if optional[e.Name()] {
			continue
		}
		if !want[e.Name()] {
			t.Errorf("golden/%s belongs to no case in cases.txt", e.Name())
		}
		delete(want, e.Name())
	}
	for name := range want {
		t.Errorf("golden/%s is missing", name)
	}
}

// TestInputOrder runs cases with their -f files in reverse order: plans do not depend
// on the order objects come in, so the output must be byte-identical.
func TestInputOrder(t *testing.T) {
	cases, err := clitest.Load(filepath.Join(casesDir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(casesDir)
	tested := 0
	for _, c := range cases {
		var files, rest []string
		for i := 0; i < len(c.Args); i++ {
			if c.Args[i] == "-f" && i+1 < len(c.Args) {
				files = append(files, c.Args[i+1])
				i++
				continue
			}
			rest = append(rest, c.Args[i])
		}
		if c.Exit != 0 || c.Stdin != "" || len(files) < 2 {
			continue
		}
		tested++
		t.Run(c.Name, func(t *testing.T) {
			reversed := append([]string{}, rest[0])
			for i := len(files) - 1; i >= 0; i-- {
				reversed = append(reversed, "-f", files[i])
			}
			reversed = append(reversed, rest[1:]...)
			var a, b, errA, errB bytes.Buffer
			codeA := Main(c.Args, bytes.NewReader(nil), &a, &errA)
			codeB := Main(reversed, bytes.NewReader(nil), &b, &errB)
			if codeA != 0 || codeB != 0 {
				t.Fatalf("exit codes %d and %d: %s %s", codeA, codeB, errA.String(), errB.String())
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("%v and %v print different plans:\n%s\n---\n%s", c.Args, reversed, a.String(), b.String())
			}
		})
	}
	if tested < 10 {
		t.Errorf("only %d cases with several files", tested)
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		msg, id string
		want    bool
	}{
		{"pod default/web-1: label x: missing", "default/web-1", true},
		{"pod default/web-10: label x: missing", "default/web-1", false},
		{"pod default/web-10 and default/web-1", "default/web-1", true},
		{"pod xdefault/web-1", "default/web-1", false},
		{"default/web-1", "default/web-1", true},
		{"", "default/web-1", false},
	} {
		if got := mentions(tc.msg, tc.id); got != tc.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", tc.msg, tc.id, got, tc.want)
		}
	}
}
