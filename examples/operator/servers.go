package operator

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// http1Only makes a TLS server offer HTTP/1.1 only (no HTTP/2: its stream and
// header handling have been the subject of denial-of-service advisories, and neither
// the API server nor Prometheus needs it).
func http1Only(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

// NewWebhookServer returns the webhook server for o, speaking HTTP/1.1 only. When
// o.ClientCAName names a file in o.CertDir (PEM), every webhook registered on the
// server answers only callers presenting a client certificate that CA signed: the
// API server, configured with an admission configuration file (see
// examples/config/apiserver); others get 401 and no review is read. The CA is read
// once, here. Without it, anyone who reaches the port can send admission reviews.
func NewWebhookServer(o webhook.Options) (webhook.Server, error) {
	o.TLSOpts = append(slices.Clone(o.TLSOpts), http1Only)
	if o.ClientCAName == "" {
		return webhook.NewServer(o), nil
	}
	dir := cmp.Or(o.CertDir, filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"))
	path := filepath.Join(dir, o.ClientCAName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("webhook client CA %s: no PEM certificate", path)
	}
	// The handshake verifies a certificate that is given; the handlers refuse
	// requests without one. (Requiring it in the handshake would also refuse the
	// server's own readiness check, which dials without a certificate.)
	o.ClientCAName = ""
	o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	})
	return clientVerifyingServer{webhook.NewServer(o)}, nil
}

// clientVerifyingServer refuses, in every registered handler, requests whose TLS
// connection carries no verified client certificate.
type clientVerifyingServer struct{ webhook.Server }

func (s clientVerifyingServer) Register(path string, hook http.Handler) {
	s.Server.Register(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "a client certificate signed by the webhook's client CA is required", http.StatusUnauthorized)
			return
		}
		hook.ServeHTTP(w, r)
	}))
}

// MetricsServerOptions returns metrics server options serving on addr ("0" turns it
// off) over HTTPS, HTTP/1.1 only, with every request authenticated (TokenReview) and
// authorized (SubjectAccessReview: get on the non-resource URL /metrics). The
// operator's ServiceAccount needs create on tokenreviews and subjectaccessreviews
// (examples/config/rbac), and a scraper a binding to the kplan-operator-metrics-reader
// ClusterRole. The serving certificate is generated at start unless certDir holds
// tls.crt and tls.key.
func MetricsServerOptions(addr, certDir string) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		CertDir:        certDir,
		FilterProvider: authenticatedMetrics,
		TLSOpts:        []func(*tls.Config){http1Only},
	}
}

// authenticatedMetrics is a metrics filter: the bearer token of each request is
// reviewed by the API server (TokenReview), and the user it names must be allowed the
// request's verb on its path (SubjectAccessReview with non-resource attributes, as
// the API server authorizes its own /metrics). Anything else is 401 or 403.
func authenticatedMetrics(c *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, err := authorizeMetrics(r.Context(), cs, r)
			if err != nil {
				log.V(1).Info("metrics request refused", "status", status, "reason", err.Error())
				http.Error(w, http.StatusText(status), status)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// authorizeMetrics returns 0 when the request may proceed, else the HTTP status to
// answer with and why.
func authorizeMetrics(ctx context.Context, cs kubernetes.Interface, r *http.Request) (int, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return http.StatusUnauthorized, fmt.Errorf("no bearer token")
	}
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, fmt.Errorf("token not authenticated: %s", tr.Status.Error)
	}
	u := tr.Status.User
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
	}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, fmt.Errorf("user %s may not %s %s", u.Username, r.Method, r.URL.Path)
	}
	return 0, nil
}
