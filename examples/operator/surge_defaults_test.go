package operator_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
	"github.com/kplan-dev/kplan/examples/internal/testenv"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/ranktable"
)

// tableComplete reports whether the rank table a pod mounts is complete and lists
// the pod's own server: what the engine's wait container checks before it lets
// the engine start.
func tableComplete(ctx context.Context, dp *testenv.DevicePlugin, p *corev1.Pod) bool {
	own := dp.Server(p.UID)
	if own == "" || p.Annotations[ranktable.DefaultAnnotationName] == "" {
		return false
	}
	name := mountedConfigMap(p)
	var cm corev1.ConfigMap
	if name == "" || admin.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, &cm) != nil {
		return false
	}
	var tab table
	if json.Unmarshal([]byte(cm.Data[ranktable.DefaultFilename]), &tab) != nil || tab.Status != ranktable.StatusCompleted {
		return false
	}
	for _, s := range tab.ServerList {
		if s.ServerID == own {
			return true
		}
	}
	return false
}

// TestRanktableDefaultStrategyCompletes: a ModelServing with a rank-table template
// and the default rollout strategy (Rolling, maxSurge unset) completes a rollout
// that recreates its pods, with the node played as it is: the device plugin
// annotates each bound pod, and a pod's engine starts only once its table is
// complete. Unset, maxSurge is 0 here (a surge pod would sit in a serving group
// beyond spec.replicas whose table never completes, so the rollout would stall):
// no pod is ever created beyond spec.replicas' groups, the budget holds at every
// pod event, and every table ends complete with the new pods.
func TestRanktableDefaultStrategyCompletes(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	k := startMSKubelet(t, ns, kubeletDefaults.StartDelay)
	dp, stop := testenv.StartDevicePlugin(ctx, admin, ns)
	t.Cleanup(stop)
	k.setReady(func(p *corev1.Pod) bool { return tableComplete(ctx, dp, p) })

	const groups = 2
	pw := watchPods(t, ns, "defaults")
	ms := newOwner(t, ns, "defaults", groups, nil, role{"worker", 2})
	// What the documentation promises for this spec: maxSurge 0 (unset), the
	// default maxUnavailable.
	expected := func() servingv1.ModelServingSpec {
		spec := *getMS(t, ms).Spec.DeepCopy()
		if spec.RolloutStrategy.MaxSurge != nil {
			t.Fatalf("the test wants maxSurge unset, the spec has %v", spec.RolloutStrategy.MaxSurge)
		}
		spec.RolloutStrategy.MaxSurge = intOrStr(intstr.FromInt(0))
		return spec
	}
	pw.expect(expected())
	waitRolledOut(t, ms, pw, 60*time.Second)
	condition(t, ns, "defaults", "tables ready before the rollout", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady))

	editModelServing(t, ms, setImageAndEnv("engine:v2"))
	pw.expect(expected())
	waitRolledOut(t, ms, pw, 90*time.Second)
	condition(t, ns, "defaults", "tables ready after the rollout", is(metav1.ConditionTrue, ranktables.ReasonRanktableReady))
	creates, deletes := pw.finish()
	if creates != 2*podCount(ms.Spec) || deletes != podCount(ms.Spec) {
		t.Errorf("%d creates and %d deletes, want %d and %d (each pod created once per revision, deleted once)",
			creates, deletes, 2*podCount(ms.Spec), podCount(ms.Spec))
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for name, p := range pw.pods {
		g, err := strconv.Atoi(p.Labels[servingv1.LabelGroupIndex])
		if err != nil || g >= groups {
			t.Errorf("pod %s in serving group %q: only groups 0-%d should ever exist", name, p.Labels[servingv1.LabelGroupIndex], groups-1)
		}
		if !tableComplete(ctx, dp, p) {
			t.Errorf("pod %s: its table is not complete with its server", name)
		}
	}
}

