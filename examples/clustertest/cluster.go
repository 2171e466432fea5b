// Package clustertest runs a small Kubernetes cluster of real components for the
// examples' integration tests: envtest's kube-apiserver and etcd,
// kube-controller-manager (the StatefulSet and garbage collector controllers), and
// the LeaderWorkerSet controller with its CRDs (LeaderWorkerSet, DisaggregatedSet)
// and admission webhooks. Tests play the kubelet with testenv.StartKubelet. A test
// may run kube-scheduler with kplan's RDMA plugin beside the cluster
// (examples/internal/schedharness): its pods name the scheduler's profile, and its
// kubelets run with KubeletOptions.NoBind so that the scheduler binds them.
//
// All binaries are built from Go modules and cached (see examples/DEVELOPERS.md);
// Start builds what is missing. Other test packages start the operator beside the
// cluster: Options.Env carries their CRDs, webhook configurations and API server
// flags, and Cluster.Env.Webhook says where their webhook server must listen.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// The LeaderWorkerSet and DisaggregatedSet kinds the LWS controller serves.
var (
	LeaderWorkerSetGVK  = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
	DisaggregatedSetGVK = schema.GroupVersionKind{Group: "disaggregatedset.x-k8s.io", Version: "v1", Kind: "DisaggregatedSet"}
)

// Labels the LWS controller and its pod webhook set on the pods and StatefulSets
// of a LeaderWorkerSet, and the DisaggregatedSet controller on its LeaderWorkerSets.
const (
	// LabelName is the LeaderWorkerSet's name.
	LabelName = "leaderworkerset.sigs.k8s.io/name"
	// LabelGroupIndex is the group (replica) index, from 0.
	LabelGroupIndex = "leaderworkerset.sigs.k8s.io/group-index"
	// LabelWorkerIndex is the pod's index in its group: 0 for the leader.
	LabelWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
	// LabelGroupKey is a hash unique to the group.
	LabelGroupKey = "leaderworkerset.sigs.k8s.io/group-key"
	// LabelTemplateRevisionHash is the revision of the template the pod was made from.
	LabelTemplateRevisionHash = "leaderworkerset.sigs.k8s.io/template-revision-hash"
	// LabelDisaggregatedSetName is the DisaggregatedSet owning a LeaderWorkerSet.
	LabelDisaggregatedSetName = "disaggregatedset.x-k8s.io/name"
	// LabelDisaggregatedSetRole is the role of the DisaggregatedSet a LeaderWorkerSet runs.
	LabelDisaggregatedSetRole = "disaggregatedset.x-k8s.io/role"
	// LabelDisaggregatedSetRevision is the DisaggregatedSet revision a LeaderWorkerSet runs.
	LabelDisaggregatedSetRevision = "disaggregatedset.x-k8s.io/revision"
)

// DefaultControllers are the kube-controller-manager controllers Start runs when
// Options.Controllers is empty: LWS creates StatefulSets, whose controller creates
// the pods, and deleting a LeaderWorkerSet relies on the garbage collector.
var DefaultControllers = []string{"statefulset-controller", "garbage-collector-controller"}

// Options configure Start.
type Options struct {
	// Env configures the API server for the caller's own components: their CRDs,
	// webhook configurations (served at Cluster.Env.Webhook) and API server flags.
	// The LWS CRDs and webhooks are installed besides.
	Env testenv.Options
	// Controllers are the kube-controller-manager controllers to run (default
	// DefaultControllers).
	Controllers []string
	// Log receives build progress and, when Verbose, the components' logs (nil:
	// os.Stderr).
	Log io.Writer
	// Verbose copies the controller manager's and the LWS controller's logs to Log
	// as they are written; they are always kept in files (Process.Tail).
	Verbose bool
}

// Cluster is a running API server and etcd with kube-controller-manager and the
// LWS controller.
type Cluster struct {
	// Env is the API server and etcd; Env.Webhook is where the caller's webhook
	// server (Options.Env.WebhookPaths) must listen.
	Env *testenv.Env
	// Config connects as an administrator.
	Config *rest.Config
	// Client is an administrator's client reading from the API server (no cache),
	// with the built-in kinds; LWS objects are unstructured.Unstructured.
	Client client.Client
	// LWSSource is the sigs.k8s.io/lws module directory the CRDs and webhook
	// configurations were read from.
	LWSSource string
	// ControllerManager and LWS are the running processes.
	ControllerManager, LWS *Process

	dir      string
	lwsHooks *envtest.WebhookInstallOptions
}

