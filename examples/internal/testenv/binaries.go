package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KubeVersion is the Kubernetes version the kube-apiserver tool module builds; it is
// stamped into the binary so the API server reports it.
const KubeVersion = "v1.36.3"

// examplesModule is the module path that marks the examples directory.
const examplesModule = "github.com/kplan-dev/kplan/examples"

// tools are the binaries envtest needs, each built from the tool module of that name
// under tools/envtestbin.
var tools = []string{"etcd", "kube-apiserver"}

// ldflags returns the linker flags for a tool: no symbol tables, and for the API
// server, the scheduler, the controller manager and the LWS controller the version
// fields they report (a build outside the Kubernetes repository would otherwise
// report v0.0.0).
func ldflags(tool string) string {
	flags := []string{"-s", "-w"}
	if tool == lwsBinary {
		flags = append(flags, lwsLDFlags()...)
	}
	if tool == "kube-apiserver" || tool == schedulerBinary || tool == controllerManagerBinary {
		minor := strings.Split(KubeVersion, ".")[1]
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			flags = append(flags,
				"-X", pkg+".gitVersion="+KubeVersion,
				"-X", pkg+".gitMajor=1",
				"-X", pkg+".gitMinor="+minor,
				"-X", pkg+".gitTreeState=clean",
				"-X", pkg+".buildDate=1970-01-01T00:00:00Z")
		}
	}
	return strings.Join(flags, " ")
}

// Root returns the examples module's directory: the nearest directory at or above
// the working directory whose go.mod declares the examples module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && string(firstModuleLine(b)) == "module "+examplesModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testenv: no go.mod of module %s at or above the working directory", examplesModule)
		}
		dir = parent
	}
}

// firstModuleLine returns the go.mod line that starts with "module ".
func firstModuleLine(gomod []byte) []byte {
	for _, line := range bytes.Split(gomod, []byte("\n")) {
		if t := bytes.TrimSpace(line); bytes.HasPrefix(t, []byte("module ")) {
			return t
		}
	}
	return nil
}

// Stamp returns the hash that identifies the binaries the tool modules under root
// build with goVersion: it covers each module's go.mod, go.sum and main.go, the link
// flags and the Go version.
func Stamp(root, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", goVersion)
	for _, tool := range tools {
		fmt.Fprintf(h, "tool %s ldflags %q\n", tool, ldflags(tool))
		for _, f := range []string{"go.mod", "go.sum", "main.go"} {
			b, err := os.ReadFile(filepath.Join(root, "tools", "envtestbin", tool, f))
			if err != nil {
				return "", fmt.Errorf("testenv: %w", err)
			}
			fmt.Fprintf(h, "%s/%s %d\n", tool, f, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BinDir returns the cache directory of the binaries: examples/.envtest/bin.
func BinDir(root string) string { return filepath.Join(root, ".envtest", "bin") }

// stampFile holds the stamp of the binaries in the cache directory.
const stampFile = "stamp"

// EnsureBinaries returns a directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS
// when it holds both, else the cache, built first when it is missing or stale. Build
// progress is written to log (nil: discarded).
func EnsureBinaries(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" && hasTools(dir) {
		return dir, nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	goVersion, err := goEnv(ctx, "GOVERSION")
	if err != nil {
		return "", err
	}
	stamp, err := Stamp(root, goVersion)
	if err != nil {
		return "", err
	}
	dir := BinDir(root)
	err = buildCached(dir, stampFile, stamp, tools, func() error {
		for _, tool := range tools {
			start := time.Now()
			fmt.Fprintf(log, "testenv: building %s into %s (the first build takes minutes)\n", tool, dir)
			if err := buildModule(ctx, filepath.Join(root, "tools", "envtestbin", tool), dir, tool); err != nil {
				return err
			}
			fmt.Fprintf(log, "testenv: built %s in %s\n", tool, time.Since(start).Round(time.Second))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// buildCached runs build unless dir holds every binary of bins and the file
// stampFile in dir says stamp, then writes the stamp. A file lock in dir makes
// concurrent callers wait for one build instead of building twice; the stamp is
// removed before building, so an interrupted build is never taken as fresh.
func buildCached(dir, stampFile, stamp string, bins []string, build func() error) error {
	if fresh(dir, stampFile, stamp, bins) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	unlock, err := lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return fmt.Errorf("testenv: lock %s: %w", dir, err)
	}
	defer unlock()
	if fresh(dir, stampFile, stamp, bins) { // another process built them while we waited
		return nil
	}
	_ = os.Remove(filepath.Join(dir, stampFile))
	if err := build(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(stamp+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// fresh reports whether dir holds every binary of bins and its stampFile says stamp.
func fresh(dir, stampFile, stamp string, bins []string) bool {
	b, err := os.ReadFile(filepath.Join(dir, stampFile))
	return err == nil && strings.TrimSpace(string(b)) == stamp && hasBinaries(dir, bins)
}

// hasTools reports whether dir holds every envtest binary.
func hasTools(dir string) bool { return hasBinaries(dir, tools) }

// hasBinaries reports whether dir holds a file for each of bins.
func hasBinaries(dir string, bins []string) bool {
	for _, b := range bins {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

// buildModule builds the main package of the module in moduleDir into dir/tool,
// through a temporary file so a failed or interrupted build never leaves a partial
// binary.
func buildModule(ctx context.Context, moduleDir, dir, tool string) error {
	return buildPackage(ctx, moduleDir, ".", dir, tool)
}

// buildPackage builds the main package pkg (".": the module's own; or a package of
// a module it requires) within the module in moduleDir into dir/tool, through a
// temporary file so a failed or interrupted build never leaves a partial binary.
func buildPackage(ctx context.Context, moduleDir, pkg, dir, tool string) error {
	tmp := filepath.Join(dir, "."+tool+".tmp")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags(tool), "-o", tmp, pkg)
	cmd.Dir = moduleDir
	cmd.Env = buildEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("testenv: go build %s: %w\n%s", tool, err, out.String())
	}
	if err := os.Rename(tmp, filepath.Join(dir, tool)); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// buildEnv returns env for building the tools: -race and -cover are dropped from
// GOFLAGS (CI runs the tests with GOFLAGS=-race; a race-enabled API server would be
// slower to build and to run and proves nothing about our code), and the tool module
// is built on its own, outside any workspace.
func buildEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK":
			continue
		case "GOFLAGS":
			kv = "GOFLAGS=" + stripFlags(v)
		}
		out = append(out, kv)
	}
	return append(out, "GOWORK=off")
}

// stripFlags removes the race detector and coverage flags from a GOFLAGS value.
func stripFlags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch name {
		case "race", "cover", "covermode", "coverpkg", "msan", "asan":
			continue
		}
		keep = append(keep, f)
	}
	return strings.Join(keep, " ")
}

// goEnv returns `go env key`.
func goEnv(ctx context.Context, key string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", key).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("testenv: go env %s: %w: %s", key, err, ee.Stderr)
		}
		return "", fmt.Errorf("testenv: go env %s: %w (is Go on PATH?)", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}
