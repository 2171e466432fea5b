package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// observation is a run of states with the same groups: the groups' key and the last
// state of the run, which carries the controller's latest answer to those groups.
type observation[S any] struct {
	groups string
	state  S
}

// recorder watches a workload's pods and the objects its controller writes about
// them (a StatefulSet, LeaderWorkerSets) and records every change of state.
type recorder[S any] struct {
	state func(pods map[string]*corev1.Pod, owned map[string]client.Object) S
	key   func(S) string

	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	owned  map[string]client.Object // by name
	runs   []observation[S]
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// record starts watching the pods in ns that podSel selects and the objects of the
// list type owned that ownedSel selects; state computes a state from what the watches
// saw, key names its groups. Stop returns the observations.
func record[S any](t *testing.T, ctx context.Context, ns string, podSel client.ListOption, owned client.ObjectList, ownedSel client.ListOption,
	state func(pods map[string]*corev1.Pod, owned map[string]client.Object) S, key func(S) string) *recorder[S] {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &recorder[S]{state: state, key: key, pods: map[string]*corev1.Pod{}, owned: map[string]client.Object{}, cancel: cancel, done: make(chan struct{})}
	pw, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), podSel)
	if err != nil {
		t.Fatal(err)
	}
	ow, err := wc.Watch(ctx, owned, client.InNamespace(ns), ownedSel)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer pw.Stop()
		defer ow.Stop()
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
					r.event(ev.Type, func() { r.pods[p.Name] = p }, func() { delete(r.pods, p.Name) })
				}
			case ev, ok := <-ow.ResultChan():
				if !ok {
					r.fail(fmt.Errorf("%T watch closed", owned))
					return
				}
				if o, ok := ev.Object.(client.Object); ok {
					r.event(ev.Type, func() { r.owned[o.GetName()] = o }, func() { delete(r.owned, o.GetName()) })
				}
			}
		}
	}()
	return r
}

// event applies one watch event (set or remove the object) and observes the state.
func (r *recorder[S]) event(typ watch.EventType, set, remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if typ == watch.Deleted {
		remove()
	} else {
		set()
	}
	r.observe()
}

func (r *recorder[S]) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// observe records the current state: a new run when the groups changed, else the
// controller's latest answer in the current run.
func (r *recorder[S]) observe() {
	s := r.state(r.pods, r.owned)
	key := r.key(s)
	if n := len(r.runs); n > 0 && r.runs[n-1].groups == key {
		r.runs[n-1].state = s
		return
	}
	r.runs = append(r.runs, observation[S]{groups: key, state: s})
}

// current returns the latest state.
func (r *recorder[S]) current() S {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state(r.pods, r.owned)
}

// begin drops the observations before the current state: call it once the
// watch has seen every object, before changing the workload.
func (r *recorder[S]) begin() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.runs); n > 0 {
		r.runs = r.runs[n-1:]
	}
}

// stop ends the watches and returns the observations.
func (r *recorder[S]) stop() ([]observation[S], error) {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs), r.err
}
