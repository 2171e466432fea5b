package clustertest_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
)

// dsGroupKey names one group of a DisaggregatedSet: its role, the revision of the
// LeaderWorkerSet it belongs to ('a' old, 'b' new) and its group index.
type dsGroupKey struct {
	role  string
	rev   byte
	index int
}

// dsState is what a watcher sees of a DisaggregatedSet: its groups' pods by worker
// index, and the replicas the controller set on each role's LeaderWorkerSet of
// each revision (its decision).
type dsState struct {
	groups   map[dsGroupKey]map[int]lwsMember
	replicas map[string]map[byte]int // role -> revision -> LeaderWorkerSet spec.replicas
	// newStable: the new revision is stable by the controller's rule (each
	// role's new LeaderWorkerSet has status.readyReplicas == spec.replicas); it
	// takes no step before.
	newStable bool
}

// groupsKey renders the groups role by role (sorted), then old before new, then
// by index, each as lwsState.groupsKey does: "decode a0:AA b0:B- | prefill ...".
func (s *dsState) groupsKey(size int) string {
	keys := slices.SortedFunc(mapsKeys(s.groups), func(x, y dsGroupKey) int {
		if c := strings.Compare(x.role, y.role); c != 0 {
			return c
		}
		if x.rev != y.rev {
			return int(x.rev) - int(y.rev)
		}
		return x.index - y.index
	})
	var roles []string
	var words []string
	role := ""
	flush := func() {
		if role != "" {
			roles = append(roles, role+" "+strings.Join(words, " "))
		}
		words = nil
	}
	for _, k := range keys {
		if k.role != role {
			flush()
			role = k.role
		}
		one := lwsState{groups: map[int]map[int]lwsMember{k.index: s.groups[k]}}
		if w := one.groupsKey(size); w != "" {
			words = append(words, string(k.rev)+w)
		}
	}
	flush()
	return strings.Join(roles, " | ")
}

// recordDS starts watching the pods and LeaderWorkerSets of the DisaggregatedSet
// name in ns, whose revision before the update is oldRev.
func recordDS(t *testing.T, ctx context.Context, ns, name string, size int, oldRev string) *recorder[dsState] {
	t.Helper()
	sel := client.MatchingLabels{clustertest.LabelDisaggregatedSetName: name}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK.GroupVersion().WithKind("LeaderWorkerSetList"))
	return record(t, ctx, ns, sel, l, sel,
		func(pods map[string]*corev1.Pod, owned map[string]client.Object) dsState {
			return dsStateOf(pods, owned, oldRev)
		},
		func(s dsState) string { return s.groupsKey(size) })
}

// dsStateOf computes a state from the pods and the LeaderWorkerSets.
func dsStateOf(pods map[string]*corev1.Pod, lws map[string]client.Object, oldRev string) dsState {
	rev := func(label string) byte { // 'a' old, 'b' new
		if label == oldRev {
			return 'a'
		}
		return 'b'
	}
	s := dsState{groups: map[dsGroupKey]map[int]lwsMember{}, replicas: map[string]map[byte]int{}}
	stable := map[string]bool{} // role -> its new LeaderWorkerSet is stable
	for _, o := range lws {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		labels := u.GetLabels()
		role := labels[clustertest.LabelDisaggregatedSetRole]
		n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			n = 1 // the API's default
		}
		if rev(labels[clustertest.LabelDisaggregatedSetRevision]) == 'b' {
			ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			stable[role] = ready == n
		}
		if s.replicas[role] == nil {
			s.replicas[role] = map[byte]int{}
		}
		s.replicas[role][rev(labels[clustertest.LabelDisaggregatedSetRevision])] += int(n)
	}
	s.newStable = len(s.replicas) > 0
	for role := range s.replicas {
		s.newStable = s.newStable && stable[role]
	}
	for _, p := range pods {
		g, err1 := strconv.Atoi(p.Labels[clustertest.LabelGroupIndex])
		w, err2 := strconv.Atoi(p.Labels[clustertest.LabelWorkerIndex])
		if err1 != nil || err2 != nil {
			continue
		}
		k := dsGroupKey{role: p.Labels[clustertest.LabelDisaggregatedSetRole], rev: rev(p.Labels[clustertest.LabelDisaggregatedSetRevision]), index: g}
		if s.groups[k] == nil {
			s.groups[k] = map[int]lwsMember{}
		}
		s.groups[k][w] = lwsMember{name: p.Name, rev: k.rev, ready: podReady(p), terminating: p.DeletionTimestamp != nil}
	}
	return s
}
