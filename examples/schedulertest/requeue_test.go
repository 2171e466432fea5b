package schedulertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// TestRetryDelays measures how long a pod the plugin rejected waits after the event
// that lets it fit: the release of a bound pod's PF (deleted, or finished), the fix
// of a bound pod's unusable annotation, and the fix of an invalid Device object. Each
// runs on its own node of one PF with 2 VFs, with a 1-VF pod waiting that only the
// plugin rejects (the node has capacity for it). Without a
// queueing hint for the event, the pod waits for the scheduler's periodic flush of
// unschedulable pods (5 minutes); the test wants each under 20 s and logs the delays.
func TestRetryDelays(t *testing.T) {
	needEnv(t)
	ctx := context.Background()
	ns := namespace(t, ctx, "retry")
	cases := []string{"deleted", "finished", "annotation-fixed", "device-fixed"}
	var nodes []rdma.Node
	for _, c := range cases {
		nodes = append(nodes, makeNode("retry-"+c, shape{roots: 1, pfs: 1, vfs: 2}))
	}
	tn := createNodes(t, ctx, nodes...)
	startScheduler(t, nil)
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			node := "retry-" + c
			holder := "holder-" + c
			switch c {
			case "annotation-fixed":
				// Bound by hand with an annotation the plugin cannot use: the node's
				// holdings are unknown.
				p := makePod(t, ns, holder, podSpec{rdma: 1})
				p.Spec.NodeName = node
				p.Annotations[rdma.AnnotationDeviceAllocated] = "garbage{"
				createPod(t, ctx, p)
			case "device-fixed":
				// The Device object names one PF twice: not usable.
				bad := tn[node].node
				bad.Devices = append(slices.Clone(bad.Devices), bad.Devices[0])
				obj, err := deviceObject(bad)
				if err != nil {
					t.Fatal(err)
				}
				cur, err := dyn.Resource(deviceGVR).Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				obj.SetResourceVersion(cur.GetResourceVersion())
				if _, err := dyn.Resource(deviceGVR).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				// The plugin reports the bad Device once its informer has it: only
				// then may the pod come (on a busy machine the pod was scheduled
				// against the good Device still cached, and bound).
				waitDeviceEvents(t, ctx, node, reasonDeviceBad, 1)
			default:
				// One VF, with its PF held exclusively: NodeResourcesFit lets a
				// second 1-VF pod in, the plugin does not.
				spec := podSpec{rdma: 1, hint: &rdma.DeviceHint{ExclusivePolicy: rdma.ExclusiveDevice}}
				createPod(t, ctx, pinned(makePod(t, ns, holder, spec), node))
				waitBound(t, ctx, ns, holder)
			}
			waiting := "waiting-" + c
			createPod(t, ctx, pinned(makePod(t, ns, waiting, podSpec{rdma: 1}), node))
			waitFor(t, ctx, time.Minute, "pod "+waiting+" rejected", func(ctx context.Context) (bool, error) {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, waiting, metav1.GetOptions{})
				if err != nil || p.Spec.NodeName != "" {
					return false, fmt.Errorf("pod %s: %v, bound to %q", waiting, err, p.Spec.NodeName)
				}
				cond := scheduledCondition(p)
				return cond != nil && cond.Status == corev1.ConditionFalse, nil
			})
			// Past the pod's backoff: it sits in the unschedulable pool until an
			// event moves it.
			time.Sleep(3 * time.Second)
			start := time.Now()
			switch c {
			case "deleted":
				deletePod(t, ctx, ns, holder)
			case "finished":
				p, err := cs.CoreV1().Pods(ns).Get(ctx, holder, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				p.Status.Phase = corev1.PodFailed
				if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			case "annotation-fixed":
				a, err := rdma.Allocate(tn[node].inv, nil, rdma.Request{Kind: rdma.VFs, Count: 1})
				if err != nil {
					t.Fatal(err)
				}
				v, err := rdma.EncodeAllocated("", a, rdma.CountModel)
				if err != nil {
					t.Fatal(err)
				}
				setAllocated(t, ctx, ns, holder, &v)
			case "device-fixed":
				obj, err := deviceObject(tn[node].node)
				if err != nil {
					t.Fatal(err)
				}
				cur, err := dyn.Resource(deviceGVR).Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				obj.SetResourceVersion(cur.GetResourceVersion())
				if _, err := dyn.Resource(deviceGVR).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, ctx, 5*time.Minute, "pod "+waiting+" bound", func(ctx context.Context) (bool, error) {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, waiting, metav1.GetOptions{})
				return err == nil && boundWithDevices(p), err
			})
			d := time.Since(start)
			t.Logf("%s: the waiting pod bound %s after the event", c, d.Round(10*time.Millisecond))
			if d > 20*time.Second {
				t.Errorf("%s: the waiting pod bound %s after the event, want well under the 5-minute flush", c, d)
			}
		})
	}
}
