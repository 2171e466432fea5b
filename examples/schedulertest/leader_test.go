package schedulertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/examples/internal/testenv"
)

// checkedInLeaderElection returns the leader election Lease of the checked-in
// scheduler configuration.
func checkedInLeaderElection(t *testing.T) (namespace, name string) {
	t.Helper()
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "scheduler", "config", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		LeaderElection struct {
			LeaderElect       bool   `json:"leaderElect"`
			ResourceName      string `json:"resourceName"`
			ResourceNamespace string `json:"resourceNamespace"`
		} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	le := cfg.LeaderElection
	if !le.LeaderElect || le.ResourceName == "" || le.ResourceNamespace == "" {
		t.Fatalf("scheduler-config.yaml leaderElection %+v", le)
	}
	return le.ResourceNamespace, le.ResourceName
}

// TestSchedulerLeaderElection runs two real schedulers with the checked-in leader
// election Lease, with config/rbac.yaml, as each identity it binds: the user
// system:kube-scheduler (the control plane's kubeconfig) and the ServiceAccount
// kube-system/kplan-rdma-scheduler (a scheduler in a pod, with a token of it). The
// first acquires the Lease and keeps renewing it (without the Lease rule the
// ServiceAccount could create the Lease but not renew it, and would stop), the
// second waits; when the first is killed the second takes over once the lease
// expires.
func TestSchedulerLeaderElection(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns, name := checkedInLeaderElection(t)
	t.Run("as system:kube-scheduler", func(t *testing.T) {
		leaderElection(t, ctx, ns, name, "")
	})
	t.Run("as the ServiceAccount kplan-rdma-scheduler", func(t *testing.T) {
		sa := "kplan-rdma-scheduler"
		tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa, &authnv1.TokenRequest{
			Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a token of the ServiceAccount %s: %v", sa, err)
		}
		kc := clientcmdapi.NewConfig()
		kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
		kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: sa}
		kc.CurrentContext = sa
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		leaderElection(t, ctx, ns, name, path)
	})
}

func ptrTo[T any](v T) *T { return &v }

// leaderElection runs the scenario of TestSchedulerLeaderElection with the
// schedulers' kubeconfig at path ("" for the harness's system:kube-scheduler one).
func leaderElection(t *testing.T, ctx context.Context, ns, name, path string) {
	edit := func(cfg map[string]any) {
		cfg["leaderElection"] = map[string]any{
			"leaderElect": true, "resourceName": name, "resourceNamespace": ns,
			"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms",
		}
		if path != "" {
			cfg["clientConnection"].(map[string]any)["kubeconfig"] = path
		}
	}
	lease := func() (*coordinationv1.Lease, error) {
		return cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	}
	holder := func(l *coordinationv1.Lease) string {
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	// The Lease of an earlier scheduler (the other identity's scenario, or this
	// test run before: go test -count) is held by a process now gone; the first
	// scheduler would be taken for it.
	if err := cs.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	first := startScheduler(t, edit)
	var firstHolder string
	var firstRenew time.Time
	waitFor(t, ctx, time.Minute, "the first scheduler acquires the Lease", func(ctx context.Context) (bool, error) {
		l, err := lease()
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil || holder(l) == "" || l.Spec.RenewTime == nil {
			return false, err
		}
		firstHolder, firstRenew = holder(l), l.Spec.RenewTime.Time
		return true, nil
	})
	waitFor(t, ctx, time.Minute, "the first scheduler renews the Lease past its duration", func(ctx context.Context) (bool, error) {
		select {
		case <-first.done:
			t.Fatalf("the first scheduler exited (lost the Lease?)")
		default:
		}
		l, err := lease()
		if err != nil {
			return false, err
		}
		if holder(l) != firstHolder {
			t.Fatalf("the Lease moved to %q while %q runs", holder(l), firstHolder)
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.Sub(firstRenew) > 5*time.Second, nil
	})

	second := startScheduler(t, edit)
	time.Sleep(2 * time.Second)
	if l, err := lease(); err != nil || holder(l) != firstHolder {
		t.Fatalf("with both running the Lease is held by %v (%v), want the first scheduler %q", l, err, firstHolder)
	}
	first.stop() // SIGKILL: the Lease is not released
	waitFor(t, ctx, time.Minute, "the second scheduler takes over", func(ctx context.Context) (bool, error) {
		l, err := lease()
		if err != nil {
			return false, err
		}
		h := holder(l)
		return h != "" && h != firstHolder, nil
	})
	select {
	case <-second.done:
		t.Fatal("the second scheduler exited")
	default:
	}
}

// TestSchedulerServiceAccount: config/rbac.yaml creates the ServiceAccount it binds,
// and gives it what a scheduler running in a pod needs: the built-in scheduler
// roles, koordinator's Devices and its Lease.
func TestSchedulerServiceAccount(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns, name := checkedInLeaderElection(t)
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, "kplan-rdma-scheduler", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ServiceAccount: %v", err)
	}
	for _, a := range []authzv1.ResourceAttributes{
		{Namespace: ns, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: name},
		{Verb: "list", Group: "scheduling.koordinator.sh", Resource: "devices"},
		{Namespace: "default", Verb: "create", Resource: "pods", Subresource: "binding"},
		{Verb: "list", Resource: "nodes"},
	} {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:kube-system:kplan-rdma-scheduler", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &a,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			t.Errorf("the ServiceAccount may not %s %s/%s %s: %s", a.Verb, a.Resource, a.Subresource, a.Name, sar.Status.Reason)
		}
	}
	// The plugin binds: nothing lets the scheduler patch pods.
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: "system:kube-scheduler", ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "default", Verb: "patch", Resource: "pods"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sar.Status.Allowed {
		t.Errorf("system:kube-scheduler may patch pods: %s", sar.Status.Reason)
	}
}
