package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SchedulerModule is the directory, relative to the examples module, of the module
// that builds kube-scheduler with kplan's RDMA plugin.
const SchedulerModule = "scheduler"

// schedulerBinary is the scheduler's file name in the cache directory.
const schedulerBinary = "kube-scheduler"

// schedulerStampFile holds the stamp of the cached scheduler binary.
const schedulerStampFile = "kube-scheduler.stamp"

// schedulerSources are the directories, relative to the repository root, whose Go
// sources, go.mod and go.sum the scheduler binary is built from: the scheduler
// module itself and the library it embeds (the rdma package and the internal
// packages it imports, with the library's go.mod).
var schedulerSources = []string{"examples/" + SchedulerModule, "rdma", "internal"}

// SchedulerStamp returns the hash that identifies the scheduler binary built from the
// repository at repoRoot with goVersion: every non-test .go file, go.mod and go.sum
// under the scheduler module, the rdma and internal packages, the library's go.mod
// and go.sum, the link flags and the Go version. Any change to the plugin or to rdma
// changes it.
func SchedulerStamp(repoRoot, goVersion string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "go %s\nldflags %q\n", goVersion, ldflags(schedulerBinary))
	files := []string{"go.mod", "go.sum"}
	for _, dir := range schedulerSources {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || (strings.HasPrefix(name, ".") && p != filepath.Join(repoRoot, dir)) {
					return filepath.SkipDir
				}
				return nil
			}
			if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || name == "go.mod" || name == "go.sum" {
				rel, err := filepath.Rel(repoRoot, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// EnsureScheduler returns the path of the kube-scheduler binary with kplan's RDMA
// plugin, built into the cache directory (examples/.envtest/bin) when it is missing
// or its stamp (see SchedulerStamp) differs. Build progress is written to log (nil:
// discarded). Unlike the API server, it is never taken from KUBEBUILDER_ASSETS: the
// binary must match the plugin's sources.
func EnsureScheduler(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	goVersion, err := goEnv(ctx, "GOVERSION")
	if err != nil {
		return "", err
	}
	stamp, err := SchedulerStamp(filepath.Dir(root), goVersion)
	if err != nil {
		return "", err
	}
	dir := BinDir(root)
	bin := filepath.Join(dir, schedulerBinary)
	err = buildCached(dir, schedulerStampFile, stamp, []string{schedulerBinary}, func() error {
		start := time.Now()
		fmt.Fprintf(log, "testenv: building %s into %s\n", schedulerBinary, dir)
		if err := buildModule(ctx, filepath.Join(root, SchedulerModule), dir, schedulerBinary); err != nil {
			return err
		}
		fmt.Fprintf(log, "testenv: built %s in %s\n", schedulerBinary, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		return "", err
	}
	return bin, nil
}
