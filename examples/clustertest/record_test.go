package clustertest_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kplan-dev/kplan/examples/clustertest"
)

// lwsMember is one pod of a group as observed: its revision ('a' the old
// template, 'b' the new one), whether it is Ready, and whether it is terminating.
type lwsMember struct {
	name        string
	rev         byte
	ready       bool
	terminating bool
}

// lwsState is what a watcher sees of a LeaderWorkerSet at one moment: its groups'
// pods by group index and worker index, and the leader StatefulSet's replicas and
// partition (what the LWS controller decided).
type lwsState struct {
	groups    map[int]map[int]lwsMember
	replicas  int32
	partition int32
}

// groupsKey renders the groups, one word per group index in order: a character
// per worker index, 'A'/'B' for a ready pod of the old/new template, 'a'/'b' not
// ready, 'x' terminating, '-' missing; groups without pods are left out. For
// example "0:AA 1:b- 2:xx".
func (s *lwsState) groupsKey(size int) string {
	var words []string
	for _, g := range slices.Sorted(mapsKeys(s.groups)) {
		ms := s.groups[g]
		if len(ms) == 0 {
			continue
		}
		w := []byte(strconv.Itoa(g) + ":")
		for i := range size {
			m, ok := ms[i]
			switch {
			case !ok:
				w = append(w, '-')
			case m.terminating:
				w = append(w, 'x')
			case m.ready:
				w = append(w, m.rev-'a'+'A')
			default:
				w = append(w, m.rev)
			}
		}
		words = append(words, string(w))
	}
	return strings.Join(words, " ")
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// recordLWS starts watching the pods and the leader StatefulSet of the
// LeaderWorkerSet name in ns, whose pods run the template hash oldHash (any other
// hash is the new template).
func recordLWS(t *testing.T, ctx context.Context, ns, name string, size int, oldHash string) *recorder[lwsState] {
	t.Helper()
	return record(t, ctx, ns, client.MatchingLabels{clustertest.LabelName: name},
		&appsv1.StatefulSetList{}, client.MatchingFields{"metadata.name": name},
		func(pods map[string]*corev1.Pod, owned map[string]client.Object) lwsState {
			sts, _ := owned[name].(*appsv1.StatefulSet)
			return lwsStateOf(pods, sts, oldHash)
		},
		func(s lwsState) string { return s.groupsKey(size) })
}

// lwsStateOf computes a state from the pods and the leader StatefulSet (nil: not
// seen yet).
func lwsStateOf(pods map[string]*corev1.Pod, sts *appsv1.StatefulSet, oldHash string) lwsState {
	s := lwsState{groups: map[int]map[int]lwsMember{}}
	if sts != nil {
		s.replicas = *sts.Spec.Replicas
		if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			s.partition = *ru.Partition
		}
	}
	for _, p := range pods {
		g, err1 := strconv.Atoi(p.Labels[clustertest.LabelGroupIndex])
		w, err2 := strconv.Atoi(p.Labels[clustertest.LabelWorkerIndex])
		if err1 != nil || err2 != nil {
			continue
		}
		rev := byte('b')
		if p.Labels[clustertest.LabelTemplateRevisionHash] == oldHash {
			rev = 'a'
		}
		if s.groups[g] == nil {
			s.groups[g] = map[int]lwsMember{}
		}
		s.groups[g][w] = lwsMember{name: p.Name, rev: rev, ready: podReady(p), terminating: p.DeletionTimestamp != nil}
	}
	return s
}
