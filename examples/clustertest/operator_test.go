package clustertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/ranktable"
)

// operatorEnv installs what kplan's operator needs beside LWS: its CRDs (the
// operator runs its ModelServing and ConfigMapSet controllers too) and its pod
// webhook for LeaderWorkerSet pods, as config/samples/ranktable-owners.yaml
// configures it (envtest points its clientConfig at the test's operator).
var operatorEnv = testenv.Options{
	CRDDirectoryPaths: []string{"config/crd"},
	WebhookPaths:      []string{"config/samples/ranktable-owners.yaml"},
	// Owner references with blockOwnerDeletion (the rank tables') need update on
	// the owner's finalizers subresource, as in clusters that enable it.
	APIServerArgs: map[string][]string{"enable-admission-plugins": {"OwnerReferencesPermissionEnforcement"}},
}

// startOperator runs kplan's operator in-process beside the LWS controller, as its
// ServiceAccount with config/rbac's ClusterRole and the sample's for the owner
// kinds, configured as --ranktable-owner=leaderworkerset
// --ranktable-owner=disaggregatedset configures it, with the ranktable template
// library in the templates namespace; it returns once the webhook answers.
func startOperator(ctx context.Context) (func(), error) {
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ranktable.DefaultTemplateNamespace}}); err != nil {
		return nil, err
	}
	for _, cm := range ranktable.LibraryConfigMaps() {
		cm.Namespace = ranktable.DefaultTemplateNamespace
		if err := cluster.Client.Create(ctx, cm); err != nil {
			return nil, err
		}
	}
	// The operator runs as its ServiceAccount, with config/rbac's role and the
	// sample's for the owner kinds.
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kplan-system"}}); err != nil {
		return nil, err
	}
	for _, f := range []string{"../config/rbac/role.yaml", "../config/samples/ranktable-owners.yaml"} {
		if err := createRBAC(ctx, f); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:kplan-system:kplan-operator",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kplan-system", "system:authenticated"},
	}
	// The operator's reads of LeaderWorkerSets are counted (lwsReads).
	cfg.Wrap(lwsReads.Wrap)
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	wh := cluster.Env.Webhook
	srv, err := operator.NewWebhookServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir})
	if err != nil {
		return nil, err
	}
	opts := operator.Options{RanktableOwners: []owners.Preset{owners.LeaderWorkerSet, owners.DisaggregatedSet}}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme,
		Cache:         operator.CacheOptions(opts),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: srv,
	})
	if err != nil {
		return nil, err
	}
	if err := operator.Setup(mgr, opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("the operator's webhook server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	}, nil
}

// createRBAC creates the RBAC objects and ServiceAccounts of a manifest file.
func createRBAC(ctx context.Context, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", file, err)
		}
		if u.Object == nil || (u.GetKind() != "ServiceAccount" && !strings.HasPrefix(u.GetAPIVersion(), "rbac.authorization.k8s.io/")) {
			continue
		}
		if err := cluster.Client.Create(ctx, &u); err != nil {
			return fmt.Errorf("%s: %s %s: %w", file, u.GetKind(), u.GetName(), err)
		}
	}
}

// lwsReads counts the GETs and LISTs of LeaderWorkerSets the operator sends to the
// API server (not its watches): it reads them from its cache.
var lwsReads = &testenv.ResourceReads{Resource: "leaderworkersets"}
