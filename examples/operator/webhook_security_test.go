package operator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
)

// TestWebhookFailsClosedOnlyWhereSelected: with the operator stopped (its webhook
// unreachable), pods of namespaces that did not opt in to ConfigMapSet injection
// (cert-manager's among them) are created; pods of an opted-in namespace and
// ModelServing pods anywhere are not (a pod admitted without its injection could
// never get it). The webhook configuration is config/webhook's.
func TestWebhookFailsClosedOnlyWhereSelected(t *testing.T) {
	ctx := context.Background()
	plain := newNamespace(t, podwebhook.LabelNamespaceInjection, "-")
	optedIn := newNamespace(t)
	certManager := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager"}}
	// Kept from an earlier run (go test -count): envtest never removes a namespace.
	if err := admin.Create(ctx, certManager); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := stopManager(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := startManager(nil); err != nil {
			t.Fatalf("restarting the operator: %v", err)
		}
	})
	pod := func(ns, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}}}
	}
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		created bool
	}{
		{"a pod of a namespace without the injection label is created", pod(plain, "app", map[string]string{"app": "web"}), true},
		{"a cert-manager pod is created", pod("cert-manager", "cert-manager-webhook", map[string]string{"app": "cert-manager"}), true},
		{"a pod of an opted-in namespace is refused", pod(optedIn, "app", map[string]string{"app": "web"}), false},
		{"a ModelServing pod is refused in any namespace", pod(plain, "llm-worker-0-0", map[string]string{servingv1.LabelName: "llm"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := admin.Create(ctx, c.pod)
			if c.created && err != nil {
				t.Fatalf("create: %v", err)
			}
			if c.created {
				t.Cleanup(func() { _ = admin.Delete(context.Background(), c.pod) })
			}
			if !c.created && (err == nil || !strings.Contains(err.Error(), "failed calling webhook")) {
				t.Fatalf("create: %v, want the unreachable webhook's refusal", err)
			}
			if took := time.Since(start); took > 6*time.Second {
				t.Errorf("create took %s: longer than the webhook's 5 s timeout", took)
			}
		})
	}
}

// forgedReview is an AdmissionReview for a pod of namespace ns that a ConfigMapSet
// there selects, as an attacker who reached the webhook's port would send it.
func forgedReview(t *testing.T, reqNS, podNS string) []byte {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: "probe", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "forged", Operation: admissionv1.Create, Namespace: reqNS,
			Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Object: runtime.RawExtension{Raw: raw}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// webhookURL is the operator's webhook as envtest serves it.
func webhookURL() string {
	wh := env.Webhook
	return "https://" + net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort)) + podwebhook.Path
}

// webhookTLS returns a TLS client configuration trusting the webhook's serving
// certificate, presenting certs.
func webhookTLS(certs ...tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env.Webhook.LocalServingCAData)
	return &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12}
}

// TestWebhookVerifiesCaller: a review forged by anyone who reaches the webhook's
// port (not the API server) gets no answer that depends on any namespace's objects:
// without a client certificate the request is refused before the review is read,
// with a certificate of another CA the handshake fails. Even a caller holding a
// valid client certificate cannot ask about one namespace in the name of another.
// The server speaks HTTP/1.1 only.
func TestWebhookVerifiesCaller(t *testing.T) {
	ctx := context.Background()
	victim := newNamespace(t)
	set := newSet(t, victim, "victim-secrets-layout", map[string]string{"db.conf": "x"}, false)
	post := func(cfg *tls.Config, review []byte) (int, string, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Post(webhookURL(), "application/json", bytes.NewReader(review))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	t.Run("without a client certificate the review is refused unread", func(t *testing.T) {
		code, body, err := post(webhookTLS(), forgedReview(t, victim, victim))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized || strings.Contains(body, set.Name) {
			t.Fatalf("status %d, body %q: want 401 naming nothing of namespace %s", code, body, victim)
		}
	})

	t.Run("a client certificate of another CA fails the handshake", func(t *testing.T) {
		other, err := newWebhookClientAuth(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cert, err := other.clientCert("intruder")
		if err != nil {
			t.Fatal(err)
		}
		_, body, err := post(webhookTLS(cert), forgedReview(t, victim, victim))
		if err == nil {
			t.Fatalf("the request was answered: %q", body)
		}
	})

	t.Run("a pod claiming another namespace than the request's is refused", func(t *testing.T) {
		cert, err := webhookClient.clientCert("kube-apiserver")
		if err != nil {
			t.Fatal(err)
		}
		attacker := newNamespace(t)
		code, body, err := post(webhookTLS(cert), forgedReview(t, attacker, victim))
		if err != nil {
			t.Fatal(err)
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal([]byte(body), &review); err != nil || review.Response == nil {
			t.Fatalf("status %d, body %q: %v", code, body, err)
		}
		if review.Response.Allowed || len(review.Response.Patch) > 0 || strings.Contains(body, set.Name) {
			t.Fatalf("response %q: want a denial naming nothing of namespace %s", body, victim)
		}
	})

	t.Run("the API server's certificate is accepted", func(t *testing.T) {
		// Pods created through the API server are mutated: the API server presents
		// config/apiserver's client certificate.
		newWebPod(t, victim, "web-0")
		var pod corev1.Pod
		if err := admin.Get(ctx, client.ObjectKey{Namespace: victim, Name: "web-0"}, &pod); err != nil {
			t.Fatal(err)
		}
		if pod.Labels[podwebhook.LabelConfigMapSetPod] != "true" {
			t.Fatalf("pod labels %v: not injected", pod.Labels)
		}
	})

	t.Run("HTTP/2 is not offered", func(t *testing.T) {
		cfg := webhookTLS()
		cfg.NextProtos = []string{"h2", "http/1.1"}
		conn, err := tls.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(webhookURL(), podwebhook.Path), "https://"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
			t.Fatalf("negotiated %q", p)
		}
	})
}
