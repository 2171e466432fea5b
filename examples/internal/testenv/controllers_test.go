package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeToolRoot writes a tool module's files under a new directory and returns it.
func fakeToolRoot(t *testing.T, tool cachedTool) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range tool.files {
		p := filepath.Join(root, filepath.FromSlash(tool.module), f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestToolStamp(t *testing.T) {
	for _, tool := range []cachedTool{controllerManagerTool, lwsTool} {
		t.Run(tool.binary, func(t *testing.T) {
			base, err := toolStamp(fakeToolRoot(t, tool), "go1.26.0", tool)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("the same inputs give the same stamp", func(t *testing.T) {
				again, err := toolStamp(fakeToolRoot(t, tool), "go1.26.0", tool)
				if err != nil || again != base {
					t.Fatalf("stamp %s (%v), want %s", again, err, base)
				}
			})
			t.Run("another Go version gives another stamp", func(t *testing.T) {
				other, err := toolStamp(fakeToolRoot(t, tool), "go1.27.0", tool)
				if err != nil || other == base {
					t.Fatalf("stamp %s (%v) did not change", other, err)
				}
			})
			for _, f := range tool.files {
				t.Run("a change to "+f+" gives another stamp", func(t *testing.T) {
					root := fakeToolRoot(t, tool)
					if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(tool.module), f), []byte("changed\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					other, err := toolStamp(root, "go1.26.0", tool)
					if err != nil || other == base {
						t.Fatalf("stamp %s (%v) did not change", other, err)
					}
				})
			}
			t.Run("another package gives another stamp", func(t *testing.T) {
				other := tool
				other.pkg = "example.com/other/cmd"
				s, err := toolStamp(fakeToolRoot(t, tool), "go1.26.0", other)
				if err != nil || s == base {
					t.Fatalf("stamp %s (%v) did not change", s, err)
				}
			})
			t.Run("a missing file is an error naming it", func(t *testing.T) {
				root := fakeToolRoot(t, tool)
				if err := os.Remove(filepath.Join(root, filepath.FromSlash(tool.module), "go.sum")); err != nil {
					t.Fatal(err)
				}
				if _, err := toolStamp(root, "go1.26.0", tool); err == nil || !strings.Contains(err.Error(), "go.sum") {
					t.Fatalf("err = %v, want one naming go.sum", err)
				}
			})
		})
	}
}

// TestToolModules checks the checked-in tool modules against the constants: the
// LWS module requires LWSVersion and builds it as a tool, and the controller
// manager module requires k8s.io/kubernetes at KubeVersion.
func TestToolModules(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		module string
		want   []string
	}{
		{LWSModule, []string{`(?m)^tool ` + regexp.QuoteMeta(lwsPackage) + `$`, `(?m)^\s*sigs\.k8s\.io/lws ` + regexp.QuoteMeta(LWSVersion) + `\b`}},
		{ControllerManagerModule, []string{`(?m)^\s*k8s\.io/kubernetes ` + regexp.QuoteMeta(KubeVersion) + `$`}},
	} {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(c.module), "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range c.want {
			if !regexp.MustCompile(re).Match(b) {
				t.Errorf("%s/go.mod does not match %s", c.module, re)
			}
		}
	}
}

func TestLDFlags(t *testing.T) {
	for _, c := range []struct{ tool, want string }{
		{controllerManagerBinary, "k8s.io/component-base/version.gitVersion=" + KubeVersion},
		{lwsBinary, "sigs.k8s.io/lws/pkg/version.GitVersion=" + LWSVersion},
	} {
		if got := ldflags(c.tool); !strings.Contains(got, c.want) {
			t.Errorf("ldflags(%s) = %q, want it to set %s", c.tool, got, c.want)
		}
	}
}
