package operator_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/revision"
)

// tokenClient returns a client authenticating with token (and nothing else).
func tokenClient(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReloadAgentIdentity: the reload agent runs as its pod's ServiceAccount with
// config/reload's Role for its set, holding the token the kubelet mounts into that
// pod. With it, the agent marks its own pod current; it cannot patch another pod,
// its own image, labels or other annotations (the scheduler's device-allocated among
// them), nor read another set or ConfigMap than its set's hub. Every refusal is the
// API server's (RBAC or the policy configmapset-reload-agent of config/rbac).
func TestReloadAgentIdentity(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	set := newSet(t, ns, "web-config", map[string]string{"app.conf": "v1"}, false)
	other := &revision.ConfigMapSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-config"}, Spec: revision.ConfigMapSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Data: map[string]string{"x.conf": "x"},
		Containers: []revision.ContainerInjectSpec{{Name: "main", MountPath: "/etc/db"}},
	}}
	if err := admin.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	newWebPod(t, ns, "web-0")
	newWebPod(t, ns, "web-1")
	applyReloadRole(t, ns, "web", set.Name)
	agent := tokenClient(t, boundToken(t, ns, "web", "web-0"))
	keys, err := revision.KeysFor(set.Name)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	merge := func(p string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(p)) }
	// A strategic merge patch changes one container's image and keeps the rest, so
	// the pod stays valid and only the policy can refuse it.
	image := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"main","image":"evil:1"}]}}`))
	markCurrent := fmt.Sprintf(`{"metadata":{"annotations":{%q:"rev-1",%q:"1700000000000"}}}`, keys.CurrentRevision, keys.CurrentRevisionTimestamp)

	t.Run("the agent marks its own pod current", func(t *testing.T) {
		if err := agent.Patch(ctx, pod("web-0"), merge(markCurrent)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the agent reads its pod, its set and its hub", func(t *testing.T) {
		eventually(t, "the hub", func() error {
			return agent.Get(ctx, types.NamespacedName{Namespace: ns, Name: revision.HubName(set.Name)}, &corev1.ConfigMap{})
		})
		if err := agent.Get(ctx, client.ObjectKeyFromObject(set), &revision.ConfigMapSet{}); err != nil {
			t.Error(err)
		}
		if err := agent.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, &corev1.Pod{}); err != nil {
			t.Error(err)
		}
	})

	forbidden := []struct {
		name string
		do   func() error
	}{
		{"mark another pod current", func() error { return agent.Patch(ctx, pod("web-1"), merge(markCurrent)) }},
		{"change another pod's image", func() error { return agent.Patch(ctx, pod("web-1"), image) }},
		{"change its own image", func() error { return agent.Patch(ctx, pod("web-0"), image) }},
		{"relabel its own pod", func() error { return agent.Patch(ctx, pod("web-0"), merge(`{"metadata":{"labels":{"app":"db"}}}`)) }},
		{"set the device-allocated annotation on its own pod", func() error {
			return agent.Patch(ctx, pod("web-0"), merge(`{"metadata":{"annotations":{"scheduling.koordinator.sh/device-allocated":"{}"}}}`))
		}},
		{"rewrite its own wanted revision", func() error {
			return agent.Patch(ctx, pod("web-0"), merge(fmt.Sprintf(`{"metadata":{"annotations":{%q:"rev-9"}}}`, keys.UpdateRevision)))
		}},
		{"add a finalizer to its own pod", func() error {
			return agent.Patch(ctx, pod("web-0"), merge(`{"metadata":{"finalizers":["example.com/block"]}}`))
		}},
		{"read another ConfigMapSet", func() error {
			return agent.Get(ctx, client.ObjectKeyFromObject(other), &revision.ConfigMapSet{})
		}},
		{"read another set's hub", func() error {
			return agent.Get(ctx, types.NamespacedName{Namespace: ns, Name: revision.HubName(other.Name)}, &corev1.ConfigMap{})
		}},
		{"delete a pod", func() error { return agent.Delete(ctx, pod("web-1")) }},
	}
	for _, r := range forbidden {
		t.Run("the agent cannot "+r.name, func(t *testing.T) { refused(t, r.name, r.do()) })
	}

	t.Run("an unbound token of the same ServiceAccount cannot change pods", func(t *testing.T) {
		// A token without pod claims (requested by hand, not mounted by the kubelet).
		tr := unboundToken(t, ns, "web")
		refused(t, "an unbound token marks the pod", tokenClient(t, tr).Patch(ctx, pod("web-0"), merge(markCurrent)))
	})

	t.Run("the same ServiceAccount without the reload RoleBinding is not confined", func(t *testing.T) {
		// The policy's parameter is the labeled RoleBinding: another namespace's
		// ServiceAccount named alike, bound to a role of its own, keeps its rights.
		ns2 := newNamespace(t)
		newWebPod(t, ns2, "web-0")
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		grant(t, ns2, "system:serviceaccount:"+ns2+":web", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}})
		c := tokenClient(t, boundToken(t, ns2, "web", "web-0"))
		eventually(t, "an unconfined ServiceAccount relabels a pod", func() error {
			return c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "web-0"}}, merge(`{"metadata":{"labels":{"tier":"x"}}}`))
		})
	})
}
