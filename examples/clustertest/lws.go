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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

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
