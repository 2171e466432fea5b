package operator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/rdma"
)

// The environment every test shares: one API server and etcd, an administrator client
// for the tests, and the operator running as its ServiceAccount with only the RBAC of
// config/rbac.
var (
	env      *testenv.Env
	scheme   *runtime.Scheme
	admin    client.Client
	operCfg  *rest.Config // the operator's identity: the ServiceAccount, impersonated
	mgrMu    sync.Mutex
	mgrStop  context.CancelFunc
	mgrDone  chan error
	nsSerial int
)

const (
	operatorNamespace = "kplan-system"
	operatorSA        = "kplan-operator"
)

func TestMain(m *testing.M) {
	if os.Getenv(runAgentEnv) != "" {
		// Re-executed by a reload test: be the reload agent (see agent_test.go).
		os.Exit(runAgent())
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "operator integration tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	// Reconcile errors (conflicts, a broken group) are part of the scenarios: log only
	// when asked to.
	// The operator's log goes to logs (where a test reads it, see logs_test.go),
	// and to stderr too with KPLAN_TEST_VERBOSE.
	var next logr.LogSink
	if os.Getenv("KPLAN_TEST_VERBOSE") != "" {
		next = zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)).GetSink()
	}
	ctrl.SetLogger(logr.New(logs.sink(next)))
	ctx := context.Background()
	var err error
	if scheme, err = operator.NewScheme(); err != nil {
		return 0, err
	}
	certDir, err := os.MkdirTemp("", "kplan-operator-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(certDir)
	if webhookClient, err = newWebhookClientAuth(certDir); err != nil {
		return 0, err
	}
	env, err = testenv.Start(ctx, testenv.Options{
		CRDDirectoryPaths: []string{"config/crd", "operator/testdata/crd"},
		// The sample's webhook sends LeaderWorkerSet pods to the operator too.
		WebhookPaths: []string{"config/webhook", "config/samples/ranktable-owners.yaml"},
		APIServerArgs: map[string][]string{
			// The API server presents config/apiserver's client certificate to the webhook.
			"admission-control-config-file": {webhookClient.admissionConfig},
			// Owner references with blockOwnerDeletion need update on the owner's
			// finalizers subresource, as in clusters that enable it.
			"enable-admission-plugins": {"OwnerReferencesPermissionEnforcement"},
		},
	})
	if err != nil {
		return 0, err
	}
	defer env.Stop()
	// The webhook server trusts only the CA of the API server's client certificate.
	if err := os.WriteFile(filepath.Join(env.Webhook.LocalServingCertDir, webhookClientCAName), webhookClient.caPEM, 0o600); err != nil {
		return 0, err
	}
	if admin, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	operCfg = rest.CopyConfig(env.Config)
	operCfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + operatorNamespace + ":" + operatorSA,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}
	if err := setupCluster(ctx); err != nil {
		return 0, err
	}
	if err := startManager(nil); err != nil {
		return 0, err
	}
	code := m.Run()
	if err := stopManager(); err != nil && code == 0 {
		return 0, err
	}
	return code, nil
}

// setupCluster creates the namespaces, applies config/rbac (the operator's roles and
// the admission policies) and loads the ranktable template library into the
// templates namespace.
func setupCluster(ctx context.Context) error {
	for _, ns := range []string{operatorNamespace, ranktable.DefaultTemplateNamespace} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	if err := applyManifests(ctx, filepath.Join("..", "config", "rbac")); err != nil {
		return err
	}
	// The sample's ClusterRole for the foreign owner kinds (its webhook
	// configuration is installed by the environment).
	if err := applyManifests(ctx, filepath.Join("..", "config", "samples", "ranktable-owners.yaml"), "ClusterRole", "ClusterRoleBinding"); err != nil {
		return err
	}
	if err := waitPoliciesActive(ctx); err != nil {
		return err
	}
	for _, cm := range ranktable.LibraryConfigMaps() {
		if err := admin.Create(ctx, cm); err != nil {
			return err
		}
	}
	return nil
}

