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
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

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

// waitForLWS waits until the LWS controller's webhook server accepts TLS at addr
// and its LeaderWorkerSet and DisaggregatedSet webhooks admit a dry-run create
// (they are registered after the manager starts).
func (c *Cluster) waitForLWS(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.LWS.Done():
			return false, fmt.Errorf("clustertest: the LWS controller exited:\n%s", c.LWS.Tail(40))
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			last = err
			return false, nil
		}
		_ = conn.Close()
		for _, obj := range []*unstructured.Unstructured{probeLWS(), probeDisaggregatedSet()} {
			if err := c.Client.Create(ctx, obj, client.DryRunAll); err != nil {
				last = err
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("clustertest: waiting for the LWS webhooks at %s: %w (last: %v)\n%s", addr, err, last, c.LWS.Tail(40))
	}
	return nil
}

// probeLWS and probeDisaggregatedSet are objects the webhooks admit, created with
// dry run to see them answer.
func probeLWS() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "clustertest-probe", "namespace": metav1.NamespaceDefault},
		"spec": map[string]any{"replicas": int64(1), "leaderWorkerTemplate": map[string]any{
			"size": int64(1), "workerTemplate": podTemplate("probe"),
		}},
	}}
	u.SetGroupVersionKind(LeaderWorkerSetGVK)
	return u
}

func probeDisaggregatedSet() *unstructured.Unstructured {
	role := func(name string) map[string]any {
		return map[string]any{"name": name, "spec": map[string]any{"replicas": int64(1), "leaderWorkerTemplate": map[string]any{
			"size": int64(1), "workerTemplate": podTemplate("probe"),
		}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "clustertest-probe", "namespace": metav1.NamespaceDefault},
		"spec":     map[string]any{"roles": []any{role("prefill"), role("decode")}},
	}}
	u.SetGroupVersionKind(DisaggregatedSetGVK)
	return u
}

// podTemplate is a pod template of one container running image.
func podTemplate(image string) map[string]any {
	return map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "main", "image": image},
	}}}
}

// lwsConfiguration writes the LWS controller's configuration file: no leader
// election, no internal certificate management (envtest made the webhook
// certificate), the webhook server where the installed configurations point,
// and metrics and health probes off.
func lwsConfiguration(dir string, hooks *envtest.WebhookInstallOptions) (string, error) {
	cfg := map[string]any{
		"apiVersion":             "config.lws.x-k8s.io/v1alpha1",
		"kind":                   "Configuration",
		"leaderElection":         map[string]any{"leaderElect": false},
		"internalCertManagement": map[string]any{"enable": false},
		"webhook": map[string]any{
			"host":    hooks.LocalServingHost,
			"port":    hooks.LocalServingPort,
			"certDir": hooks.LocalServingCertDir,
		},
		"metrics": map[string]any{"bindAddress": "0"},
		"health":  map[string]any{"healthProbeBindAddress": "0"},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "lws-configuration.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// lwsWebhooks reads LWS's webhook configurations from its module's config/webhook
// directory as its kustomization builds them: manifests.yaml with the JSON patches
// of mutating-patch.yaml and validating-patch.yaml (the pod webhooks see only pods
// labeled with a LeaderWorkerSet name) and the name prefix "lws-" of
// config/default.
func lwsWebhooks(src string) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	dir := filepath.Join(src, "config", "webhook")
	b, err := os.ReadFile(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("clustertest: %w", err)
	}
	var mutating []*admissionv1.MutatingWebhookConfiguration
	var validating []*admissionv1.ValidatingWebhookConfiguration
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("clustertest: %s: %w", filepath.Join(dir, "manifests.yaml"), err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var m admissionv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &m); err != nil {
				return nil, nil, err
			}
			mutating = append(mutating, &m)
		case "ValidatingWebhookConfiguration":
			var v admissionv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &v); err != nil {
				return nil, nil, err
			}
			validating = append(validating, &v)
		case "":
		default:
			return nil, nil, fmt.Errorf("clustertest: %s: unexpected kind %q", filepath.Join(dir, "manifests.yaml"), meta.Kind)
		}
	}
	if len(mutating) != 1 || len(validating) != 1 {
		return nil, nil, fmt.Errorf("clustertest: %s: want one mutating and one validating configuration, have %d and %d", dir, len(mutating), len(validating))
	}
	if err := replaceWebhooks(filepath.Join(dir, "mutating-patch.yaml"), mutating[0].Webhooks); err != nil {
		return nil, nil, err
	}
	if err := replaceWebhooks(filepath.Join(dir, "validating-patch.yaml"), validating[0].Webhooks); err != nil {
		return nil, nil, err
	}
	mutating[0].Name = "lws-" + mutating[0].Name
	validating[0].Name = "lws-" + validating[0].Name
	return mutating, validating, nil
}

// replaceWebhooks applies a kustomize JSON patch file whose operations replace
// whole webhooks (path /webhooks/<i>) to hooks.
func replaceWebhooks[T any](file string, hooks []T) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("clustertest: %w", err)
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value T      `json:"value"`
	}
	if err := yaml.UnmarshalStrict(b, &ops); err != nil {
		return fmt.Errorf("clustertest: %s: %w", file, err)
	}
	for _, op := range ops {
		i, err := strconv.Atoi(strings.TrimPrefix(op.Path, "/webhooks/"))
		if op.Op != "replace" || !strings.HasPrefix(op.Path, "/webhooks/") || err != nil || i < 0 || i >= len(hooks) {
			return fmt.Errorf("clustertest: %s: unsupported operation %s %s", file, op.Op, op.Path)
		}
		hooks[i] = op.Value
	}
	return nil
}

// Process is a component running as a child process, its output in a log file.
type Process struct {
	// Path is the binary.
	Path string
	// Log is the file holding its output.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	err  error
}

// startProcess starts bin with args (and env, nil: the test's), its output written
// to the file logPath and copied to copyTo.
func startProcess(logPath string, copyTo io.Writer, bin string, env []string, args ...string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Process{Path: bin, Log: logPath, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	out := io.Writer(f)
	if copyTo != io.Discard {
		out = io.MultiWriter(f, copyTo)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("clustertest: start %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited (see exec.Cmd.Wait); nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop kills the process and waits for it to exit. It may be called more than once.
func (p *Process) Stop() {
	p.once.Do(func() { _ = p.cmd.Process.Signal(syscall.SIGKILL) })
	<-p.done
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
