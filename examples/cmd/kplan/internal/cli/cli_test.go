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
	want := map[string]bool{}
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
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("golden/%s belongs to no case in cases.txt", e.Name())
		}
		delete(want, e.Name())
	}
	for name := range want {
		t.Errorf("golden/%s is missing", name)
	}
}
