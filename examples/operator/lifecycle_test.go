package operator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// condition waits until the owner's RanktableReady condition satisfies check and
// returns it.
func condition(t *testing.T, ns, name, what string, check func(metav1.Condition) error) metav1.Condition {
	t.Helper()
	var found metav1.Condition
	eventually(t, what, func() error {
		var ms servingv1.ModelServing
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &ms); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ms.Status.Conditions, servingv1.ConditionRanktableReady)
		if c == nil {
			return fmt.Errorf("no %s condition in %+v", servingv1.ConditionRanktableReady, ms.Status.Conditions)
		}
		found = *c
		return check(found)
	})
	return found
}

func is(status metav1.ConditionStatus, reason string, contains ...string) func(metav1.Condition) error {
	return func(c metav1.Condition) error {
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %s/%s %q, want %s/%s", c.Status, c.Reason, c.Message, status, reason)
		}
		for _, s := range contains {
			if !strings.Contains(c.Message, s) {
				return fmt.Errorf("condition message %q does not contain %q", c.Message, s)
			}
		}
		return nil
	}
}

// TestRanktableOwnerLifecycle walks the KServe controller's lifecycle on a ranktable
// owner: the finalizer is added on create; the RanktableReady condition follows the
// groups (waiting, ready, failed with the pod and field named) with events on the
// transitions; deletion cleans up the ConfigMaps and removes the finalizer.
func TestRanktableOwnerLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	ms := newOwner(t, ns, "life", 1, nil)
	w0, w1 := podOf("life", "worker", 0, 0), podOf("life", "worker", 0, 1)

	t.Run("the finalizer is added on create", func(t *testing.T) {
		eventually(t, "finalizer", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
				return err
			}
			if !slices.Contains(ms.Finalizers, ranktables.Finalizer) {
				return fmt.Errorf("finalizers %v", ms.Finalizers)
			}
			return nil
		})
	})

	t.Run("waiting pods make the condition False naming pods and annotation", func(t *testing.T) {
		annotate(t, ns, w0, deviceAnnotation(w0, "192.168.1.10", "10.0.0", 1))
		condition(t, ns, "life", "condition waiting", is(metav1.ConditionFalse, ranktables.ReasonGroupsWaiting,
			ns+"/"+w1, ranktable.DefaultAnnotationName))
	})

	t.Run("a complete table makes it True with a Ready event", func(t *testing.T) {
		annotate(t, ns, w1, deviceAnnotation(w1, "192.168.1.11", "10.0.0", 11))
		condition(t, ns, "life", "condition ready", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady))
		if ev := waitEvent(t, ns, ranktables.ReasonRanktableReady, "life"); ev.Type != corev1.EventTypeNormal {
			t.Errorf("ready event type %s", ev.Type)
		}
	})

	t.Run("a bad annotation makes it False naming the pod and field, with a NotReady event", func(t *testing.T) {
		broken := strings.Replace(deviceAnnotation(w1, "192.168.1.11", "10.0.0", 11), `"10.0.0.13"`, `"not-an-ip"`, 1)
		annotate(t, ns, w1, broken)
		c := condition(t, ns, "life", "condition failed", is(metav1.ConditionFalse, ranktables.ReasonGroupsFailed, ns+"/"+w1, "device_ip", "not-an-ip"))
		t.Logf("condition message: %s", c.Message)
		ev := waitEvent(t, ns, ranktables.ReasonRanktableNotReady, "life")
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, w1) {
			t.Errorf("not-ready event %s %q, want a Warning naming the pod", ev.Type, ev.Note)
		}
	})

	t.Run("deletion deletes the ranktable ConfigMaps and removes the finalizer", func(t *testing.T) {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "life-0-worker-ranktable"}, &cm); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, ms); err != nil {
			t.Fatal(err)
		}
		eventually(t, "owner gone (finalizer removed)", func() error {
			err := admin.Get(ctx, client.ObjectKeyFromObject(ms), &servingv1.ModelServing{})
			if err == nil {
				return errors.New("owner still there")
			}
			return client.IgnoreNotFound(err)
		})
		// No garbage collector runs on a bare API server: the ConfigMap is gone
		// because the operator's cleanup deleted it.
		eventually(t, "ranktable ConfigMap deleted", func() error {
			err := admin.Get(ctx, client.ObjectKeyFromObject(&cm), &corev1.ConfigMap{})
			if err == nil {
				return errors.New("ConfigMap still there")
			}
			return client.IgnoreNotFound(err)
		})
		waitEvent(t, ns, ranktables.ReasonCleanedUp, "life")
	})
}

// TestRanktableTimeoutCondition: a group whose pod never gets its annotation within
// the timeout marks the owner with a condition naming that pod and the annotation.
func TestRanktableTimeoutCondition(t *testing.T) {
	restartManager(t, &managerOptions{timeout: 2 * time.Second})
	t.Cleanup(func() { restartManager(t, nil) })
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	newOwner(t, ns, "late", 1, nil)
	w0 := podOf("late", "worker", 0, 0)
	annotate(t, ns, w0, deviceAnnotation(w0, "192.168.1.10", "10.0.0", 1))
	condition(t, ns, "late", "timed-out condition", is(metav1.ConditionFalse, ranktables.ReasonGroupsFailed,
		"timed out", ns+"/"+podOf("late", "worker", 0, 1), ranktable.DefaultAnnotationName))
}

// statusFailingClient fails the operator's ModelServing status writes while fail is
// set.
type statusFailingClient struct {
	client.Client
	fail *atomic.Bool
}

func (c statusFailingClient) Status() client.SubResourceWriter {
	return statusFailingWriter{c.Client.Status(), c.fail}
}

type statusFailingWriter struct {
	client.SubResourceWriter
	fail *atomic.Bool
}

func (w statusFailingWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if _, ok := obj.(*servingv1.ModelServing); ok && w.fail.Load() {
		return errors.New("injected status write failure")
	}
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

// TestRanktableStatusUpdateFailed: a failed status write is reported with a Warning
// UpdateFailed event on the owner, and the condition is written once writes work.
func TestRanktableStatusUpdateFailed(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	restartManager(t, &managerOptions{wrap: func(c client.Client) client.Client { return statusFailingClient{c, &fail} }})
	t.Cleanup(func() { restartManager(t, nil) })
	ns := newNamespace(t)
	startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	newOwner(t, ns, "flaky", 1, nil)
	ev := waitEvent(t, ns, ranktables.ReasonUpdateFailed, "flaky")
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "injected status write failure") {
		t.Errorf("event %s %q", ev.Type, ev.Note)
	}
	fail.Store(false)
	condition(t, ns, "flaky", "condition written after the failure", is(metav1.ConditionFalse, ranktables.ReasonGroupsWaiting))
}
