package testenv

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options configure Start.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CRD manifests to install,
	// relative to the examples module's directory (or absolute).
	CRDDirectoryPaths []string
	// WebhookPaths are directories (or files) of webhook configuration manifests,
	// relative to the examples module's directory (or absolute). envtest points them at a local
	// webhook server (see Env.Webhook).
	WebhookPaths []string
	// APIServerArgs are extra kube-apiserver flags (name without dashes, values), set
	// on top of envtest's; for example "enable-admission-plugins" or
	// "admission-control-config-file".
	APIServerArgs map[string][]string
	// Log receives build progress (nil: os.Stderr).
	Log io.Writer
}

// Env is a running API server and etcd.
type Env struct {
	// Config connects to the API server as an administrator.
	Config *rest.Config
	// Webhook holds where the webhook server must listen (host, port, cert dir).
	Webhook *envtest.WebhookInstallOptions
	env     *envtest.Environment
}

// Start builds the binaries if needed (see EnsureBinaries), starts etcd and
// kube-apiserver and installs the CRDs and webhook configurations. Stop it with
// Env.Stop.
func Start(ctx context.Context, opts Options) (*Env, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	dir, err := EnsureBinaries(ctx, log)
	if err != nil {
		return nil, err
	}
	// envtest reads KUBEBUILDER_ASSETS before BinaryAssetsDirectory; point both at dir.
	if err := os.Setenv("KUBEBUILDER_ASSETS", dir); err != nil {
		return nil, err
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	abs := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			out[i] = p
		}
		return out
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              abs(opts.CRDDirectoryPaths),
			ErrorIfPathMissing: true,
		},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: abs(opts.WebhookPaths),
		},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	args := te.ControlPlane.GetAPIServer().Configure()
	for _, name := range slices.Sorted(maps.Keys(opts.APIServerArgs)) {
		args.Set(name, opts.APIServerArgs[name]...)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("testenv: start envtest with binaries in %s: %w", dir, err)
	}
	return &Env{Config: cfg, Webhook: &te.WebhookInstallOptions, env: te}, nil
}

// Stop stops the API server and etcd and removes their temporary files.
func (e *Env) Stop() error { return e.env.Stop() }

// Environment returns the underlying envtest environment.
func (e *Env) Environment() *envtest.Environment { return e.env }
