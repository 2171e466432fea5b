package operator_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/examples/operator/rdmacapacity"
	"github.com/kplan-dev/kplan/ranktable"
)

// TestRBAC: the operator runs (in every other test) as the ServiceAccount bound to
// config/rbac; here the same identity is refused what the role does not grant, which
// shows the API server enforces the role (the other tests would pass with any
// superset otherwise). Nodes and Devices are not granted: only the optional
// config/node-rdma role grants them, for --node-rdma-capacity.
func TestRBAC(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	c, err := client.New(operCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x",
		Labels: map[string]string{ranktable.LabelComponent: configmapset.ComponentHub}}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create ConfigMap as the operator: %v", err)
	}
	denied := []struct {
		what string
		do   func() error
	}{
		{"patch a ConfigMap", func() error {
			return c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"a":"b"}}`)))
		}},
		{"list StatefulSets", func() error { return c.List(ctx, &appsv1.StatefulSetList{}, client.InNamespace(ns)) }},
		{"update a pod", func() error {
			return c.Update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", ResourceVersion: "1"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
		}},
		{"create a StatefulSet", func() error {
			return c.Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}})
		}},
		{"update a ModelServing's spec", func() error {
			return c.Update(ctx, &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m", ResourceVersion: "1"}})
		}},
		{"read a Secret", func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s"}, &corev1.Secret{}) }},
		// Node RDMA capacity is the optional config/node-rdma role's.
		{"list nodes", func() error { return c.List(ctx, &corev1.NodeList{}) }},
		{"patch a node's status", func() error {
			return c.Status().Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
		}},
		{"list Devices", func() error {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(rdmacapacity.DeviceGVK.GroupVersion().WithKind("DeviceList"))
			return c.List(ctx, l)
		}},
	}
	for _, d := range denied {
		if err := d.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as the operator: %v, want Forbidden", d.what, err)
		}
	}
}
