package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeRepo writes a minimal repository: the library's go.mod, rdma and internal
// sources, and the scheduler module.
func fakeRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"go.mod":                             "module github.com/kplan-dev/kplan\n",
		"go.sum":                             "",
		"rdma/allocate.go":                   "package rdma\n",
		"rdma/allocate_test.go":              "package rdma\n",
		"rdma/testdata/golden.json":          "{}\n",
		"internal/budget/budget.go":          "package budget\n",
		"examples/scheduler/go.mod":          "module github.com/kplan-dev/kplan/examples/scheduler\n",
		"examples/scheduler/go.sum":          "",
		"examples/scheduler/main.go":         "package main\n",
		"examples/scheduler/rdmaplugin/p.go": "package rdmaplugin\n",
		"README.md":                          "readme\n",
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSchedulerStamp(t *testing.T) {
	base, err := SchedulerStamp(fakeRepo(t), "go1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the same sources give the same stamp", func(t *testing.T) {
		again, err := SchedulerStamp(fakeRepo(t), "go1.26.0")
		if err != nil || again != base {
			t.Fatalf("stamp %s (%v), want %s", again, err, base)
		}
	})
	t.Run("another Go version gives another stamp", func(t *testing.T) {
		other, err := SchedulerStamp(fakeRepo(t), "go1.27.0")
		if err != nil || other == base {
			t.Fatalf("stamp %s (%v) did not change", other, err)
		}
	})
	for _, f := range []string{"rdma/allocate.go", "internal/budget/budget.go", "go.mod", "examples/scheduler/go.sum", "examples/scheduler/rdmaplugin/p.go", "rdma/new.go"} {
		t.Run("a change to "+f+" gives another stamp", func(t *testing.T) {
			root := fakeRepo(t)
			if err := os.WriteFile(filepath.Join(root, f), []byte("package x // changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			other, err := SchedulerStamp(root, "go1.26.0")
			if err != nil || other == base {
				t.Fatalf("stamp %s (%v) did not change", other, err)
			}
		})
	}
	for _, f := range []string{"rdma/allocate_test.go", "rdma/testdata/golden.json", "README.md"} {
		t.Run("a change to "+f+" keeps the stamp", func(t *testing.T) {
			root := fakeRepo(t)
			if err := os.WriteFile(filepath.Join(root, f), []byte("changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			other, err := SchedulerStamp(root, "go1.26.0")
			if err != nil || other != base {
				t.Fatalf("stamp %s (%v) changed, want %s", other, err, base)
			}
		})
	}
}
