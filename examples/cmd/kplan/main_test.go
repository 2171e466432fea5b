package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kplan-dev/kplan/examples/cmd/kplan/internal/clitest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestMain lets the test binary be kplan itself: with KPLAN_TEST_RUN_MAIN=1 it runs
// main, so the process tests exec the binary under test without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("KPLAN_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestProcess runs every case of testdata/cli/cases.txt as a process: exit code, stdout
// and the one stderr line are what a user or a script sees.
func TestProcess(t *testing.T) {
	dir, err := filepath.Abs("../../testdata/cli")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := clitest.Load(filepath.Join(dir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Errorf("only %d cases in cases.txt", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, c.Args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "KPLAN_TEST_RUN_MAIN=1")
			if c.Stdin != "" {
				f, err := os.Open(filepath.Join(dir, c.Stdin))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				cmd.Stdin = f
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			clitest.Check(t, dir, c, stdout.Bytes(), stderr.Bytes(), code, *update)
		})
	}
}