// Start builds what is missing (see testenv.EnsureBinaries,
// EnsureControllerManager and EnsureLWS), starts etcd and kube-apiserver with the
// LWS CRDs and the caller's, kube-controller-manager and the LWS controller, and
// returns once LWS's webhooks answer. Stop it with Cluster.Stop.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	kcmBin, err := testenv.EnsureControllerManager(ctx, log)
	if err != nil {
		return nil, err
	}
	lwsBin, err := testenv.EnsureLWS(ctx, log)
	if err != nil {
		return nil, err
	}
	src, err := testenv.LWSSourceDir(ctx)
	if err != nil {
		return nil, err
	}
	mutating, validating, err := lwsWebhooks(src)
	if err != nil {
		return nil, err
	}
	envOpts := opts.Env
	envOpts.CRDDirectoryPaths = append(slices.Clone(envOpts.CRDDirectoryPaths), filepath.Join(src, "config", "crd", "bases"))
	if envOpts.Log == nil {
		envOpts.Log = log
	}
	dir, err := os.MkdirTemp("", "kplan-clustertest-")
	if err != nil {
		return nil, err
	}
	cl := &Cluster{LWSSource: src, dir: dir}
	c = cl
	defer func() {
		if err != nil {
			_ = cl.Stop() // c is nil when Start fails
		}
	}()
	if c.Env, err = testenv.Start(ctx, envOpts); err != nil {
		return nil, err
	}
	c.Config = c.Env.Config
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	// LWS's webhooks get a server of their own (port and certificate), apart from
	// the caller's at Env.Webhook.
	lwsHooks := &envtest.WebhookInstallOptions{MutatingWebhooks: mutating, ValidatingWebhooks: validating}
	c.lwsHooks = lwsHooks
	if err := lwsHooks.Install(c.Config); err != nil {
		return nil, fmt.Errorf("clustertest: install the LWS webhook configurations: %w", err)
	}
	copyTo := io.Discard
	if opts.Verbose {
		copyTo = log
	}
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	kcmConfig, err := c.kubeconfig("kube-controller-manager", envtest.User{Name: "clustertest:kube-controller-manager", Groups: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	if c.ControllerManager, err = startProcess(filepath.Join(dir, "kube-controller-manager.log"), copyTo, kcmBin, nil,
		"--kubeconfig="+kcmConfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-statefulset-syncs=10",
		"-v=2"); err != nil {
		return nil, err
	}
	lwsConfig, err := c.kubeconfig("lws", envtest.User{Name: "clustertest:lws-controller", Groups: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	cfgFile, err := lwsConfiguration(dir, lwsHooks)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "KUBECONFIG="+lwsConfig)
	if c.LWS, err = startProcess(filepath.Join(dir, "lws-controller.log"), copyTo, lwsBin, env,
		"--config="+cfgFile, "--zap-devel=false", "--zap-log-level=info"); err != nil {
		return nil, err
	}
	if err := c.waitForLWS(ctx, net.JoinHostPort(lwsHooks.LocalServingHost, strconv.Itoa(lwsHooks.LocalServingPort))); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop stops the controllers, the API server and etcd, and removes the cluster's
// files. It may be called more than once.
func (c *Cluster) Stop() error {
	var errs []error
	for _, p := range []*Process{c.LWS, c.ControllerManager} {
		if p != nil {
			p.Stop()
		}
	}
	if c.Env != nil {
		errs = append(errs, c.Env.Stop())
		c.Env = nil
	}
	if c.lwsHooks != nil {
		errs = append(errs, c.lwsHooks.Cleanup()) // its certificate directory
		c.lwsHooks = nil
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// Logs returns the last n lines of the controller manager's and the LWS
// controller's logs, each under a header: what to print when a test fails.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, p := range []*Process{c.ControllerManager, c.LWS} {
		if p != nil {
			fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", filepath.Base(p.Path), n, p.Tail(n))
		}
	}
	return b.String()
}

// kubeconfig writes a kubeconfig file for a new user of the API server.
func (c *Cluster) kubeconfig(name string, user envtest.User) (string, error) {
	u, err := c.Env.Environment().ControlPlane.AddUser(user, nil)
	if err != nil {
		return "", fmt.Errorf("clustertest: add user %s: %w", user.Name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	p := filepath.Join(c.dir, name+".kubeconfig")
	return p, os.WriteFile(p, b, 0o600)
}

// CreateNamespace creates a namespace named from prefix (generateName) and returns
// its name.
func (c *Cluster) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("clustertest: create namespace %s-: %w", prefix, err)
	}
	return ns.Name, nil
}
