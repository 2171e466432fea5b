package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ControllerManagerModule is the directory, relative to the examples module, of the
// tool module that builds kube-controller-manager (same Kubernetes version, replace
// block and dependency versions as the kube-apiserver module, so it builds from the
// API server's build cache).
const ControllerManagerModule = "tools/envtestbin/kube-controller-manager"

// LWSModule is the directory, relative to the examples module, of the tool module
// that builds the LeaderWorkerSet controller (sigs.k8s.io/lws's cmd package) at the
// versions LWS requires.
const LWSModule = "tools/lws"

// LWSVersion is the sigs.k8s.io/lws version the LWS tool module requires; it is
// stamped into the binary, and the CRDs and webhook configurations are read from
// that version's module.
const LWSVersion = "v0.9.0"

// lwsPackage is the main package of the LWS controller.
const lwsPackage = "sigs.k8s.io/lws/cmd"

// Cached binaries beside kube-apiserver and etcd, each with its own stamp file.
const (
	controllerManagerBinary = "kube-controller-manager"
	lwsBinary               = "lws-controller"
)

// cachedTool is a binary built from a tool module into the cache directory.
type cachedTool struct {
	binary string   // file name in the cache directory; its stamp is binary+".stamp"
	module string   // tool module directory, relative to the examples module
	pkg    string   // package to build, "." for the module's own main package
	files  []string // files of the module the stamp covers
}

var (
	controllerManagerTool = cachedTool{binary: controllerManagerBinary, module: ControllerManagerModule, pkg: ".",
		files: []string{"go.mod", "go.sum", "main.go"}}
	lwsTool = cachedTool{binary: lwsBinary, module: LWSModule, pkg: lwsPackage,
		files: []string{"go.mod", "go.sum"}}
)

// toolStamp returns the hash that identifies t's binary built from the examples
// module at root with goVersion: the module's files, the package, the link flags
// and the Go version.
func toolStamp(root, goVersion string, t cachedTool) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "go %s\npackage %s\nldflags %q\n", goVersion, t.pkg, ldflags(t.binary))
	for _, f := range t.files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(t.module), f))
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ensureTool returns the path of t's binary in the cache directory, built first
// when it is missing or its stamp differs.
func ensureTool(ctx context.Context, log io.Writer, t cachedTool) (string, error) {
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
	stamp, err := toolStamp(root, goVersion, t)
	if err != nil {
		return "", err
	}
	dir := BinDir(root)
	err = buildCached(dir, t.binary+".stamp", stamp, []string{t.binary}, func() error {
		start := time.Now()
		fmt.Fprintf(log, "testenv: building %s into %s\n", t.binary, dir)
		if err := buildPackage(ctx, filepath.Join(root, filepath.FromSlash(t.module)), t.pkg, dir, t.binary); err != nil {
			return err
		}
		fmt.Fprintf(log, "testenv: built %s in %s\n", t.binary, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, t.binary), nil
}

// EnsureControllerManager returns the path of kube-controller-manager (Kubernetes
// KubeVersion), built into the cache directory (examples/.envtest/bin) when it is
// missing or its stamp (the tool module's go.mod, go.sum and main.go, the link
// flags and the Go version; file kube-controller-manager.stamp) differs. Build
// progress is written to log (nil: discarded). It is never taken from
// KUBEBUILDER_ASSETS (setup-envtest ships no controller manager).
func EnsureControllerManager(ctx context.Context, log io.Writer) (string, error) {
	return ensureTool(ctx, log, controllerManagerTool)
}

// EnsureLWS returns the path of the LeaderWorkerSet controller (LWSVersion), built
// into the cache directory as lws-controller when it is missing or its stamp (the
// LWS tool module's go.mod and go.sum, the link flags and the Go version; file
// lws-controller.stamp) differs. Build progress is written to log (nil: discarded).
func EnsureLWS(ctx context.Context, log io.Writer) (string, error) {
	return ensureTool(ctx, log, lwsTool)
}

// LWSSourceDir returns the directory of the sigs.k8s.io/lws module the LWS tool
// module requires, in the module cache (downloaded when missing): its config/
// directory holds the CRDs and webhook configurations of the binary EnsureLWS
// builds.
func LWSSourceDir(ctx context.Context) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/lws")
	cmd.Dir = filepath.Join(root, filepath.FromSlash(LWSModule))
	cmd.Env = buildEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("testenv: go mod download sigs.k8s.io/lws in %s: %w: %s%s", LWSModule, err, out, stderr)
	}
	var m struct{ Version, Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("testenv: go mod download sigs.k8s.io/lws: %w", err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("testenv: go mod download sigs.k8s.io/lws: %s", m.Error)
	}
	if m.Version != LWSVersion {
		return "", fmt.Errorf("testenv: %s requires sigs.k8s.io/lws %s, want LWSVersion %s", LWSModule, m.Version, LWSVersion)
	}
	return m.Dir, nil
}

// lwsLDFlags are the LWS controller's version fields.
func lwsLDFlags() []string {
	return []string{"-X", "sigs.k8s.io/lws/pkg/version.GitVersion=" + LWSVersion}
}
