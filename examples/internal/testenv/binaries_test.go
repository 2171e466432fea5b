package testenv

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeRoot writes a minimal examples module with both tool modules under dir.
func fakeRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "// comment\nmodule "+examplesModule+"\n\ngo 1.26.0\n")
	for _, tool := range tools {
		for _, f := range []string{"go.mod", "go.sum", "main.go"} {
			write(filepath.Join("tools", "envtestbin", tool, f), tool+" "+f+"\n")
		}
	}
	return dir
}

func TestStamp(t *testing.T) {
	root := fakeRoot(t)
	base, err := Stamp(root, "go1.26.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the same inputs give the same stamp", func(t *testing.T) {
		again, err := Stamp(root, "go1.26.0")
		if err != nil || again != base {
			t.Fatalf("stamp %s (%v), want %s", again, err, base)
		}
	})
	t.Run("another Go version gives another stamp", func(t *testing.T) {
		other, err := Stamp(root, "go1.27.0")
		if err != nil || other == base {
			t.Fatalf("stamp %s (%v) did not change", other, err)
		}
	})
	for _, f := range []string{"kube-apiserver/go.mod", "kube-apiserver/go.sum", "etcd/main.go"} {
		t.Run("a change to "+f+" gives another stamp", func(t *testing.T) {
			root := fakeRoot(t)
			p := filepath.Join(root, "tools", "envtestbin", f)
			if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			other, err := Stamp(root, "go1.26.0")
			if err != nil || other == base {
				t.Fatalf("stamp %s (%v) did not change", other, err)
			}
		})
	}
	t.Run("a missing tool module is an error naming the file", func(t *testing.T) {
		root := fakeRoot(t)
		if err := os.Remove(filepath.Join(root, "tools", "envtestbin", "etcd", "go.sum")); err != nil {
			t.Fatal(err)
		}
		if _, err := Stamp(root, "go1.26.0"); err == nil || !strings.Contains(err.Error(), "go.sum") {
			t.Fatalf("err = %v, want one naming go.sum", err)
		}
	})
}

func TestFresh(t *testing.T) {
	dir := t.TempDir()
	if fresh(dir, stampFile, "s", tools) {
		t.Fatal("an empty directory is fresh")
	}
	for _, tool := range tools {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if fresh(dir, stampFile, "s", tools) {
		t.Fatal("binaries without a stamp are fresh")
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte("s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !fresh(dir, stampFile, "s", tools) {
		t.Fatal("binaries with their stamp are not fresh")
	}
	if fresh(dir, stampFile, "other", tools) {
		t.Fatal("binaries with another stamp are fresh")
	}
	if err := os.Remove(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if fresh(dir, stampFile, "s", tools) {
		t.Fatal("a stamp without etcd is fresh")
	}
}

func TestBuildEnv(t *testing.T) {
	got := buildEnv([]string{"HOME=/h", "GOFLAGS=-race -mod=mod -cover -covermode=atomic -tags=x", "GOWORK=/w/go.work"})
	want := []string{"HOME=/h", "GOFLAGS=-mod=mod -tags=x", "GOWORK=off"}
	if !slices.Equal(got, want) {
		t.Fatalf("buildEnv = %q, want %q", got, want)
	}
	if got := stripFlags("--race=true -trimpath"); got != "-trimpath" {
		t.Errorf("stripFlags = %q, want -trimpath", got)
	}
}

func TestLdflagsStampTheVersion(t *testing.T) {
	f := ldflags("kube-apiserver")
	for _, want := range []string{"k8s.io/component-base/version.gitVersion=" + KubeVersion, "gitMinor=36", "-s", "-w"} {
		if !strings.Contains(f, want) {
			t.Errorf("ldflags %q lack %q", f, want)
		}
	}
	if strings.Contains(ldflags("etcd"), "gitVersion") {
		t.Error("etcd gets the API server's version flags")
	}
}

func TestRoot(t *testing.T) {
	root := fakeRoot(t)
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	got, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(root); got != root && got != want {
		t.Errorf("Root = %s, want %s", got, root)
	}
	t.Chdir(t.TempDir())
	if _, err := Root(); err == nil {
		t.Error("Root outside the module succeeded")
	}
}

func TestEnsureBinariesUsesKubebuilderAssets(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range tools {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	got, err := EnsureBinaries(context.Background(), nil)
	if err != nil || got != dir {
		t.Fatalf("EnsureBinaries = %s, %v; want %s", got, err, dir)
	}
}

func TestEnsureBinariesReusesAFreshCache(t *testing.T) {
	root := fakeRoot(t)
	t.Chdir(root)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	goVersion, err := goEnv(context.Background(), "GOVERSION")
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := Stamp(root, goVersion)
	if err != nil {
		t.Fatal(err)
	}
	dir := BinDir(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(stamp+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := EnsureBinaries(context.Background(), nil)
	if err != nil || got != dir {
		t.Fatalf("EnsureBinaries = %s, %v; want the cache %s without a build", got, err, dir)
	}
}

func TestEnsureBinariesReportsABuildFailure(t *testing.T) {
	root := fakeRoot(t) // the fake tool modules do not compile
	t.Chdir(root)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	var log strings.Builder
	_, err := EnsureBinaries(context.Background(), &log)
	if err == nil || !strings.Contains(err.Error(), "go build etcd") {
		t.Fatalf("err = %v, want a build error naming etcd", err)
	}
	if !strings.Contains(log.String(), "building etcd") {
		t.Errorf("log %q does not say what it builds", log.String())
	}
	if _, err := os.Stat(filepath.Join(BinDir(root), stampFile)); !os.IsNotExist(err) {
		t.Errorf("a failed build left a stamp (%v)", err)
	}
}

// tinyRoot is fakeRoot with tool modules that build (to an empty program).
func tinyRoot(t *testing.T) string {
	t.Helper()
	root := fakeRoot(t)
	for _, tool := range tools {
		dir := filepath.Join(root, "tools", "envtestbin", tool)
		files := map[string]string{
			"go.mod":  "module example.com/" + tool + "\n\ngo 1.22\n",
			"go.sum":  "",
			"main.go": "package main\n\nfunc main() {}\n",
		}
		for f, content := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// TestEnsureBinariesBuildsOnceAndRebuildsWhenStale: concurrent callers wait for one
// build; a changed tool module makes the cache stale and is rebuilt.
func TestEnsureBinariesBuildsOnceAndRebuildsWhenStale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two small programs")
	}
	root := tinyRoot(t)
	t.Chdir(root)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("GOFLAGS", "-race") // stripped for the build (see TestBuildEnv)
	var logs [3]strings.Builder
	errs := make(chan error, 3)
	for i := range logs {
		go func() {
			_, err := EnsureBinaries(context.Background(), &logs[i])
			errs <- err
		}()
	}
	for range logs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	builds := 0
	for i := range logs {
		builds += strings.Count(logs[i].String(), "building etcd")
	}
	if builds != 1 {
		t.Fatalf("etcd was built %d times by 3 concurrent callers, want once", builds)
	}
	if !hasTools(BinDir(root)) {
		t.Fatal("no binaries after the build")
	}

	main := filepath.Join(root, "tools", "envtestbin", "etcd", "main.go")
	if err := os.WriteFile(main, []byte("package main\n\nfunc main() { println() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := EnsureBinaries(context.Background(), &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "building etcd") {
		t.Errorf("a changed tool module did not rebuild: log %q", log.String())
	}
}
