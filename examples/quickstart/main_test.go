package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const goldenPath = "../testdata/quickstart/output.txt"

// TestOutput compares the quickstart's output with the golden file (rewritten with
// -update) and checks that it shows each section's key result.
func TestOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("output differs from %s (run go test -update after checking the diff):\n%s", filepath.Base(goldenPath), out.String())
	}
	// The golden file is generated, so also check the facts it must show, independently.
	for _, fact := range []string{
		"== 1. ranktable", "== 2. rollout", "== 3. rollout", "== 4. revision", "== 5. rdma", "== 6. webhookpatch",
		"ConfigMap qwen-inference-worker-ranktable: Create (0 bytes of table)",
		"role worker: Completed, 2 of 2 pods",
		"server 192.168.1.10:", "server 192.168.1.11:",
		"device 7 10.20.0.17 rank 15",
		"reconcile 4: complete",               // gang: 3 gangs one at a time, then complete
		"reconcile 5: complete",               // group: 4 rows, then complete
		"PodsUpdated: 2 pods set to revision", // partition 50% moves two of four pods
		"PodsRolledBack",                      // partition 100% rolls back
		"VF 0000:18:00.2 of PF 0000:18:00.0 on pci0000:17",
		"second invocation: 0 operations",
		"qwen-1 waits: WaitingForAvailable (not available yet)",                 // operator: the in-place update spends the budget
		"qwen-2 waits: MaxUnavailableReached (maxUnavailable budget exhausted)", // so the last group waits
		"== 7. operator",
	} {
		if !strings.Contains(out.String(), fact) {
			t.Errorf("output lacks %q", fact)
		}
	}
	for i, line := range strings.Split(out.String(), "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("line %d has trailing spaces: %q", i+1, line)
		}
	}
}

// TestOperatorYAMLIsTheCLIInput: the operator section's ModelServing and pods,
// as printed, are the files kplan rollout's golden case
// rollout-modelserving-inplace reads (rewritten with -update), so the CLI is
// checked on the same input the quickstart plans.
func TestOperatorYAMLIsTheCLIInput(t *testing.T) {
	ms, list, err := msObjects()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		obj  any
	}{
		{"../testdata/cli/manifests/rollout/quickstart-modelserving.yaml", ms},
		{"../testdata/cli/manifests/rollout/quickstart-modelserving-pods.yaml", list},
	} {
		got, err := yaml.Marshal(f.obj)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(f.path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the quickstart's objects (run go test -update)", f.path)
		}
	}
}

// TestDeterministic runs the quickstart twice: plans take no clock, so the output
// must be byte-identical.
func TestDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := run(&a); err != nil {
		t.Fatal(err)
	}
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs printed different output")
	}
}