// TestModelServingRanktableSurgeAdmission: admission refuses the combinations of a
// rank-table template and a strategy that could never complete, naming the field
// and the fix, and admits the others (checked with server-side dry runs).
func TestModelServingRanktableSurgeAdmission(t *testing.T) {
	ns := newNamespace(t)
	tmpl := map[string]string{servingv1.AnnotationRanktableTemplate: ranktable.LibraryMindIERole}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		strategy    servingv1.RolloutStrategy
		refused     string // "" when admitted
	}{
		{"defaults are admitted", tmpl, servingv1.RolloutStrategy{}, ""},
		{"rolling with maxSurge 0 is admitted", tmpl, servingv1.RolloutStrategy{MaxSurge: intOrStr(intstr.FromInt(0))}, ""},
		{"rolling with maxSurge 0% is admitted", tmpl, servingv1.RolloutStrategy{MaxSurge: intOrStr(intstr.FromString("0%"))}, ""},
		{"gang surges whole groups", tmpl, servingv1.RolloutStrategy{Mode: servingv1.GangMode, MaxSurge: intOrStr(intstr.FromInt(1))}, ""},
		{"gang with maxUnavailable 0 and a surge is admitted", tmpl,
			servingv1.RolloutStrategy{Mode: servingv1.GangMode, MaxUnavailable: intOrStr(intstr.FromInt(0)), MaxSurge: intOrStr(intstr.FromInt(1))}, ""},
		{"no template may surge", nil, servingv1.RolloutStrategy{MaxSurge: intOrStr(intstr.FromInt(1))}, ""},
		{"rolling with maxSurge 1 is refused", tmpl, servingv1.RolloutStrategy{MaxSurge: intOrStr(intstr.FromInt(1))},
			"spec.rolloutStrategy.maxSurge: must be 0 in Rolling mode"},
		{"rolling with maxSurge 25% is refused", tmpl, servingv1.RolloutStrategy{MaxSurge: intOrStr(intstr.FromString("25%"))},
			"use mode Gang"},
		{"lockstep with a surge is refused", tmpl, servingv1.RolloutStrategy{Mode: servingv1.LockstepMode, MaxSurge: intOrStr(intstr.FromInt(2))},
			"must be 0 in Lockstep mode"},
		{"group mode with a surge is refused", tmpl, servingv1.RolloutStrategy{Mode: servingv1.GroupMode, MaxSurge: intOrStr(intstr.FromString("50%"))},
			"must be 0 in Group mode"},
		{"rolling with maxUnavailable 0 is refused", tmpl, servingv1.RolloutStrategy{MaxUnavailable: intOrStr(intstr.FromInt(0))},
			"spec.rolloutStrategy.maxUnavailable: must be above 0 in Rolling mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := int32(1)
			ms := &servingv1.ModelServing{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "admission", Annotations: tc.annotations},
				Spec: servingv1.ModelServingSpec{Replicas: &groups, RolloutStrategy: tc.strategy, Roles: []servingv1.Role{{
					Name: "worker", Replicas: 2, Template: corev1.PodTemplateSpec{
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "busybox:1.36"}}}}}}},
			}
			err := admin.Create(context.Background(), ms, client.DryRunAll)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("admitted, want refused with %q", tc.refused)
			case tc.refused != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("refused with %v, want Invalid containing %q", err, tc.refused)
			}
		})
	}

	// Adding a template to a ModelServing that surges is refused too.
	ms := newModelServing(t, ns, "later", servingv1.RollingMode, 1, "engine:v1")
	err := retryEdit(ms, func(ms *servingv1.ModelServing) {
		ms.Spec.RolloutStrategy.MaxSurge = intOrStr(intstr.FromInt(1))
		ms.Annotations = tmpl
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "maxSurge: must be 0") {
		t.Fatalf("adding a template beside maxSurge 1: %v, want refused", err)
	}
}

// retryEdit is editModelServing returning the error instead of failing the test.
func retryEdit(ms *servingv1.ModelServing, f func(*servingv1.ModelServing)) error {
	for {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(ms), ms); err != nil {
			return err
		}
		f(ms)
		err := admin.Update(context.Background(), ms)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}
