package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
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

// lwsObservation is a run of states with the same groups: the groups and the
// leader StatefulSet's replicas and partition when the groups next changed (the
// controller's answer to them).
type lwsObservation struct {
	groups    string
	state     lwsState // the last state of the run
	replicas  int32
	partition int32
}

// lwsRecorder watches the pods and the leader StatefulSet of a LeaderWorkerSet and
// records every change of state.
type lwsRecorder struct {
	name    string
	size    int
	oldHash string

	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	sts    *appsv1.StatefulSet
	runs   []lwsObservation
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// recordLWS starts watching the LeaderWorkerSet name in ns, whose pods run the
// template hash oldHash (any other hash is the new template). Stop returns the
// observations.
func recordLWS(t *testing.T, ctx context.Context, ns, name string, size int, oldHash string) *lwsRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &lwsRecorder{name: name, size: size, oldHash: oldHash, pods: map[string]*corev1.Pod{}, cancel: cancel, done: make(chan struct{})}
	pw, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), client.MatchingLabels{clustertest.LabelName: name})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := wc.Watch(ctx, &appsv1.StatefulSetList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer pw.Stop()
		defer sw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pw.ResultChan():
				if !ok {
					r.fail(fmt.Errorf("pod watch closed"))
					return
				}
				r.podEvent(ev)
			case ev, ok := <-sw.ResultChan():
				if !ok {
					r.fail(fmt.Errorf("StatefulSet watch closed"))
					return
				}
				if s, ok := ev.Object.(*appsv1.StatefulSet); ok && ev.Type != watch.Deleted {
					r.mu.Lock()
					r.sts = s
					r.observe()
					r.mu.Unlock()
				}
			}
		}
	}()
	return r
}

func (r *lwsRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *lwsRecorder) podEvent(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(r.pods, p.Name)
	} else {
		r.pods[p.Name] = p
	}
	r.observe()
}

// state computes the current state from the pods and the StatefulSet.
func (r *lwsRecorder) state() lwsState {
	s := lwsState{groups: map[int]map[int]lwsMember{}}
	if r.sts != nil {
		s.replicas = *r.sts.Spec.Replicas
		if ru := r.sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			s.partition = *ru.Partition
		}
	}
	for _, p := range r.pods {
		g, err1 := strconv.Atoi(p.Labels[clustertest.LabelGroupIndex])
		w, err2 := strconv.Atoi(p.Labels[clustertest.LabelWorkerIndex])
		if err1 != nil || err2 != nil {
			continue
		}
		rev := byte('b')
		if p.Labels[clustertest.LabelTemplateRevisionHash] == r.oldHash {
			rev = 'a'
		}
		if s.groups[g] == nil {
			s.groups[g] = map[int]lwsMember{}
		}
		s.groups[g][w] = lwsMember{name: p.Name, rev: rev, ready: podReady(p), terminating: p.DeletionTimestamp != nil}
	}
	return s
}

// observe records the current state: a new run when the groups changed, else the
// controller's latest answer in the current run.
func (r *lwsRecorder) observe() {
	s := r.state()
	key := s.groupsKey(r.size)
	if n := len(r.runs); n > 0 && r.runs[n-1].groups == key {
		r.runs[n-1].state, r.runs[n-1].replicas, r.runs[n-1].partition = s, s.replicas, s.partition
		return
	}
	r.runs = append(r.runs, lwsObservation{groups: key, state: s, replicas: s.replicas, partition: s.partition})
}

// current returns the latest state.
func (r *lwsRecorder) current() lwsState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state()
}

// begin drops the observations before the current state: call it once the
// watch has seen every object, before changing the LeaderWorkerSet.
func (r *lwsRecorder) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.runs); n > 0 {
		r.runs = r.runs[n-1:]
	}
}

// stop ends the watch and returns the observations.
func (r *lwsRecorder) stop() ([]lwsObservation, error) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs), r.err
}
