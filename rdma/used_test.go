package rdma

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestUsedCopiesAreReportedByVet: a Used copied by value (by assignment, as an
// argument, into a struct) is a go vet error, so no two Used values share one state
// by accident; going through pointers and Clone is not. It runs go vet on
// testdata/copyused, which marks the lines vet must report with "// copies".
func TestUsedCopiesAreReportedByVet(t *testing.T) {
	const dir = "testdata/copyused"
	f, err := os.Open(dir + "/copyused.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []int
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		if strings.HasSuffix(s.Text(), "// copies") {
			want = append(want, n)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	goCmd, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Fatalf("the test runs go vet: %v", err)
	}
	out, err := exec.Command(goCmd, "vet", "./"+dir).CombinedOutput()
	if err == nil && len(want) > 0 {
		t.Fatalf("go vet accepts every copy of a Used in %s:\n%s", dir, out)
	}
	report := regexp.MustCompile(`copyused\.go:(\d+):\d+: .*(copies lock value|passes lock by value).*rdma\.Used`)
	var got []int
	for _, line := range strings.Split(string(out), "\n") {
		if m := report.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			got = append(got, n)
		} else if strings.Contains(line, "copyused.go:") {
			t.Errorf("go vet: %s", line) // not a copy report: the test file is broken
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("go vet reports copies of a Used on lines %v, want %v:\n%s", got, want, out)
	}
}
