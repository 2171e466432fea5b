package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

// podUIDs maps the ModelServing's pods to their UIDs.
func podUIDs(t *testing.T, ms *servingv1.ModelServing) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods, client.InNamespace(ms.Namespace), client.MatchingLabels{servingv1.LabelName: ms.Name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// TestModelServingUpdatesImagesInPlace: in each mode, a rollout that changes only
// images moves every pod in place: the same pods (names and UIDs), no create or
// delete, each pod's revision label changed once; every pod event is checked by
// rollouttest.Monitor and by the stricter servingFloor (pods serving by their
// readiness gates and reported images never below n - maxUnavailable per pool).
// The test's kubelet restarts a changed container on the new image and reports
// it as a kubelet would. A change of more than images then recreates every pod.
func TestModelServingUpdatesImagesInPlace(t *testing.T) {
	for _, mode := range []servingv1.RolloutMode{servingv1.RollingMode, servingv1.GangMode, servingv1.GroupMode, servingv1.LockstepMode} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t)
			ms, pw, _ := deploy(t, ns, "inplace-"+strings.ToLower(string(mode)), mode, 3, 100*time.Millisecond)
			n := podCount(ms.Spec)
			before := podUIDs(t, ms)
			pw.checkServing(true)
			c0, d0, m0 := pw.counts()
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImage("engine:v2")(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			c1, d1, m1 := pw.counts()
			if c1 != c0 || d1 != d0 || m1-m0 != n {
				t.Errorf("image-only rollout: %d creates, %d deletes, %d pods moved in place; want 0, 0 and %d", c1-c0, d1-d0, m1-m0, n)
			}
			if diff := cmp.Diff(before, podUIDs(t, ms)); diff != "" {
				t.Errorf("pods (name: UID) changed by an image-only rollout (-before +after):\n%s", diff)
			}
			update := getMS(t, ms).Status.UpdateRevision
			var pods corev1.PodList
			if err := admin.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.Labels[servingv1.LabelRevision] != update || p.Spec.Containers[0].Image != "engine:v2" ||
					len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Image != "engine:v2" || !isReady(&p) || !gatesTrue(&p) {
					t.Errorf("pod %s after the rollout: revision %s (want %s), image %s, statuses %+v, conditions %+v",
						p.Name, p.Labels[servingv1.LabelRevision], update, p.Spec.Containers[0].Image, p.Status.ContainerStatuses, p.Status.Conditions)
				}
			}
			editModelServing(t, ms, func(m *servingv1.ModelServing) { setImageAndEnv("engine:v3")(m); pw.expect(m.Spec) })
			waitRolledOut(t, ms, pw, 90*time.Second)
			c2, d2, m2 := pw.counts()
			if c2-c1 != n || d2-d1 != n || m2 != m1 {
				t.Errorf("rollout of more than images: %d creates, %d deletes, %d moved in place; want %d, %d and 0", c2-c1, d2-d1, m2-m1, n, n)
			}
			pw.finish()
		})
	}
}
