package operator_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/revision"
)

// TestRanktableTemplateMustBeLabeled: a ModelServing may name any ConfigMap of the
// templates namespace in its template annotation. One without the template label is
// not read: the owner's condition and events say which label it lacks and echo none
// of its values.
func TestRanktableTemplateMustBeLabeled(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	secret := "s3cr3t-" + ns
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ranktable.DefaultTemplateNamespace, Name: "app-credentials-" + ns},
		Data: map[string]string{
			ranktable.KeyInferenceEngine: secret, ranktable.KeyLevel: secret,
			ranktable.KeyPodParserTemplate: secret, ranktable.KeyRanktableTemplate: secret,
		}}
	if err := admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, cm) })
	newOwner(t, ns, "nosy", 0, map[string]string{ranktable.AnnotationTemplate: cm.Name})
	c := condition(t, ns, "nosy", "the owner's condition", func(c metav1.Condition) error {
		if c.Status != metav1.ConditionFalse {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if strings.Contains(c.Message, secret) {
		t.Errorf("the condition echoes the ConfigMap's values: %q", c.Message)
	}
	if want := ranktable.LabelComponent + "=" + ranktables.ComponentTemplate; !strings.Contains(c.Message, want) {
		t.Errorf("condition %q does not name the label %s", c.Message, want)
	}
	var events eventsv1.EventList
	if err := admin.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Note, secret) {
			t.Errorf("event %s echoes the ConfigMap's values: %q", e.Reason, e.Note)
		}
	}
}

// TestReloadSidecarRestricted: in a namespace enforcing the restricted Pod Security
// level, a pod a ConfigMapSet selects is admitted with the reload sidecar (its own
// restricted security context, requests and limits).
func TestReloadSidecarRestricted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "pod-security.kubernetes.io/enforce", "restricted")
	set := newSet(t, ns, "cfg", map[string]string{"app.conf": "x"}, false)
	yes, no := true, false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatalf("a restricted pod with the reload sidecar: %v", err)
	}
	var sidecar *corev1.Container
	for i, c := range pod.Spec.InitContainers {
		if c.Name == revision.ReloadSidecarName(set.Name) {
			sidecar = &pod.Spec.InitContainers[i]
		}
	}
	if sidecar == nil {
		t.Fatalf("no reload sidecar in %v", pod.Spec.InitContainers)
	}
	sc := sidecar.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.SeccompProfile == nil {
		t.Errorf("sidecar security context %+v", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := sidecar.Resources.Requests[r]; !ok {
			t.Errorf("sidecar requests %v: no %s", sidecar.Resources.Requests, r)
		}
		if _, ok := sidecar.Resources.Limits[r]; !ok {
			t.Errorf("sidecar limits %v: no %s", sidecar.Resources.Limits, r)
		}
	}
}

// TestCheckImage: the images the operator injects must be pinned.
func TestCheckImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		ref string
		ok  bool
	}{
		{"busybox:1.36.1", true},
		{"busybox@" + digest, true},
		{"busybox:1.36.1@" + digest, true},
		{"registry.example.com:5000/team/reload:v2", true},
		{"ghcr.io/kplan-dev/configmapset-reload@" + digest, true},
		{"busybox", false},
		{"busybox:latest", false},
		{"registry.example.com:5000/team/reload", false},
		{"busybox@sha256:abc", false},
		{"Busybox:1", false},
		{"busybox:1 ", false},
		{"ko://github.com/kplan-dev/kplan/examples/cmd/configmapset-reload", false},
	} {
		t.Run(c.ref, func(t *testing.T) {
			err := operator.CheckImage(c.ref)
			if (err == nil) != c.ok {
				t.Fatalf("CheckImage(%q) = %v, want ok %v", c.ref, err, c.ok)
			}
		})
	}
}

// TestMetricsRequireAuthorization: the metrics endpoint, as cmd/kplan-operator serves
// it, answers only a bearer token whose user may get /metrics (the
// kplan-operator-metrics-reader ClusterRole of config/rbac): no token is 401, a
// token of another ServiceAccount 403. It speaks HTTPS only.
func TestMetricsRequireAuthorization(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	mgr, err := ctrl.NewManager(operCfg, ctrl.Options{Scheme: scheme, Metrics: operator.MetricsServerOptions(addr, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	reader := unboundToken(t, ns, "prometheus")
	crb := clusterRoleBinding(t, "system:serviceaccount:"+ns+":prometheus", "kplan-operator-metrics-reader")
	t.Cleanup(func() { _ = admin.Delete(ctx, crb) })
	stranger := unboundToken(t, ns, "stranger")
	get := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	eventually(t, "the metrics server answers", func() error {
		_, _, err := get("https", "")
		return err
	})
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token that does not authenticate", "not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without the reader role", stranger, http.StatusForbidden},
		{"the reader", reader, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			var code int
			var body string
			// RBAC caches: a fresh binding may take a moment to apply.
			eventually(t, c.name, func() error {
				var err error
				if code, body, err = get("https", c.token); err != nil {
					return err
				}
				if code != c.want {
					return fmt.Errorf("status %d, want %d", code, c.want)
				}
				return nil
			})
			if c.want == http.StatusOK && !strings.Contains(body, "ranktable_generation_duration_seconds") {
				t.Errorf("metrics body has no ranktable metrics:\n%.500s", body)
			}
			if c.want != http.StatusOK && strings.Contains(body, "ranktable_") {
				t.Errorf("a refused request got metrics")
			}
		})
	}
	t.Run("plain HTTP gets no metrics", func(t *testing.T) {
		if code, body, err := get("http", reader); err == nil && strings.Contains(body, "ranktable_") {
			t.Errorf("plain HTTP answered %d with metrics", code)
		}
	})
}
