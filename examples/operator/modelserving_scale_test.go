package operator_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// writeCounter counts the operator's writes: pod creates and deletes, and every
// other write (status, revisions, events are not counted: they go through the
// recorder).
type writeCounter struct {
	client.Client
	creates, deletes, other *atomic.Int64
}

func (c writeCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*corev1.Pod); ok {
		c.creates.Add(1)
	} else {
		c.other.Add(1)
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c writeCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*corev1.Pod); ok {
		c.deletes.Add(1)
	} else {
		c.other.Add(1)
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.other.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c writeCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.other.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c writeCounter) Status() client.SubResourceWriter {
	return statusCounter{c.Client.Status(), c.other}
}

type statusCounter struct {
	client.SubResourceWriter
	n *atomic.Int64
}

func (w statusCounter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w statusCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// reconciles reads controller-runtime's reconcile counter of one controller.
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestModelServingRolloutCost measures a rollout of KPLAN_MS_SCALE groups (4
// roles x 2 pods each) in every mode: wall time from the template change to
// the status reporting it complete, reconciles, and the operator's writes per
// pod: first a change of more than images (every pod recreated), then of images
// only (every pod updated in place). It runs
// only when KPLAN_MS_SCALE is set (for example 50), with the pod watch checking
// every event as in the other tests.
func TestModelServingRolloutCost(t *testing.T) {
	scale := os.Getenv("KPLAN_MS_SCALE")
	if scale == "" {
		t.Skip("set KPLAN_MS_SCALE=<groups> to measure")
	}
	var groups int32
	if _, err := fmt.Sscan(scale, &groups); err != nil || groups < 1 {
		t.Fatalf("KPLAN_MS_SCALE=%q: want a number of groups", scale)
	}
	var creates, deletes, other atomic.Int64
	restartManager(t, &managerOptions{wrap: func(c client.Client) client.Client {
		return writeCounter{c, &creates, &deletes, &other}
	}})
	t.Cleanup(func() { restartManager(t, nil) })
	roles := func(image string) []servingv1.Role {
		var out []servingv1.Role
		for _, name := range []string{"router", "prefill", "decode", "cache"} {
			out = append(out, servingv1.Role{Name: name, Replicas: 2, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: image}}}}})
		}
		return out
	}
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode, servingv1.LockstepMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			startMSKubelet(t, ns, 0)
			name := "cost"
			pw := watchPods(t, ns, name)
			ms := &servingv1.ModelServing{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: servingv1.ModelServingSpec{Replicas: &groups, Roles: roles("engine:v1"),
					RolloutStrategy: servingv1.RolloutStrategy{Mode: mode, MaxUnavailable: intOrStr(intstr.FromString("25%")), MaxSurge: intOrStr(intstr.FromInt(0))}}}
			pw.expect(ms.Spec)
			if err := admin.Create(context.Background(), ms); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, ms, pw, 5*time.Minute)
			measure := func(what string, change func(*servingv1.ModelServing)) (c, d, o int64) {
				c0, d0, o0, r0 := creates.Load(), deletes.Load(), other.Load(), reconciles(t, "modelserving")
				start := time.Now()
				editModelServing(t, ms, func(m *servingv1.ModelServing) { change(m); pw.expect(m.Spec) })
				waitRolledOut(t, ms, pw, 10*time.Minute)
				wall := time.Since(start)
				n := int64(podCount(ms.Spec))
				c, d, o = creates.Load()-c0, deletes.Load()-d0, other.Load()-o0
				t.Logf("%s, %s: %d groups x 4 roles x 2 pods = %d pods: rollout %.1fs, %.0f reconciles, %d pod creates + %d deletes, %d other writes; %.2f writes per pod",
					mode, what, groups, n, wall.Seconds(), reconciles(t, "modelserving")-r0, c, d, o, float64(c+d+o)/float64(n))
				return c, d, o
			}
			n := int64(podCount(ms.Spec))
			// More than images: every pod recreated (a create, a delete and the
			// new pod's readiness gate set True: 3 writes at least).
			if c, d, _ := measure("recreate", setImageAndEnv("engine:v2")); c != n || d != n {
				t.Errorf("recreate: %d creates and %d deletes for %d pods, want one each", c, d, n)
			}
			// Images only: every pod updated in place (gate False, the images,
			// gate True: 3 writes at least).
			if c, d, _ := measure("in place", setImage("engine:v3")); c != 0 || d != 0 {
				t.Errorf("in place: %d creates and %d deletes, want none", c, d)
			}
			pw.finish()
		})
	}
}
