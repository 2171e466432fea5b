package operator_test

import (
	"context"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userClient returns a client acting as user (impersonated by the administrator),
// in the authenticated users' group.
func userClient(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// grant gives user (a user name, or a ServiceAccount's
// system:serviceaccount:ns:name) the rules in namespace ns, with a Role and a
// RoleBinding. (envtest runs no controller manager, so the aggregated ClusterRoles
// such as edit are empty.)
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "grant-"}, Rules: rules}
	if err := admin.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
}

// unboundToken returns a token of the ServiceAccount ns/sa bound to no object (no
// pod claims), creating the ServiceAccount if needed.
func unboundToken(t *testing.T, ns, sa string) string {
	t.Helper()
	ctx := context.Background()
	acct := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
	if err := admin.Create(ctx, acct); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}
	if err := admin.SubResource("token").Create(ctx, acct, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// clusterRoleBinding binds the ClusterRole to user cluster-wide.
func clusterRoleBinding(t *testing.T, user, clusterRole string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: clusterRole + "-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(context.Background(), crb); err != nil {
		t.Fatal(err)
	}
	return crb
}
