package operator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookClientCAName is the file, in the webhook server's certificate directory,
// of the CA that signs the API server's client certificate (the operator's
// --webhook-client-ca, as config/manager/manager.yaml sets it).
const webhookClientCAName = "client-ca.crt"

// webhookClientAuth is the API server's client authentication to the webhook.
type webhookClientAuth struct {
	admissionConfig string // the --admission-control-config-file
	caPEM           []byte
	ca              *x509.Certificate
	caKey           *ecdsa.PrivateKey
}

// webhookClient is set up by TestMain.
var webhookClient *webhookClientAuth

// newWebhookClientAuth writes config/apiserver's admission configuration and
// kubeconfig into dir, with a client certificate signed by a new CA. The paths are
// rewritten to dir, and the kubeconfig's user is renamed "*": envtest's webhook is a
// URL on a random local port, not the Service the file names.
func newWebhookClientAuth(dir string) (*webhookClientAuth, error) {
	a := &webhookClientAuth{}
	var err error
	if a.ca, a.caKey, err = newCert("kplan-test-webhook-client-ca", nil, nil); err != nil {
		return nil, err
	}
	a.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.ca.Raw})
	cert, key, err := newCert("kube-apiserver", a.ca, a.caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"apiserver-client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		"apiserver-client.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for _, name := range []string{"admission-config.yaml", "webhook-kubeconfig.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "config", "apiserver", name))
		if err != nil {
			return nil, err
		}
		text := strings.ReplaceAll(string(b), "/etc/kubernetes/kplan/", dir+"/")
		text = strings.ReplaceAll(text, "name: kplan-operator-webhook.kplan-system.svc", `name: "*"`)
		files[name] = []byte(text)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	a.admissionConfig = filepath.Join(dir, "admission-config.yaml")
	return a, nil
}

// clientCert returns a client certificate signed by the webhook's client CA.
func (a *webhookClientAuth) clientCert(cn string) (tls.Certificate, error) {
	cert, key, err := newCert(cn, a.ca, a.caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

// newCert returns a certificate for cn signed by parent (a self-signed CA when
// parent is nil).
func newCert(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		signer, signerKey = parent, parentKey
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// waitPoliciesActive waits until the API server enforces the policies of
// config/rbac (kplan-operator-writes refuses an unlabeled ConfigMap). envtest runs
// no controller manager, so the policies' status (type checking) stays empty; the
// tests check each rule by its effect.
func waitPoliciesActive(ctx context.Context) error {
	oper, err := client.New(operCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	return waitFor(30*time.Second, func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, GenerateName: "policy-probe-"}}
		err := oper.Create(ctx, cm)
		if err == nil {
			_ = admin.Delete(ctx, cm)
			return errors.New("kplan-operator-writes is not enforced yet")
		}
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return nil
		}
		return err
	})
}
