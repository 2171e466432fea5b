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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/operator"
	"github.com/kplan-dev/kplan/ranktable"
)

// condition waits until the owner's RanktableReady condition satisfies check and
// returns it.
func condition(t *testing.T, ns, name, what string, check func(appsv1.StatefulSetCondition) error) appsv1.StatefulSetCondition {
	t.Helper()
	var found appsv1.StatefulSetCondition
	eventually(t, what, func() error {
		var sts appsv1.StatefulSet
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &sts); err != nil {
			return err
		}
		for _, c := range sts.Status.Conditions {
			if c.Type == operator.ConditionRanktableReady {
				found = c
				return check(c)
			}
		}
		return fmt.Errorf("no %s condition in %+v", operator.ConditionRanktableReady, sts.Status.Conditions)
	})
	return found
}

func is(status corev1.ConditionStatus, reason string, contains ...string) func(appsv1.StatefulSetCondition) error {
	return func(c appsv1.StatefulSetCondition) error {
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
	sts := newOwner(t, ns, "life", 2, map[string]string{ranktable.LabelRole: "worker"})

	t.Run("the finalizer is added on create", func(t *testing.T) {
		eventually(t, "finalizer", func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
				return err
			}
			if !slices.Contains(sts.Finalizers, operator.RanktableFinalizer) {
				return fmt.Errorf("finalizers %v", sts.Finalizers)
			}
			return nil
		})
	})

	t.Run("waiting pods make the condition False naming pods and annotation", func(t *testing.T) {
		newPod(t, sts, "life-worker-0", nil)
		newPod(t, sts, "life-worker-1", nil)
		annotate(t, ns, "life-worker-0", deviceAnnotation("life-worker-0", "192.168.1.10", "10.0.0", 1))
		condition(t, ns, "life", "condition waiting", is(corev1.ConditionFalse, operator.ReasonGroupsWaiting,
			ns+"/life-worker-1", ranktable.DefaultAnnotationName))
	})

	t.Run("a complete table makes it True with a Ready event", func(t *testing.T) {
		annotate(t, ns, "life-worker-1", deviceAnnotation("life-worker-1", "192.168.1.11", "10.0.0", 11))
		condition(t, ns, "life", "condition ready", is(corev1.ConditionTrue, operator.ReasonRanktableReady))
		if ev := waitEvent(t, ns, operator.ReasonRanktableReady, "life"); ev.Type != corev1.EventTypeNormal {
			t.Errorf("ready event type %s", ev.Type)
		}
	})

	t.Run("a bad annotation makes it False naming the pod and field, with a NotReady event", func(t *testing.T) {
		broken := strings.Replace(deviceAnnotation("life-worker-1", "192.168.1.11", "10.0.0", 11), `"10.0.0.13"`, `"not-an-ip"`, 1)
		annotate(t, ns, "life-worker-1", broken)
		c := condition(t, ns, "life", "condition failed", is(corev1.ConditionFalse, operator.ReasonGroupsFailed, ns+"/life-worker-1", "device_ip", "not-an-ip"))
		t.Logf("condition message: %s", c.Message)
		ev := waitEvent(t, ns, operator.ReasonRanktableNotReady, "life")
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "life-worker-1") {
			t.Errorf("not-ready event %s %q, want a Warning naming the pod", ev.Type, ev.Note)
		}
	})

	t.Run("deletion deletes the ranktable ConfigMaps and removes the finalizer", func(t *testing.T) {
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "life-worker-ranktable"}, &cm); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, sts); err != nil {
			t.Fatal(err)
		}
		eventually(t, "owner gone (finalizer removed)", func() error {
			err := admin.Get(ctx, client.ObjectKeyFromObject(sts), &appsv1.StatefulSet{})
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
		waitEvent(t, ns, operator.ReasonCleanedUp, "life")
	})
}

// TestRanktableTimeoutCondition: a group whose pod never gets its annotation within
// the timeout marks the owner with a condition naming that pod and the annotation.
func TestRanktableTimeoutCondition(t *testing.T) {
	restartManager(t, &managerOptions{timeout: 2 * time.Second})
	t.Cleanup(func() { restartManager(t, nil) })
	ns := newNamespace(t)
	sts := newOwner(t, ns, "late", 2, map[string]string{ranktable.LabelRole: "worker"})
	newPod(t, sts, "late-worker-0", nil)
	newPod(t, sts, "late-worker-1", nil)
	annotate(t, ns, "late-worker-0", deviceAnnotation("late-worker-0", "192.168.1.10", "10.0.0", 1))
	condition(t, ns, "late", "timed-out condition", is(corev1.ConditionFalse, operator.ReasonGroupsFailed,
		"timed out", ns+"/late-worker-1", ranktable.DefaultAnnotationName))
}

// statusFailingClient fails the operator's status patches while fail is set.
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

func (w statusFailingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := obj.(*appsv1.StatefulSet); ok && w.fail.Load() {
		return errors.New("injected status write failure")
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// TestRanktableStatusUpdateFailed: a failed status write is reported with a Warning
// UpdateFailed event on the owner, and the condition is written once writes work.
func TestRanktableStatusUpdateFailed(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	restartManager(t, &managerOptions{wrap: func(c client.Client) client.Client { return statusFailingClient{c, &fail} }})
	t.Cleanup(func() { restartManager(t, nil) })
	ns := newNamespace(t)
	newOwner(t, ns, "flaky", 1, map[string]string{ranktable.LabelRole: "worker"})
	ev := waitEvent(t, ns, operator.ReasonUpdateFailed, "flaky")
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "injected status write failure") {
		t.Errorf("event %s %q", ev.Type, ev.Note)
	}
	fail.Store(false)
	condition(t, ns, "flaky", "condition written after the failure", is(corev1.ConditionFalse, operator.ReasonGroupsWaiting))
}
