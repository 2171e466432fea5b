package clustertest_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
)

// TestLeaderWorkerSetComesUp: a LeaderWorkerSet of 2 groups of 4 gets its leader
// StatefulSet (2 leaders) and a worker StatefulSet per group (3 workers each) from
// the LWS controller, 8 pods from the StatefulSet controller, labeled by LWS's pod
// webhook with the set's name, group and worker indexes, and Running and Ready
// from the test kubelet; the LeaderWorkerSet reports 2 ready replicas.
func TestLeaderWorkerSetComesUp(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, ctx, "lws-up")
	const name, replicas, size = "serve", 2, 4
	if err := cluster.Client.Create(ctx, lwsObject(ns, name, replicas, size, "engine:v1", nil)); err != nil {
		t.Fatal(err)
	}
	pods := waitPodsReady(t, ctx, ns, client.MatchingLabels{clustertest.LabelName: name}, replicas*size, clustertest.LabelGroupIndex, clustertest.LabelWorkerIndex)

	t.Run("pods are named and labeled by group and worker index", func(t *testing.T) {
		groupKeys := map[string]string{}
		hashes := map[string]bool{}
		for g := range replicas {
			for w := range size {
				want := fmt.Sprintf("%s-%d", name, g)
				if w > 0 {
					want = fmt.Sprintf("%s-%d-%d", name, g, w)
				}
				var p *corev1.Pod
				for i := range pods {
					if pods[i].Name == want {
						p = &pods[i]
					}
				}
				if p == nil {
					t.Errorf("no pod %s among%s", want, describePods(pods))
					continue
				}
				if got := p.Labels[clustertest.LabelGroupIndex]; got != strconv.Itoa(g) {
					t.Errorf("pod %s: group-index %q, want %d", p.Name, got, g)
				}
				if got := p.Labels[clustertest.LabelWorkerIndex]; got != strconv.Itoa(w) {
					t.Errorf("pod %s: worker-index %q, want %d", p.Name, got, w)
				}
				key := p.Labels[clustertest.LabelGroupKey]
				if key == "" {
					t.Errorf("pod %s: no group-key label", p.Name)
				}
				if k, ok := groupKeys[strconv.Itoa(g)]; ok && k != key {
					t.Errorf("pod %s: group-key %q, another pod of group %d has %q", p.Name, key, g, k)
				}
				groupKeys[strconv.Itoa(g)] = key
				hashes[p.Labels[clustertest.LabelTemplateRevisionHash]] = true
			}
		}
		if groupKeys["0"] == groupKeys["1"] {
			t.Errorf("groups 0 and 1 share the group-key %q", groupKeys["0"])
		}
		if len(hashes) != 1 || hashes[""] {
			t.Errorf("template-revision-hash labels %v, want one non-empty value", hashes)
		}
	})

	t.Run("a leader StatefulSet and a worker StatefulSet per group", func(t *testing.T) {
		want := fmt.Sprint(map[string]int32{name: replicas, name + "-0": size - 1, name + "-1": size - 1})
		// The StatefulSet controller reports ready replicas after the pods are.
		eventually(t, ctx, 20*time.Second, "StatefulSets with every replica ready", func(ctx context.Context) (bool, string, error) {
			sets, err := listStatefulSets(ctx, ns)
			if err != nil {
				return false, "", err
			}
			got, ready := map[string]int32{}, map[string]int32{}
			for _, s := range sets {
				got[s.Name] = *s.Spec.Replicas
				ready[s.Name] = s.Status.ReadyReplicas
			}
			return fmt.Sprint(got) == want && fmt.Sprint(ready) == want,
				fmt.Sprintf("StatefulSets (name: replicas) %v, ready %v, want %s", got, ready, want), nil
		})
	})

	t.Run("the LeaderWorkerSet reports its groups ready", func(t *testing.T) {
		eventually(t, ctx, 20*time.Second, "status.readyReplicas", func(ctx context.Context) (bool, string, error) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK)
			if err := cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
				return false, "", err
			}
			ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			return ready == replicas, fmt.Sprintf("status %v", u.Object["status"]), nil
		})
	})
}

// TestDisaggregatedSetComesUp: a DisaggregatedSet of two roles (prefill: 2 groups
// of 2; decode: 1 group of 3) gets a LeaderWorkerSet per role, labeled with the
// set, the role and its revision, and their 7 pods Running and Ready.
func TestDisaggregatedSetComesUp(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := newNamespace(t, ctx, "ds-up")
	ds := dsObject(ns, "pd", "engine:v1", dsRole{"prefill", 2, 2}, dsRole{"decode", 1, 3})
	if err := cluster.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	waitPodsReady(t, ctx, ns, client.MatchingLabels{clustertest.LabelDisaggregatedSetName: "pd"}, 7, clustertest.LabelDisaggregatedSetRole, clustertest.LabelGroupIndex, clustertest.LabelWorkerIndex)
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK.GroupVersion().WithKind("LeaderWorkerSetList"))
	if err := cluster.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	roles := map[string]int64{}
	for _, u := range l.Items {
		labels := u.GetLabels()
		if labels[clustertest.LabelDisaggregatedSetName] != "pd" || labels[clustertest.LabelDisaggregatedSetRevision] == "" {
			t.Errorf("LeaderWorkerSet %s: labels %v, want the set's name and revision", u.GetName(), labels)
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		roles[labels[clustertest.LabelDisaggregatedSetRole]] += r
	}
	if want := map[string]int64{"prefill": 2, "decode": 1}; fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Errorf("LeaderWorkerSets' replicas by role %v, want %v", roles, want)
	}
	sets, err := listStatefulSets(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2+3 { // a leader set per role, a worker set per group
		t.Errorf("%d StatefulSets, want 5", len(sets))
	}
}

// dsRole is one role of a DisaggregatedSet: replicas groups of size pods.
type dsRole struct {
	name           string
	replicas, size int
}

// dsObject is a DisaggregatedSet of the roles, every pod running image.
func dsObject(ns, name, image string, roles ...dsRole) *unstructured.Unstructured {
	var rs []any
	for _, r := range roles {
		rs = append(rs, map[string]any{"name": r.name, "spec": map[string]any{
			"replicas": int64(r.replicas),
			"leaderWorkerTemplate": map[string]any{
				"size":           int64(r.size),
				"workerTemplate": podTemplate(image),
			},
		}})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"roles": rs},
	}}
	u.SetGroupVersionKind(clustertest.DisaggregatedSetGVK)
	return u
}
