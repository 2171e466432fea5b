// Command kplan-operator runs the example operator: the ModelServing, ranktable,
// ConfigMapSet and (optionally) node RDMA capacity controllers and the pod mutating
// webhook, as package operator wires them in one manager. See
// examples/DEVELOPERS.md for running it against a cluster with the manifests under
// examples/config.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/rdma"
)

func main() {
	var opts operator.Options
	metricsAddr := flag.String("metrics-bind-address", ":8443", "address the metrics endpoint binds to (HTTPS; callers need a token allowed get on /metrics); 0 turns it off")
	metricsCertDir := flag.String("metrics-cert-dir", "", "directory holding tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	probeAddr := flag.String("health-probe-bind-address", ":8081", "address the health probes bind to")
	webhookPort := flag.Int("webhook-port", 9443, "port the webhook server listens on")
	certDir := flag.String("webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory holding tls.crt and tls.key for the webhook server")
	clientCA := flag.String("webhook-client-ca", "", "file in --webhook-cert-dir holding the CA of the client certificate the API server presents to the webhook; callers without one are refused (empty: any caller is served)")
	var le leaderElection
	flag.BoolVar(&le.enabled, "leader-elect", true, "hold a Lease while reconciling, so that only one operator acts at a time (during an upgrade, or with several replicas)")
	flag.StringVar(&le.namespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's own namespace when it runs in a cluster)")
	flag.StringVar(&opts.TemplateNamespace, "template-namespace", ranktable.DefaultTemplateNamespace, "namespace of the ranktable template ConfigMaps")
	flag.DurationVar(&opts.RanktableTimeout, "ranktable-timeout", 0, "how long a ranktable group may wait for pod annotations (0: forever)")
	flag.StringVar(&opts.WaitImage, "wait-image", ranktable.DefaultWaitImage, "image of the ranktable wait init container")
	flag.DurationVar(&opts.WaitTimeout, "ranktable-wait-timeout", 0, "how long the ranktable wait init container waits before it fails (0: forever)")
	flag.StringVar(&opts.SidecarImage, "sidecar-image", operator.DefaultSidecarImage, "image of the ConfigMapSet reload sidecar")
	flag.Func("ranktable-owner", `an owner kind whose rank tables the operator keeps (repeatable): modelserving (the default), kthena, leaderworkerset, disaggregatedset, or group/version/Kind,owner-label=L[,group-label=L,role-label=L,order=podindex,...] (see examples/operator/OWNERS.md)`, func(v string) error {
		p, err := owners.Parse(v)
		if err == nil {
			opts.RanktableOwners = append(opts.RanktableOwners, p)
		}
		return err
	})
	rdmaModel := flag.String("node-rdma-capacity", "", `keep nodes' koordinator.sh/rdma capacity from koordinator's Device objects: "count" (VFs in VF mode, else PFs) or "percent" (100 per PF); empty: off`)
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	switch *rdmaModel {
	case "":
	case "count":
		m := rdma.CountModel
		opts.NodeRDMACapacity = &m
	case "percent":
		m := rdma.PercentModel
		opts.NodeRDMACapacity = &m
	default:
		fmt.Fprintf(os.Stderr, "kplan-operator: --node-rdma-capacity %q: want count, percent or empty\n", *rdmaModel)
		os.Exit(2)
	}

	if err := operator.CheckImage(opts.SidecarImage); err != nil {
		fmt.Fprintf(os.Stderr, "kplan-operator: --sidecar-image: %v\n", err)
		os.Exit(2)
	}
	if err := operator.CheckImage(opts.WaitImage); err != nil {
		fmt.Fprintf(os.Stderr, "kplan-operator: --wait-image: %v\n", err)
		os.Exit(2)
	}
	srv := servers{metricsAddr: *metricsAddr, metricsCertDir: *metricsCertDir, probeAddr: *probeAddr,
		webhook: webhook.Options{Port: *webhookPort, CertDir: *certDir, ClientCAName: *clientCA}}
	if err := run(opts, le, srv); err != nil {
		fmt.Fprintln(os.Stderr, "kplan-operator:", err)
		os.Exit(1)
	}
}

// leaderElection is the operator's leader election configuration.
type leaderElection struct {
	enabled   bool
	namespace string
}

// leaderElectionID names the Lease the operator's replicas compete for.
const leaderElectionID = "kplan-operator.kplan.dev"

// servers are the operator's listeners.
type servers struct {
	metricsAddr, metricsCertDir, probeAddr string
	webhook                                webhook.Options
}

func run(opts operator.Options, le leaderElection, srv servers) error {
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	webhookServer, err := operator.NewWebhookServer(srv.webhook)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  operator.CacheOptions(opts),
		Metrics:                operator.MetricsServerOptions(srv.metricsAddr, srv.metricsCertDir),
		HealthProbeBindAddress: srv.probeAddr,
		WebhookServer:          webhookServer,
		// The webhook serves on every replica; the controllers run only on the
		// one holding the Lease. A replica that stops hands the Lease over at
		// once; one that dies loses it after the lease duration.
		LeaderElection:                le.enabled,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       le.namespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return err
	}
	if err := operator.Setup(mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", func(*http.Request) error { return nil }); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
