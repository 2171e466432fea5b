package clitest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Case is one command line to run.
type Case struct {
	// Name names the golden files: golden/NAME.out (stdout) and golden/NAME.err
	// (stderr, for failing cases).
	Name string
	// Exit is the expected exit code.
	Exit int
	// Args are the arguments after the program name.
	Args []string
	// Stdin is a file (relative to the cases' directory) fed to stdin, or "".
	Stdin string
}

// Load reads a cases file: one case per line, "NAME EXIT ARGS...", where an argument
// "<FILE" feeds FILE to stdin; blank lines and lines starting with # are skipped.
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []Case
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: want a name, an exit code and the arguments", path, n)
		}
		exit, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: exit code %q: %v", path, n, f[1], err)
		}
		c := Case{Name: f[0], Exit: exit}
		if seen[c.Name] {
			return nil, fmt.Errorf("%s:%d: case %s twice", path, n, c.Name)
		}
		seen[c.Name] = true
		for _, a := range f[2:] {
			if strings.HasPrefix(a, "<") {
				c.Stdin = a[1:]
				continue
			}
			c.Args = append(c.Args, a)
		}
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

// Check verifies one run of c in dir: the exit code; on success stdout equal to
// golden/NAME.out and stderr (warnings) equal to golden/NAME.warn, or empty when there
// is no such file; on failure an empty stdout and exactly one line on stderr equal to
// golden/NAME.err. With update it rewrites the golden files instead of comparing with
// them (the other checks still apply).
func Check(t testing.TB, dir string, c Case, stdout, stderr []byte, code int, update bool) {
	t.Helper()
	if code != c.Exit {
		t.Errorf("exit code %d, want %d; stderr: %s", code, c.Exit, stderr)
	}
	var got []byte
	var golden string
	if c.Exit == 0 {
		checkWarnings(t, filepath.Join(dir, "golden", c.Name+".warn"), stderr, update)
		if len(stdout) == 0 {
			t.Errorf("stdout is empty")
		}
		got, golden = stdout, filepath.Join(dir, "golden", c.Name+".out")
	} else {
		if len(stdout) > 0 {
			t.Errorf("stdout is not empty after an error: %s", stdout)
		}
		if n := bytes.Count(stderr, []byte("\n")); n != 1 || !bytes.HasSuffix(stderr, []byte("\n")) {
			t.Errorf("stderr is %d lines, want exactly one: %q", n, stderr)
		}
		got, golden = stderr, filepath.Join(dir, "golden", c.Name+".err")
	}
	if update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (check, then run with -update):\n--- got\n%s\n--- want\n%s", golden, got, want)
	}
}

// checkWarnings compares the stderr of a successful run with the golden file (absent:
// stderr must be empty), or rewrites it with update.
func checkWarnings(t testing.TB, golden string, stderr []byte, update bool) {
	t.Helper()
	if update {
		var err error
		if len(stderr) > 0 {
			err = os.WriteFile(golden, stderr, 0o644)
		} else if err = os.Remove(golden); os.IsNotExist(err) {
			err = nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if !bytes.Equal(stderr, want) {
		t.Errorf("stderr differs from %s (check, then run with -update):\n--- got\n%s\n--- want\n%s", golden, stderr, want)
	}
}