// applyManifests creates every object of the YAML files at path (a file or a
// directory), or with kinds only the objects of those kinds.
func applyManifests(ctx context.Context, path string, kinds ...string) error {
	files := []string{path}
	if entries, err := os.ReadDir(path); err == nil {
		files = files[:0]
		for _, e := range entries {
			if filepath.Ext(e.Name()) == ".yaml" {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if len(kinds) > 0 && !slices.Contains(kinds, o.GetObjectKind().GroupVersionKind().Kind) {
				continue
			}
			if err := admin.Create(ctx, o); err != nil {
				return fmt.Errorf("applying %s: %s %s: %w", f, o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
			}
		}
	}
	return nil
}

// readManifests decodes the YAML documents of a file.
func readManifests(path string) ([]client.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []client.Object
	for {
		var u struct {
			metav1.TypeMeta `json:",inline"`
		}
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw.Raw) == 0 {
			continue
		}
		if err := utilyaml.Unmarshal(raw.Raw, &u); err != nil {
			return nil, err
		}
		if u.Kind == "" {
			return nil, fmt.Errorf("%s: a document without a kind", path)
		}
		o := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(raw.Raw, &o.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, o)
	}
}

// managerOptions lets a test wrap the operator's client (to inject a concurrent
// writer) or its HTTP transport (to see its requests), set the ranktable timeout
// or the owner kinds.
type managerOptions struct {
	wrap      func(client.Client) client.Client
	transport func(http.RoundTripper) http.RoundTripper
	timeout   time.Duration
	rdma      *rdma.CapacityModel
	owners    []owners.Preset
}

// startManager starts the operator (both controllers and the webhook) as its
// ServiceAccount.
func startManager(o *managerOptions) error {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if o == nil {
		o = &managerOptions{}
	}
	wh := env.Webhook
	srv, err := operator.NewWebhookServer(webhook.Options{
		Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		ClientCAName: webhookClientCAName,
	})
	if err != nil {
		return err
	}
	opts := ctrl.Options{
		Scheme:        scheme,
		Cache:         operator.CacheOptions(operator.Options{}),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: srv,
		Controller:    ctrlConfig(),
	}
	if o.wrap != nil {
		opts.NewClient = func(cfg *rest.Config, co client.Options) (client.Client, error) {
			c, err := client.New(cfg, co)
			if err != nil {
				return nil, err
			}
			return o.wrap(c), nil
		}
	}
	cfg := operCfg
	if o.transport != nil {
		cfg = rest.CopyConfig(operCfg)
		cfg.Wrap(o.transport)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	if err := operator.Setup(mgr, operator.Options{RanktableTimeout: o.timeout, NodeRDMACapacity: o.rdma, RanktableOwners: o.owners}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Wait until the webhook answers, so pods created next are mutated.
	if err := waitFor(30*time.Second, func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }); err != nil {
		cancel()
		return fmt.Errorf("webhook server did not start: %w", err)
	}
	mgrStop, mgrDone = cancel, done
	return nil
}

// stopManager stops the running operator and waits for it.
func stopManager() error {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if mgrStop == nil {
		return nil
	}
	mgrStop()
	err := <-mgrDone
	mgrStop, mgrDone = nil, nil
	return err
}

// restartManager stops the operator and starts a new one with o.
func restartManager(t *testing.T, o *managerOptions) {
	t.Helper()
	if err := stopManager(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	if err := startManager(o); err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
}

// newNamespace creates a namespace for one test, opted in to ConfigMapSet
// injection (labels adds labels, or removes one with the value "-").
func newNamespace(t *testing.T, labels ...string) string {
	t.Helper()
	mgrMu.Lock()
	nsSerial++
	name := fmt.Sprintf("t%d", nsSerial)
	mgrMu.Unlock()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{podwebhook.LabelNamespaceInjection: "enabled"}}}
	for i := 0; i+1 < len(labels); i += 2 {
		if labels[i+1] == "-" {
			delete(ns.Labels, labels[i])
		} else {
			ns.Labels[labels[i]] = labels[i+1]
		}
	}
	if err := admin.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// operClient returns a client acting as the operator's ServiceAccount.
func operClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(operCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls f until it returns nil or the timeout passes, and returns its last
// error.
func waitFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually fails the test when f does not succeed within 30 seconds.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := waitFor(30*time.Second, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ctrlConfig lets a restarted operator register its controllers under the same names
// (controller-runtime refuses duplicate names within one process otherwise).
func ctrlConfig() config.Controller {
	skip := true
	return config.Controller{SkipNameValidation: &skip}
}
