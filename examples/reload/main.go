package reload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// Main runs the agent as a command: configuration from the environment
// (ConfigFromEnv), flags -poll, -proc and -kubeconfig (default: $KUBECONFIG, else the
// in-cluster configuration), logs to stderr. It returns the exit code: 0 when the
// sidecar must restart (ErrRestart) or ctx ended, 1 on a configuration error.
func Main(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("configmapset-reload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	poll := fs.Duration("poll", 0, "how often the pod is read (default 2s)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else in-cluster)")
	proc := fs.String("proc", DefaultProcRoot, "the proc file system showing the pod's processes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := ConfigFromEnv(getenv)
	cfg.Poll, cfg.ProcRoot = *poll, *proc
	fail := func(err error) int {
		fmt.Fprintln(stderr, "configmapset-reload:", err)
		return 1
	}
	path := *kubeconfig
	if path == "" {
		path = getenv("KUBECONFIG")
	}
	var restCfg *rest.Config
	var err error
	if path != "" {
		restCfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		restCfg, err = config.GetConfig()
	}
	if err != nil {
		return fail(err)
	}
	core, err := corev1client.NewForConfig(restCfg)
	if err != nil {
		return fail(err)
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fail(err)
	}
	a := &Agent{Config: cfg, Core: core, Dynamic: dyn, Log: stderr}
	switch err := a.Run(ctx); {
	case errors.Is(err, ErrRestart):
		fmt.Fprintln(stderr, "configmapset-reload: exiting:", err)
		return 0
	case err != nil:
		return fail(err)
	}
	return 0
}
