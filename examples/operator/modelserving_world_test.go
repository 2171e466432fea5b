package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// The ModelServing controller in a node's world: pods are bound and deleted
// gracefully (the test kubelet), so a pod's name stays taken while it
// terminates.

// sampleModelServing reads examples/config/samples/modelserving.yaml into ns.
func sampleModelServing(t *testing.T, ns string) *servingv1.ModelServing {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "config", "samples", "modelserving.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ms := &servingv1.ModelServing{}
	if err := yaml.UnmarshalStrict(raw, ms); err != nil {
		t.Fatal(err)
	}
	ms.Namespace = ns
	return ms
}

// TestModelServingRemakesADeletedPod: the sample ModelServing (Gang mode),
// running, loses one pod (deleted by hand, gracefully or at once; with and
// without a recovery policy): the controller creates it again under its name
// once the old one is gone, and the rollout reports complete.
func TestModelServingRemakesADeletedPod(t *testing.T) {
	for _, tc := range []struct {
		name      string
		immediate bool
		recovery  *servingv1.RecoveryPolicy
	}{
		{name: "graceful"},
		{name: "immediate", immediate: true},
		{name: "with a recovery policy", recovery: &servingv1.RecoveryPolicy{StartTimeoutSeconds: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			startMSKubelet(t, ns, 300*time.Millisecond)
			ms := sampleModelServing(t, ns)
			ms.Spec.RecoveryPolicy = tc.recovery
			pw := watchPods(t, ns, ms.Name)
			pw.expect(ms.Spec)
			pw.checkGates(true)
			if err := admin.Create(ctx, ms); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, ms, pw, 90*time.Second)
			victim := &corev1.Pod{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: ms.Name + "-decode-1-0"}, victim); err != nil {
				t.Fatal(err)
			}
			var opts []client.DeleteOption
			if tc.immediate {
				opts = append(opts, client.GracePeriodSeconds(0))
			}
			if err := admin.Delete(ctx, victim, opts...); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the pod created again", func() error {
				var p corev1.Pod
				if err := admin.Get(ctx, client.ObjectKeyFromObject(victim), &p); err != nil {
					return err
				}
				if p.UID == victim.UID {
					return errors.New("the old pod is still there")
				}
				return nil
			})
			waitRolledOut(t, ms, pw, 90*time.Second)
			pw.finish()
		})
	}
}

// TestModelServingGangSurgeRecreates: Gang mode, six groups, maxSurge 1, a change
// of more than images (every pod is recreated) on a node whose deletions take
// time: the rollout converges with every group whole.
func TestModelServingGangSurgeRecreates(t *testing.T) {
	ns := newNamespace(t)
	startMSKubelet(t, ns, 200*time.Millisecond)
	pw := watchPods(t, ns, "surge")
	ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "surge"},
		Spec: servingv1.ModelServingSpec{Replicas: ptr(int32(6)), Roles: msRoles("engine:v1"),
			RolloutStrategy: servingv1.RolloutStrategy{Mode: servingv1.GangMode, MaxUnavailable: intOrStr(intstr.FromInt(1)), MaxSurge: intOrStr(intstr.FromInt(1))}}}
	pw.expect(ms.Spec)
	pw.checkGates(true)
	if err := admin.Create(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ms, pw, 90*time.Second)
	editModelServing(t, ms, func(m *servingv1.ModelServing) { setImageAndEnv("engine:v2")(m); pw.expect(m.Spec) })
	waitRolledOut(t, ms, pw, 180*time.Second)
	pw.finish()
}

// TestModelServingPodNameTaken: pod names are <modelserving>-<role>-<group>-<member>,
// so ModelServing a with role b-c and ModelServing a-b with role c both want
// pod a-b-c-0-0. The second one reports the collision (Failed=True,
// PodNameTaken, naming the pod and its controller, and an event), and creates
// its pods once the first is gone.
func TestModelServingPodNameTaken(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, 100*time.Millisecond)
	oneRole := func(name, role string) *servingv1.ModelServing {
		roles := msRoles("engine:v1")[:1]
		roles[0].Name = role
		return &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: servingv1.ModelServingSpec{Replicas: ptr(int32(1)), Roles: roles}}
	}
	first, second := oneRole("a", "b-c"), oneRole("a-b", "c")
	pw := watchPods(t, ns, first.Name)
	pw.expect(first.Spec)
	if err := admin.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, first, pw, 60*time.Second)
	if err := admin.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the collision reported", func() error {
		cur := getMS(t, second)
		c := meta.FindStatusCondition(cur.Status.Conditions, servingv1.ConditionFailed)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != servingv1.ReasonPodNameTaken {
			return fmt.Errorf("Failed condition %+v", c)
		}
		if !strings.Contains(c.Message, "a-b-c-0-0") || !strings.Contains(c.Message, "ModelServing a") {
			return fmt.Errorf("message %q names neither the pod nor its controller", c.Message)
		}
		return nil
	})
	ev := waitEvent(t, ns, servingv1.ReasonPodNameTaken, second.Name)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s, want Warning", ev.Type)
	}
	pw.finish()
	// Once the first ModelServing and its pod are gone, the second creates its pod.
	if err := admin.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	// No garbage collector runs in envtest: delete the first one's pod as it would.
	if err := admin.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-b-c-0-0"}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, "the second ModelServing's pod", func() error {
		var p corev1.Pod
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a-b-c-0-0"}, &p); err != nil {
			return err
		}
		if !metav1.IsControlledBy(&p, getMS(t, second)) {
			return errors.New("still the first one's pod")
		}
		return nil
	})
}
