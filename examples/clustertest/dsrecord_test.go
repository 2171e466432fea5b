package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
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

// dsObservation is a run of states with the same groups, with the controller's
// last decision in it.
type dsObservation struct {
	groups string
	state  dsState
}

// dsRecorder watches a DisaggregatedSet's pods and LeaderWorkerSets.
type dsRecorder struct {
	size   int
	oldRev string

	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	lws    map[string]*unstructured.Unstructured
	runs   []dsObservation
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// recordDS starts watching the DisaggregatedSet name in ns, whose revision before
// the update is oldRev.
func recordDS(t *testing.T, ctx context.Context, ns, name string, size int, oldRev string) *dsRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &dsRecorder{size: size, oldRev: oldRev, pods: map[string]*corev1.Pod{}, lws: map[string]*unstructured.Unstructured{}, cancel: cancel, done: make(chan struct{})}
	sel := client.MatchingLabels{clustertest.LabelDisaggregatedSetName: name}
	pw, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), sel)
	if err != nil {
		t.Fatal(err)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(clustertest.LeaderWorkerSetGVK.GroupVersion().WithKind("LeaderWorkerSetList"))
	lw, err := wc.Watch(ctx, l, client.InNamespace(ns), sel)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer pw.Stop()
		defer lw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pw.ResultChan():
				if !ok {
					r.fail(fmt.Errorf("pod watch closed"))
					return
				}
				if p, ok := ev.Object.(*corev1.Pod); ok {
					r.mu.Lock()
					if ev.Type == watch.Deleted {
						delete(r.pods, p.Name)
					} else {
						r.pods[p.Name] = p
					}
					r.observe()
					r.mu.Unlock()
				}
			case ev, ok := <-lw.ResultChan():
				if !ok {
					r.fail(fmt.Errorf("LeaderWorkerSet watch closed"))
					return
				}
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					r.mu.Lock()
					if ev.Type == watch.Deleted {
						delete(r.lws, u.GetName())
					} else {
						r.lws[u.GetName()] = u
					}
					r.observe()
					r.mu.Unlock()
				}
			}
		}
	}()
	return r
}

func (r *dsRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// rev maps a DisaggregatedSet revision label to 'a' (old) or 'b' (new).
func (r *dsRecorder) rev(label string) byte {
	if label == r.oldRev {
		return 'a'
	}
	return 'b'
}

func (r *dsRecorder) state() dsState {
	s := dsState{groups: map[dsGroupKey]map[int]lwsMember{}, replicas: map[string]map[byte]int{}}
	for _, u := range r.lws {
		labels := u.GetLabels()
		role := labels[clustertest.LabelDisaggregatedSetRole]
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if s.replicas[role] == nil {
			s.replicas[role] = map[byte]int{}
		}
		s.replicas[role][r.rev(labels[clustertest.LabelDisaggregatedSetRevision])] += int(n)
	}
	for _, p := range r.pods {
		g, err1 := strconv.Atoi(p.Labels[clustertest.LabelGroupIndex])
		w, err2 := strconv.Atoi(p.Labels[clustertest.LabelWorkerIndex])
		if err1 != nil || err2 != nil {
			continue
		}
		k := dsGroupKey{role: p.Labels[clustertest.LabelDisaggregatedSetRole], rev: r.rev(p.Labels[clustertest.LabelDisaggregatedSetRevision]), index: g}
		if s.groups[k] == nil {
			s.groups[k] = map[int]lwsMember{}
		}
		s.groups[k][w] = lwsMember{name: p.Name, rev: k.rev, ready: podReady(p), terminating: p.DeletionTimestamp != nil}
	}
	return s
}

func (r *dsRecorder) observe() {
	s := r.state()
	key := s.groupsKey(r.size)
	if n := len(r.runs); n > 0 && r.runs[n-1].groups == key {
		r.runs[n-1].state = s
		return
	}
	r.runs = append(r.runs, dsObservation{groups: key, state: s})
}

func (r *dsRecorder) current() dsState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state()
}

func (r *dsRecorder) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.runs); n > 0 {
		r.runs = r.runs[n-1:]
	}
}

func (r *dsRecorder) stop() ([]dsObservation, error) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs), r.err
}
